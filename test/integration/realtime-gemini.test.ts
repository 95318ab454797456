/**
 * End to end: sessions driven with `session.run(text)` through the real Gemini Live layer
 * (`GeminiLive.layer`) against the protocol mock (127.0.0.1, live clock). Gemini fixes the
 * instructions and tools at `setup` and its history is append-only, so a handoff between agents
 * that differ opens a new connection (rule 7); seeds 000 and 001 in that form; every call
 * answered (rule 4), one floor (rule 1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { GeminiLive } from "../../layers/google/GeminiLive.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { AgentSession } from "../../src/index.ts"
import { assertEveryCallAnswered, assertOneFloor } from "../helpers.ts"
import * as GeminiLiveMock from "../mocks/gemini-live/index.ts"
import { type Content, GeminiPlan, type GeminiScriptContext, type GeminiTurnPlan } from "../mocks/gemini-live/index.ts"
import {
  assertNoErrors,
  eventsOfAgentBetween,
  GREETER_INSTRUCTIONS,
  handoffs,
  INTRODUCE,
  pair,
  run,
  saidBy,
  WEATHER_INSTRUCTIONS
} from "./fixtures.ts"

/** One model turn of the mock, as the server saw it when it started. */
interface Seen {
  readonly connection: number
  readonly agent: "greeter" | "weather" | "?"
  readonly trigger: string
  readonly tools: ReadonlyArray<string>
  readonly lastUserText: string | undefined
}

const agentOf = (instructions: string): Seen["agent"] =>
  instructions === GREETER_INSTRUCTIONS ? "greeter" : instructions === WEATHER_INSTRUCTIONS ? "weather" : "?"

/** A scripted model that answers like the agents' model would, and records what it saw. */
const model = () => {
  const seen: Array<Seen> = []
  const script = (c: GeminiScriptContext): GeminiTurnPlan => {
    seen.push({
      connection: c.connection,
      agent: agentOf(c.systemInstruction),
      trigger: c.trigger,
      tools: c.tools.map((t) => t.name),
      lastUserText: c.lastUserText
    })
    const has = (tool: string) => c.tools.some((t) => t.name === tool)
    if (c.functionResponses.length > 0) {
      const outputs = JSON.stringify(c.functionResponses.map((r) => r.response ?? {}))
      return outputs.includes("sunny in") ? GeminiPlan.say("It is sunny in Paris.") : GeminiPlan.say("Done.")
    }
    const text = (c.lastUserText ?? "").toLowerCase()
    if (text.includes(INTRODUCE)) return GeminiPlan.say("Sunny here, which city?")
    if (text.includes("weather") && has("transfer_to_weather")) {
      return GeminiPlan.sayThenCall("Transferring you.", "transfer_to_weather", {})
    }
    if (text.includes("paris") && has("lookup_weather")) return GeminiPlan.call("lookup_weather", { city: "Paris" })
    if (text.includes("thanks") && has("transfer_to_greeter")) return GeminiPlan.call("transfer_to_greeter", {})
    if (text.includes("hello")) return GeminiPlan.say("Hello!")
    return GeminiPlan.say("Sorry?")
  }
  return { seen, script }
}

const layerFor = (mock: GeminiLiveMock.GeminiLiveMock) =>
  Layer.mergeAll(GeminiLive.layer({ url: mock.url, apiKey: Redacted.make("AIza-test-integration") }), TextCapture.layer)

const setupOf = (conn: GeminiLiveMock.GeminiLiveConnection) => conn.clientMessages()[0]?.setup as Record<string, any>
const instructionsOf = (conn: GeminiLiveMock.GeminiLiveConnection): string =>
  (setupOf(conn).systemInstruction?.parts ?? []).map((p: { text?: string }) => p.text ?? "").join("")
const toolsOf = (conn: GeminiLiveMock.GeminiLiveConnection): ReadonlyArray<string> =>
  (setupOf(conn).tools ?? []).flatMap((t: any) => (t.functionDeclarations ?? []).map((d: any) => d.name))

/** The server's history as short texts. */
const historyText = (history: ReadonlyArray<Content>) =>
  history.flatMap((c) =>
    c.parts.map((p) =>
      p.text !== undefined
        ? `${c.role ?? "system"}: ${p.text}`
        : p.functionCall
        ? `call ${p.functionCall.name}`
        : p.functionResponse
        ? `output ${p.functionResponse.name}`
        : "other"
    )
  )

describe("realtime through GeminiLive (mock server)", () => {
  it.live("rule 7 / seed 000: reuse refused when the tools differ: a new connection per handoff, the old one closed, context re-seeded", () => {
    const { counts, greeter, resumedWith } = pair()
    const { script, seen } = model()
    return Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        const first = yield* run(session, "what's the weather?")
        first.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
        first.expect.containsMessage({ agent: "weather", content: "Sunny here, which city?" })
        assert.strictEqual(mock.connectionCount(), 2)
        const [c0, c1] = [yield* mock.awaitConnection(0), yield* mock.awaitConnection(1)]
        // The greeter's connection was closed by the client; it got nothing after the tool call.
        const closed = yield* c0.awaitClose({ timeoutMs: 10_000 })
        assert.strictEqual(closed.by, "client")
        const toolCall = c0.sent().find((f) => f.type === "toolCall")!
        assert.deepStrictEqual(c0.received().filter((f) => f.atMs > toolCall.atMs).map((f) => f.type), [])
        // Each connection is set up with its agent's instructions and tools.
        assert.deepStrictEqual([instructionsOf(c0), toolsOf(c0)], [GREETER_INSTRUCTIONS, ["transfer_to_weather"]])
        assert.deepStrictEqual([instructionsOf(c1), toolsOf(c1)], [WEATHER_INSTRUCTIONS, ["lookup_weather", "transfer_to_greeter"]])
        // The new one was seeded with the conversation so far before the weather agent spoke.
        assert.includeMembers(historyText(c1.history()), [
          "user: what's the weather?",
          "model: Transferring you.",
          "call transfer_to_weather",
          "output transfer_to_weather"
        ])
        assert.strictEqual((c1.clientMessages()[1]!.clientContent as any).turnComplete, false)

        const back = yield* run(session, "thanks")
        back.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
        const hello = yield* run(session, "hello again")
        hello.expect.containsMessage({ agent: "greeter", content: "Hello!" })
        assert.strictEqual(mock.connectionCount(), 3)
        const c2 = yield* mock.awaitConnection(2)
        assert.strictEqual((yield* c1.awaitClose({ timeoutMs: 10_000 })).by, "client")
        assert.isTrue(c2.isOpen())
        assert.deepStrictEqual([instructionsOf(c2), toolsOf(c2)], [GREETER_INSTRUCTIONS, ["transfer_to_weather"]])
        // (The weather agent's words are missing here: see the item-id test below.)
        assert.includeMembers(historyText(c2.history()), [
          "user: what's the weather?",
          "model: Transferring you.",
          "user: thanks",
          "call transfer_to_greeter",
          "output transfer_to_greeter",
          "user: hello again"
        ])
        assert.deepStrictEqual(session.realtime(), { open: 1, opened: 3 })
        assert.deepStrictEqual(seen.map((s) => [s.connection, s.agent]), [
          [0, "greeter"],
          [1, "weather"],
          [1, "weather"],
          [2, "greeter"]
        ])

        const events = yield* session.eventLog
        const moves = handoffs(events)
        assert.deepStrictEqual(eventsOfAgentBetween(events, "greeter", moves[1]!.seq, moves[2]!.seq), [])
        assert.deepStrictEqual(counts, { greeterEnter: 1, greeterResume: 1, greeterExit: 1, weatherEnter: 1, weatherExit: 1, lookups: 0 })
        assert.includeMembers(
          resumedWith[0]!.items.flatMap((i) => (i._tag === "Message" ? [i.text] : [])),
          ["what's the weather?", "Transferring you.", "thanks"]
        )
        assert.deepStrictEqual(saidBy(yield* session.history, "greeter"), ["Transferring you.", "Hello!"])
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(events)
        assertNoErrors(events)
        assert.deepStrictEqual(mock.internalErrors(), [])
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })

  it.live("rule 7: identical instructions and tools: Gemini allows the move, ONE connection, the history only appended", () => {
    const { counts, greeter } = pair({ sameConfig: true })
    const { script } = model()
    return Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        const first = yield* run(session, "what's the weather?")
        first.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
        first.expect.containsMessage({ agent: "weather", content: "Sunny here, which city?" })
        const back = yield* run(session, "thanks")
        back.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
        const hello = yield* run(session, "hello again")
        hello.expect.containsMessage({ agent: "greeter", content: "Hello!" })
        // Nothing immutable differs and the server's history is a prefix of each new holder's
        // context: the connection moves (no setup again), the missing items are appended.
        assert.strictEqual(mock.connectionCount(), 1)
        assert.deepStrictEqual(session.realtime(), { open: 1, opened: 1 })
        const c0 = yield* mock.awaitConnection(0)
        assert.deepStrictEqual(c0.receivedTypes().filter((t) => t === "setup"), ["setup"])
        assert.includeMembers(historyText(c0.history()), [
          "call transfer_to_weather",
          "output transfer_to_weather",
          "call transfer_to_greeter",
          "output transfer_to_greeter",
          "user: hello again",
          "model: Hello!"
        ])
        assert.deepStrictEqual(counts, { greeterEnter: 1, greeterResume: 1, greeterExit: 1, weatherEnter: 1, weatherExit: 1, lookups: 0 })
        const events = yield* session.eventLog
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(events)
        assertNoErrors(events)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })

  // Currently fails: the output goes out as a `clientContent` turn (the context sync), never as a
  // `toolResponse`; the server takes it as an interruption, cancels the pending call and never
  // goes on, and the run never settles (see the report).
  it.live("rule 4 / seed 001: a tool output reaches Gemini as a toolResponse and the model goes on by itself", () => {
    const { counts, greeter } = pair()
    const { script, seen } = model()
    return Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        yield* run(session, "what's the weather?")
        const paris = yield* run(session, "in paris please", 10)
        paris.expect.containsFunctionCall({ name: "lookup_weather" })
        paris.expect.containsMessage({ agent: "weather", content: "It is sunny in Paris." })
        assert.strictEqual(counts.lookups, 1)
        const c1 = yield* mock.awaitConnection(1)
        assert.include(c1.receivedTypes(), "toolResponse")
        assert.deepStrictEqual(c1.unmatchedToolResponses(), [])
        assert.deepStrictEqual(seen.at(-1), { connection: 1, agent: "weather", trigger: "toolResponse", tools: ["lookup_weather", "transfer_to_greeter"], lastUserText: "in paris please" })
        const events = yield* session.eventLog
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(events)
        assertNoErrors(events)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })

  // Currently fails: GeminiLiveHandlers numbers turns per connection (`gemini_item_1`, ...), so
  // items of different connections share ids and `ChatContext.merge` drops them (see the report).
  it.live("rule 6 / rule 7: item ids stay unique across connections: the resumed greeter's context (policy full) keeps the weather agent's words", () => {
    const { greeter, resumedWith } = pair()
    const { script } = model()
    return Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        yield* run(session, "what's the weather?")
        yield* run(session, "thanks")
        yield* run(session, "hello again")
        const history = yield* session.history
        // Each connection numbers its model turns from 1: the greeter's "Transferring you." on the
        // first connection and the weather agent's introduction on the second got the same id.
        const messages = history.items.flatMap((i) => (i._tag === "Message" ? [`${i.id} ${i.agent}: ${i.text}`] : []))
        const ids = history.items.filter((i) => i._tag !== "AgentHandoff").map((i) => i.id)
        assert.deepStrictEqual(ids.filter((id, k) => ids.indexOf(id) !== k), [], `duplicate item ids in the history: ${messages.join(" | ")}`)
        assert.include(resumedWith[0]!.items.flatMap((i) => (i._tag === "Message" ? [i.text] : [])), "Sunny here, which city?")
        const c2 = yield* mock.awaitConnection(2)
        assert.include(historyText(c2.history()), "model: Sunny here, which city?")
        assertEveryCallAnswered(history)
        assertOneFloor(yield* session.eventLog)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })
})
