/**
 * End to end: sessions driven with `session.run(text)` through the real OpenAI Realtime layer
 * (`OpenAiRealtime.layer`) against the protocol mock (127.0.0.1, live clock). Seeds 000 and 001
 * in their realtime form, pipelining (rule 7), late answers (rule 8), every call answered
 * (rule 4), one floor (rule 1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { OpenAiRealtime, type Options } from "../../layers/openai/OpenAiRealtime.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { AgentSession } from "../../src/index.ts"
import { assertEveryCallAnswered, assertOneFloor } from "../helpers.ts"
import * as OpenAIRealtimeMock from "../mocks/openai-realtime/index.ts"
import { Plan, type ResponsePlan, type ScriptContext } from "../mocks/openai-realtime/index.ts"
import type { RecordedFrame } from "../mocks/shared/rules.ts"
import { captureLogs } from "../layers/google/RealtimeRecorder.ts"
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

/** One response the mock model produced, as the server saw it when it started. */
interface Seen {
  readonly connection: number
  /** Whose session configuration was in effect (by its instructions). */
  readonly agent: "greeter" | "weather" | "?"
  readonly instructions: string
  readonly tools: ReadonlyArray<string>
  readonly lastUserText: string | undefined
  readonly lastItem: string | undefined
  /** The conversation's texts (messages, calls, outputs) when the response started. */
  readonly conversation: ReadonlyArray<string>
}

const agentOf = (instructions: string): Seen["agent"] =>
  instructions.startsWith(GREETER_INSTRUCTIONS) ? "greeter" : instructions.startsWith(WEATHER_INSTRUCTIONS) ? "weather" : "?"

const itemText = (item: ScriptContext["items"][number]): string =>
  item.type === "function_call"
    ? `call ${item.name}`
    : item.type === "function_call_output"
    ? `output ${item.output ?? ""}`
    : `${item.role}: ${(item.content ?? []).map((p) => String(p.text ?? p.transcript ?? "")).join("")}`

/** A scripted model that answers like the agents' model would, and records what it saw. */
const model = (options: { readonly introDeltaMs?: number } = {}) => {
  const seen: Array<Seen> = []
  const script = (c: ScriptContext): ResponsePlan => {
    seen.push({
      connection: c.connection,
      agent: agentOf(c.session.instructions),
      instructions: c.instructions,
      tools: c.tools.map((t) => t.name ?? ""),
      lastUserText: c.lastUserText,
      lastItem: c.lastItem === undefined ? undefined : itemText(c.lastItem),
      conversation: c.conversation.map(itemText)
    })
    const has = (tool: string) => c.tools.some((t) => t.name === tool)
    if (c.instructions.includes(INTRODUCE)) {
      // Under another agent's session configuration, the model would not be the weather agent.
      const words = agentOf(c.session.instructions) === "weather" ? "Sunny here, which city?" : "MISCONFIGURED introduction"
      return Plan.say(words, options.introDeltaMs === undefined ? {} : { deltaIntervalMs: options.introDeltaMs })
    }
    const last = c.lastItem
    if (last?.type === "function_call_output") {
      const output = last.output ?? ""
      if (output.includes("sunny in")) return Plan.say("It is sunny in Paris.")
      if (output.includes("Transferred to weather")) return Plan.say("Weather desk again, which city?")
      return Plan.say("Done.")
    }
    const text = (c.lastUserText ?? "").toLowerCase()
    if (text.includes("weather") && has("transfer_to_weather")) {
      return Plan.sayThenCall("Transferring you.", "transfer_to_weather", {})
    }
    if (text.includes("paris") && has("lookup_weather")) return Plan.call("lookup_weather", { city: "Paris" })
    if (text.includes("thanks") && has("transfer_to_greeter")) return Plan.call("transfer_to_greeter", {})
    if (text.includes("hello")) return Plan.say("Hello!")
    return Plan.say("Sorry?")
  }
  return { seen, script }
}

const layerFor = (mock: OpenAIRealtimeMock.OpenAIRealtimeMock, options: Options = {}) =>
  Layer.mergeAll(
    OpenAiRealtime.layer({ url: mock.url, apiKey: Redacted.make("sk-test-integration"), turnDetection: null, ...options }),
    TextCapture.layer
  )

/** Matches the `conversation.item.create` of a function call output whose text starts with `prefix`. */
const isOutputOf = (prefix: string) => (e: OpenAIRealtimeMock.ClientEvent) =>
  e.type === "conversation.item.create" && (e.item as any)?.type === "function_call_output" &&
  String((e.item as any)?.output ?? "").startsWith(prefix)

const isType = (type: string) => (f: RecordedFrame) => f.type === type
const jsonOf = (f: RecordedFrame) => f.json as Record<string, any>

/**
 * The server answers each `session.update` this late, in order (a slow server): long enough that a
 * `response.create` that waited for the answer is told from one delayed by a loaded machine.
 */
const UPDATE_ACK_MS = 400
const slowUpdateAcks = { kind: "delayAck", match: "session.update", delayMs: UPDATE_ACK_MS, ordered: true } as const

/**
 * Rule 7 on one connection: every `session.update` after the handshake (a move to another agent)
 * is followed by the `response.create` of the new holder, written without waiting for the
 * acknowledgement: it reaches the server less than `ackMs` (the answer's delay) after the update,
 * and before the server has answered the update. Returns the moves.
 */
const assertPipelined = (server: OpenAIRealtimeMock.OpenAIRealtimeConnection, ackMs: number) => {
  const received = server.received()
  const sent = server.sent()
  const moves = received.filter(isType("session.update")).slice(1)
  for (const move of moves) {
    const create = received.find((f) => f.seq > move.seq && f.type === "response.create")
    assert.isDefined(create, `no response.create after the session.update at ${move.atMs} ms`)
    const between = received.filter((f) => f.seq > move.seq && f.seq < create!.seq).map((f) => f.type)
    assert.isTrue(between.every((t) => t === "conversation.item.create" || t === "conversation.item.delete"), `between: ${between}`)
    assert.isBelow(create!.atMs - move.atMs, ackMs, "response.create waited for the session.update's answer")
    const updated = sent.find((f) => f.type === "session.updated" && f.atMs >= move.atMs)
    assert.isDefined(updated)
    assert.isAtLeast(updated!.atMs, create!.atMs, "the session.updated came before the response.create was sent")
  }
  return moves
}

describe("realtime through OpenAiRealtime (mock server)", () => {
  it.live("seed 000 / rule 2 / rule 6: the outgoing agent sends and hears nothing after the handoff; transfer back resumes it", () => {
    const { counts, greeter, resumedWith } = pair()
    const { script, seen } = model()
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ script })
      yield* Effect.gen(function*() {
        const text = yield* TextCapture.TextCapture
        const session = yield* AgentSession.start({ agent: greeter })
        const first = yield* run(session, "what's the weather?")
        first.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
        first.expect.containsMessage({ agent: "weather", content: "Sunny here, which city?" })
        const server = yield* mock.awaitConnection(0)

        // The greeter's last response is the one with the transfer call; after its response.done
        // the first client frame is the weather agent's session.update: nothing from the greeter.
        const greeterDone = server.sent().filter(isType("response.done"))[0]!
        const after = server.received().filter((f) => f.atMs >= greeterDone.atMs)
        assert.deepStrictEqual(after.map((f) => f.type).slice(0, 1), ["session.update"])
        assert.strictEqual(jsonOf(after[0]!).session.instructions, WEATHER_INSTRUCTIONS)
        assert.include(after.map((f) => f.type), "response.create")

        // A late event for the greeter's response, after the move: nobody hears it.
        const greeterResponse = jsonOf(greeterDone).response.id as string
        const before = (yield* session.eventLog).length
        yield* server.send({
          type: "response.output_audio_transcript.delta",
          response_id: greeterResponse,
          item_id: "item_stale",
          output_index: 0,
          content_index: 0,
          delta: "STALE"
        })
        yield* server.awaitSent((f) => f.type === "response.output_audio_transcript.delta" && jsonOf(f).delta === "STALE")

        yield* run(session, "in paris please")
        const back = yield* run(session, "thanks")
        back.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
        const hello = yield* run(session, "hello again")
        hello.expect.containsMessage({ agent: "greeter", content: "Hello!" })

        const events = yield* session.eventLog
        const moves = handoffs(events)
        assert.deepStrictEqual(moves.map((m) => `${m.from ?? ""}>${m.to}${m.resumed ? " (resumed)" : ""}`), [
          ">greeter",
          "greeter>weather",
          "weather>greeter (resumed)"
        ])
        // Silent while paused: no item, speech, state or error of the greeter between the handoffs.
        assert.deepStrictEqual(eventsOfAgentBetween(events, "greeter", moves[1]!.seq, moves[2]!.seq), [])
        assert.isFalse(events.slice(before).some((e) => JSON.stringify(e).includes("STALE")))
        assert.notInclude(text.textOf("greeter") + text.textOf("weather"), "STALE")
        // Responses were asked for by the holder only, each under its own configuration.
        assert.deepStrictEqual(seen.map((s) => s.agent), ["greeter", "weather", "weather", "weather", "weather", "greeter"])
        assert.deepStrictEqual(saidBy(yield* session.history, "greeter"), ["Transferring you.", "Hello!"])
        // Return resumes: onEnter once each, the greeter resumed once with its own context kept.
        assert.deepStrictEqual(counts, { greeterEnter: 1, greeterResume: 1, greeterExit: 1, weatherEnter: 1, weatherExit: 1, lookups: 1 })
        const kept = resumedWith[0]!.items.flatMap((i) => (i._tag === "Message" ? [i.text] : i._tag === "FunctionCall" ? [`call ${i.name}`] : []))
        assert.includeMembers(kept, ["what's the weather?", "Transferring you.", "call transfer_to_weather", "It is sunny in Paris."])
        // ... and the server, on the same connection, holds the greeter's earlier turn when it answers.
        assert.includeMembers([...seen.at(-1)!.conversation], ["user: what's the weather?", "assistant: Transferring you."])
        assert.strictEqual(mock.connectionCount(), 1)
        assert.deepStrictEqual(session.realtime(), { open: 1, opened: 1 })
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(events)
        assertNoErrors(events)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })

  it.live("seed 001 / rule 7: greeter and weather back and forth ten times on ONE connection, updates pipelined", () => {
    const { counts, greeter } = pair()
    const { script, seen } = model()
    const roundTripMs = 50
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ script, roundTripMs, faults: [slowUpdateAcks] })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        for (let i = 0; i < 10; i++) {
          const there = yield* run(session, "weather please")
          there.expect.containsAgentHandoff({ from: "greeter", to: "weather", resumed: i > 0 })
          there.expect.containsMessage({ agent: "weather", content: i === 0 ? "Sunny here, which city?" : "Weather desk again, which city?" })
          const back = yield* run(session, "thanks")
          back.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
        }
        // The connection moves when the new holder first talks: the greeter talks once more.
        const last = yield* run(session, "hello")
        last.expect.containsMessage({ agent: "greeter", content: "Hello!" })
        assert.strictEqual(mock.connectionCount(), 1)
        assert.deepStrictEqual(session.realtime(), { open: 1, opened: 1 })
        const server = (yield* mock.awaitConnection(0))
        assert.isTrue(server.isOpen())
        const moves = assertPipelined(server, UPDATE_ACK_MS)
        assert.strictEqual(moves.length, 20)
        assert.deepStrictEqual(
          moves.map((m) => agentOf(jsonOf(m).session.instructions)),
          Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? "weather" : "greeter"))
        )
        // Every response ran under the configuration of the agent that asked for it.
        assert.deepStrictEqual(
          seen.map((s) => s.agent),
          // the greeter's transfer, then per round: the weather agent's greeting and its transfer
          // back, and the greeter's next transfer (the last one: its "Hello!")
          ["greeter", ...Array.from({ length: 10 }, () => ["weather", "weather", "greeter"]).flat()]
        )
        assert.deepStrictEqual(counts, { greeterEnter: 1, greeterResume: 10, greeterExit: 10, weatherEnter: 1, weatherExit: 10, lookups: 0 })
        const events = yield* session.eventLog
        assert.strictEqual(handoffs(events).length, 21)
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(events)
        assertNoErrors(events)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  }, 60_000) // 21 turns with 20 slow update answers: 8 s of waiting alone

  it.live("seed 001 / rule 8: the handoff happens before the tool output is acknowledged; the late ack is harmless", () => {
    const { greeter } = pair()
    const { script } = model()
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script,
        faults: [{ kind: "delayAck", match: isOutputOf("Transferred to weather"), delayMs: 1500, times: 1 }]
      })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        const first = yield* run(session, "what's the weather?")
        first.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
        first.expect.containsMessage({ agent: "weather", content: "Sunny here, which city?" })
        const server = yield* mock.awaitConnection(0)
        // The weather agent spoke before the server acknowledged the transfer's output.
        const outputCreate = server.received().find((f) => f.type === "conversation.item.create" && jsonOf(f).item.type === "function_call_output")!
        const weatherSpoke = server.sent().find((f) => f.type === "response.output_audio_transcript.delta" && f.atMs > outputCreate.atMs)
        assert.isDefined(weatherSpoke)
        const added = yield* server.awaitSent(
          (f) => f.type === "conversation.item.added" && jsonOf(f).item.id === jsonOf(outputCreate).item.id,
          { timeoutMs: 10_000 }
        )
        assert.isAbove(added.atMs, weatherSpoke!.atMs)
        assert.isAtLeast(added.atMs - outputCreate.atMs, 1400)
        // The conversation goes on on the same connection.
        const next = yield* run(session, "in paris please")
        next.expect.containsMessage({ agent: "weather", content: "It is sunny in Paris." })
        const back = yield* run(session, "thanks")
        back.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
        ;(yield* run(session, "hello")).expect.containsMessage({ agent: "greeter", content: "Hello!" })
        assert.strictEqual(mock.connectionCount(), 1)
        assert.deepStrictEqual(session.realtime(), { open: 1, opened: 1 })
        assert.deepStrictEqual(mock.internalErrors(), [])
        const events = yield* session.eventLog
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(events)
        assertNoErrors(events)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })

  it.live("seed 001 / rule 8: an ack after the provider's timeout: no crash, the conversation goes on, events fine", () => {
    const { greeter } = pair()
    const { script } = model()
    const lines: Array<string> = []
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script,
        faults: [{ kind: "delayAck", match: isOutputOf("Transferred to weather"), delayMs: 1500, times: 1 }]
      })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        const first = yield* run(session, "what's the weather?")
        first.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
        first.expect.containsMessage({ agent: "weather", content: "Sunny here, which city?" })
        const server = yield* mock.awaitConnection(0)
        // Past the acknowledgement timeout (600 ms): the late answer comes (1.5 s), or the
        // connection was given up before it could (see the next test).
        yield* Effect.raceFirst(
          server.awaitSent((f) => f.type === "conversation.item.added" && jsonOf(f).item.type === "function_call_output", { timeoutMs: 10_000 }),
          server.awaitClose({ timeoutMs: 10_000 })
        )
        yield* Effect.sleep("50 millis")
        const next = yield* run(session, "in paris please")
        next.expect.containsMessage({ agent: "weather", content: "It is sunny in Paris." })
        const back = yield* run(session, "thanks")
        back.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
        ;(yield* run(session, "hello")).expect.containsMessage({ agent: "greeter", content: "Hello!" })
        assert.isTrue(lines.some((l) => l.includes("timed out")), "the acknowledgement did not time out")
        assert.isFalse(lines.some((l) => l.startsWith("Error") || l.startsWith("Fatal")), lines.join("\n"))
        assert.deepStrictEqual(mock.internalErrors(), [])
        const events = yield* session.eventLog
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(events)
        assertNoErrors(events)
      }).pipe(Effect.provide(layerFor(mock, { ackTimeout: "600 millis" })))
    }).pipe(captureLogs(lines))
  })

  // Currently fails: the realtime pool's ack watcher treats a timeout like an error answer, revokes the
  // lease ("fallback") and closes the connection mid-reply (see the report).
  it.live("rule 8: an ack that times out while the new agent speaks is not an error answer: the reply goes on, same connection, late ack dropped", () => {
    const { greeter } = pair()
    // The weather agent's introduction streams for about a second and a half.
    const { script } = model({ introDeltaMs: 60 })
    const lines: Array<string> = []
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script,
        faults: [{ kind: "delayAck", match: isOutputOf("Transferred to weather"), delayMs: 900, times: 1 }]
      })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        yield* run(session, "what's the weather?")
        const server = yield* mock.awaitConnection(0)
        // The timeout (250 ms) passed while the introduction was playing.
        assert.isTrue(lines.some((l) => l.includes("timed out")), "the acknowledgement did not time out")
        const events = yield* session.eventLog
        assertNoErrors(events)
        const intro = (yield* session.history).items.find((i) => i._tag === "Message" && i.agent === "weather")
        assert.deepInclude(intro, { text: "Sunny here, which city?", interrupted: false })
        // The connection is kept: the late answer arrives on it and is dropped with a debug log.
        yield* server.awaitSent((f) => f.type === "conversation.item.added" && jsonOf(f).item.type === "function_call_output", { timeoutMs: 10_000 })
        yield* Effect.sleep("50 millis")
        assert.isTrue(lines.some((l) => l.includes("late acknowledgement dropped")))
        const next = yield* run(session, "in paris please")
        next.expect.containsMessage({ agent: "weather", content: "It is sunny in Paris." })
        assert.strictEqual(mock.connectionCount(), 1)
        assert.deepStrictEqual(session.realtime(), { open: 1, opened: 1 })
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(yield* session.eventLog)
      }).pipe(Effect.provide(layerFor(mock, { ackTimeout: "250 millis" })))
    }).pipe(captureLogs(lines))
  })

  it.live("rule 7: on a reused connection the updates and response.create are pipelined (no wait for acks), applied in order", () => {
    const { greeter } = pair()
    const { script, seen } = model()
    const roundTripMs = 50
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ script, roundTripMs, faults: [slowUpdateAcks] })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        const first = yield* run(session, "what's the weather?")
        first.expect.containsMessage({ agent: "weather", content: "Sunny here, which city?" })
        const server = yield* mock.awaitConnection(0)
        const [move] = assertPipelined(server, UPDATE_ACK_MS)
        assert.isDefined(move)
        const frames = server.received().filter((f) => f.seq >= move!.seq).slice(0, 3)
        assert.deepStrictEqual(frames.map((f) => f.type), ["session.update", "conversation.item.create", "response.create"])
        const [update, output, create] = frames.map(jsonOf)
        assert.strictEqual(update!.session.instructions, WEATHER_INSTRUCTIONS)
        assert.deepStrictEqual(update!.session.tools.map((t: { name: string }) => t.name), ["lookup_weather", "transfer_to_greeter"])
        assert.deepInclude(output!.item, { type: "function_call_output", output: "Transferred to weather." })
        assert.include(create!.response.instructions, INTRODUCE)
        // Written back to back: a few ms apart, where an awaited ack would cost a round trip.
        assert.isBelow(frames[2]!.atMs - frames[0]!.atMs, UPDATE_ACK_MS)
        // The server applied them in order: the response saw the new agent's configuration and output.
        assert.deepInclude(seen[1]!, { agent: "weather", lastItem: "output Transferred to weather." })
        assert.deepStrictEqual(seen[1]!.tools, ["lookup_weather", "transfer_to_greeter"])
        const events = yield* session.eventLog
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(events)
        assertNoErrors(events)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })

  it.live("seed 001 / rule 7: an error answer to the update after the handoff falls back to a fresh connection, re-seeded", () => {
    const { greeter } = pair()
    const { script, seen } = model()
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script,
        faults: [{
          kind: "reject",
          match: (e) => e.type === "session.update" && (e.session as any)?.instructions === WEATHER_INSTRUCTIONS,
          times: 1,
          with: { code: "invalid_value", message: "Invalid value: 'session.instructions'." }
        }]
      })
      yield* Effect.gen(function*() {
        const text = yield* TextCapture.TextCapture
        const session = yield* AgentSession.start({ agent: greeter })
        const first = yield* run(session, "what's the weather?")
        first.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
        first.expect.containsMessage({ agent: "weather", content: "Sunny here, which city?" })
        assert.strictEqual(mock.connectionCount(), 2)
        const old = yield* mock.awaitConnection(0)
        yield* old.awaitClose({ timeoutMs: 10_000 })
        const fresh = yield* mock.awaitConnection(1)
        // The fresh connection is configured for the weather agent and seeded with the conversation.
        assert.strictEqual(jsonOf(fresh.received()[0]!).session.instructions, WEATHER_INSTRUCTIONS)
        const seeded = fresh.items().map((i) => (i.type === "message" ? `${i.role}: ${(i.content ?? []).map((p) => String(p.text ?? "")).join("")}` : i.type))
        assert.includeMembers(seeded, ["user: what's the weather?", "assistant: Transferring you.", "function_call", "function_call_output"])
        // The failed update's response.create reached the old connection; the weather agent's
        // answer came from the fresh one, under its own configuration.
        assert.deepInclude(seen.at(-1)!, { connection: 1, agent: "weather" })
        assert.deepStrictEqual(fresh.receivedTypes().filter((t) => t === "response.create"), ["response.create"])
        // What the old connection started under the greeter's configuration reached nobody.
        assert.notInclude(text.textOf("weather") + text.textOf("greeter"), "MISCONFIGURED")
        assert.deepStrictEqual(saidBy(yield* session.history, "weather"), ["Sunny here, which city?"])
        const next = yield* run(session, "in paris please")
        next.expect.containsMessage({ agent: "weather", content: "It is sunny in Paris." })
        assert.deepStrictEqual(session.realtime(), { open: 1, opened: 2 })
        const events = yield* session.eventLog
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(events)
        assertNoErrors(events)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })

  it.live("rule 7: a fresh connection's configuration is pipelined: the first response.create does not wait for session.updated", () => {
    const { greeter } = pair()
    const { script, seen } = model()
    const roundTripMs = 50
    return Effect.gen(function*() {
      // The reused connection's update is refused: the weather agent falls back to a fresh one.
      const mock = yield* OpenAIRealtimeMock.make({
        script,
        roundTripMs,
        faults: [{
          kind: "reject",
          match: (e) => e.type === "session.update" && (e.session as any)?.instructions === WEATHER_INSTRUCTIONS,
          times: 1,
          with: { code: "invalid_value", message: "Invalid value: 'session.instructions'." }
        }, slowUpdateAcks]
      })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        const first = yield* run(session, "what's the weather?")
        first.expect.containsMessage({ agent: "weather", content: "Sunny here, which city?" })
        const fresh = yield* mock.awaitConnection(1)
        const received = fresh.received()
        const configuration = received.find(isType("session.update"))!
        const create = received.find(isType("response.create"))!
        const updated = fresh.sent().find(isType("session.updated"))!
        assert.isBelow(create.atMs - configuration.atMs, UPDATE_ACK_MS, "response.create waited for the configuration's answer")
        assert.isAtLeast(updated.atMs, create.atMs, "the session.updated came before the response.create was sent")
        assert.deepInclude(seen.at(-1)!, { connection: 1, agent: "weather" })
        assertNoErrors(yield* session.eventLog)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })

  it.live("rule 7: a fresh connection whose pipelined configuration is refused breaks like a refused update: said as an error, nothing misconfigured reaches the user", () => {
    const { greeter } = pair()
    const { script, seen } = model()
    return Effect.gen(function*() {
      // Refused twice: the update on the reused connection, then the fresh connection's own
      // configuration (the reply has had its one retry: it fails, with an error event).
      const mock = yield* OpenAIRealtimeMock.make({
        script,
        roundTripMs: 20,
        faults: [{
          kind: "reject",
          match: (e) => e.type === "session.update" && (e.session as any)?.instructions === WEATHER_INSTRUCTIONS,
          times: 2,
          with: { code: "invalid_value", message: "Invalid value: 'session.instructions'." }
        }]
      })
      yield* Effect.gen(function*() {
        const text = yield* TextCapture.TextCapture
        const session = yield* AgentSession.start({ agent: greeter })
        const first = yield* run(session, "what's the weather?")
        first.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
        const errors = (yield* session.eventLog).filter((e) => e.type === "error")
        assert.deepStrictEqual(errors.map((e) => e.type === "error" && e.agent), ["weather"])
        assert.include(errors[0]!.type === "error" ? errors[0]!.message : "", "fallback")
        // What the misconfigured connections started reached nobody.
        assert.notInclude(text.textOf("weather") + text.textOf("greeter"), "MISCONFIGURED")
        assert.deepStrictEqual(saidBy(yield* session.history, "weather"), [])
        // The next turn opens a third connection, configured as asked, and is answered.
        const next = yield* run(session, "in paris please")
        next.expect.containsMessage({ agent: "weather", content: "It is sunny in Paris." })
        assert.strictEqual(mock.connectionCount(), 3)
        assert.deepInclude(seen.at(-1)!, { connection: 2, agent: "weather" })
        assertEveryCallAnswered(yield* session.history)
        assertOneFloor(yield* session.eventLog)
      }).pipe(Effect.provide(layerFor(mock)))
    })
  })
})
