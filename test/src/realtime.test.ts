/**
 * The realtime path (rules 2, 4, 6, 7, 8; seeds 000 and 001) on an in-memory realtime model.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, type Duration, Effect, Layer, Schema } from "effect"
import * as RealtimeReply from "../../src/internal/realtime/Reply.ts"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"
import { Agent, AgentSession, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered, assertOneFloor, eventsOfAgentAfter, handoffSeq } from "../helpers.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"

const pair = () => {
  const counts = { greeterEnter: 0, weatherEnter: 0, greeterResume: 0 }
  const greeter: Agent.Agent = Agent.make({
    name: "greeter",
    instructions: "You are Kelly, the greeter.",
    tools: [Tool.handoff("transfer_to_weather", () => weather)],
    onEnter: Effect.sync(() => void counts.greeterEnter++),
    onResume: Effect.sync(() => void counts.greeterResume++)
  })
  const weather: Agent.Agent = Agent.make({
    name: "weather",
    instructions: "You are Sunny, the weather specialist.",
    tools: [
      Tool.make("lookup_weather", {
        description: "weather for a city",
        parameters: Schema.Struct({ city: Schema.String }),
        handler: ({ city }) => Effect.succeed(`sunny in ${city}`)
      }),
      Tool.handoff("transfer_to_greeter", () => greeter)
    ],
    onEnter: Effect.sync(() => void counts.weatherEnter++).pipe(Effect.andThen(Agent.reply({ instructions: "introduce yourself" })))
  })
  return { greeter, weather, counts }
}

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { instructions: "introduce yourself" }, reply: { text: ["Sunny ", "here."] } },
  { when: { user: "weather" }, reply: { text: "Transferring.", toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { user: "paris" }, reply: { toolCalls: [{ name: "lookup_weather", arguments: { city: "Paris" } }] } },
  { when: { toolOutput: "sunny in" }, reply: { text: "It is sunny in Paris." } },
  { when: { user: "thanks" }, reply: { toolCalls: [{ name: "transfer_to_greeter" }] } },
  { when: { user: "hello" }, reply: { text: ["Hello", "!"] } }
]

const realtime = (options: Partial<ScriptedRealtime.Options> = {}) =>
  Layer.mergeAll(ScriptedRealtime.layer({ rules, ...options }), TextCapture.layer)

/** A talker asked for a story, interrupted once what it said passes `enough` (the clock moving by `step`). */
const storyCut = (enough: (said: string) => boolean, step: Duration.Input) =>
  Effect.gen(function*() {
    const rt = yield* ScriptedRealtime.ScriptedRealtime
    const text = yield* TextCapture.TextCapture
    const session = yield* AgentSession.start({ agent: Agent.make({ name: "talker", instructions: "You talk." }) })
    yield* session.send("tell me a story")
    yield* drive(Effect.gen(function*() {
      while (!enough(text.textOf("talker"))) yield* Effect.sleep(step)
    }), { step })
    yield* session.interrupt
    yield* drive(session.idle)
    return { rt, text, session }
  })

describe("realtime", () => {
  it.effect("seed 000: no event or send from the outgoing actor after the handoff; transfer back resumes", () => {
    const { greeter, counts } = pair()
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent: greeter })
      const first = yield* drive(session.run("what's the weather?"))
      first.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
      first.expect.containsMessage({ agent: "weather", content: "Sunny here." })
      yield* drive(session.run("in paris"))
      const back = yield* drive(session.run("thanks"))
      back.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
      yield* drive(session.run("hello again"))
      const events = yield* session.eventLog
      assert.deepStrictEqual(eventsOfAgentAfter(events, "greeter", handoffSeq(events, "weather")).filter((e) => e.seq < handoffSeq(events.filter((e) => e.seq > handoffSeq(events, "weather")), "greeter")), [])
      // Responses were asked for by the holder only: greeter, weather x3, greeter.
      assert.deepStrictEqual(rt.connections.flatMap((c) => c.responses.map((r) => r.agent)), ["greeter", "weather", "weather", "weather", "weather", "greeter"])
      assert.deepStrictEqual(counts, { greeterEnter: 1, weatherEnter: 1, greeterResume: 1 })
      assertEveryCallAnswered(yield* session.history)
      assertOneFloor(events)
    }).pipe(Effect.provide(realtime()))
  })

  it.effect("seed 001: back and forth ten times on one connection, updates pipelined", () => {
    const { greeter } = pair()
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent: greeter })
      for (let i = 0; i < 10; i++) {
        const there = yield* drive(session.run("weather please"))
        there.expect.containsAgentHandoff({ to: "weather" })
        const back = yield* drive(session.run("thanks"))
        back.expect.containsAgentHandoff({ to: "greeter" })
      }
      // The connection moves when the new holder first talks: the greeter talks once more.
      yield* drive(session.run("hello"))
      assert.strictEqual(rt.connections.length, 1)
      assert.deepStrictEqual(session.realtime(), { open: 1, opened: 1 })
      const ops = rt.connections[0]!.ops
      // Each move: instructions/tools and context sent, then the reply asked for, at the same
      // instant: no waiting for acknowledgements (they take 200 ms here).
      const moves = ops.filter((op) => op.op === "updateSession")
      assert.strictEqual(moves.length, 20)
      for (const move of moves) {
        const next = ops.slice(ops.indexOf(move)).find((op) => op.op === "createResponse")
        if (next) assert.strictEqual(next.at, move.at)
      }
      assertEveryCallAnswered(yield* session.history)
      assertOneFloor(yield* session.eventLog)
    }).pipe(Effect.provide(realtime({ ackDelay: "200 millis" })))
  })

  it.effect("seed 001: the handoff happens before the tool output is acknowledged; late acks are harmless", () => {
    const { greeter } = pair()
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: greeter })
      const result = yield* drive(session.run("weather please"))
      const handoff = result.sessionEvents.find((e) => e.type === "agent_handoff")!
      const spoke = result.sessionEvents.find((e) => e.type === "agent_state_changed" && e.agent === "weather" && e.state === "speaking")!
      // Acks take 5 s; the new agent spoke long before.
      assert.isBelow(spoke.at - handoff.at, 5000)
      yield* drive(Effect.sleep("10 seconds"))
      const later = yield* drive(session.run("in paris"))
      later.expect.containsMessage({ content: "It is sunny in Paris." })
      assert.isFalse((yield* session.eventLog).some((e) => e.type === "error"))
    }).pipe(Effect.provide(realtime({ ackDelay: "5 seconds" })))
  })

  it.effect("rule 7: reuse refused when the capabilities forbid it (tools fixed at setup)", () => {
    const { greeter } = pair()
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent: greeter })
      yield* drive(session.run("weather please"))
      assert.strictEqual(rt.connections.length, 2)
      assert.isTrue(rt.connections[0]!.closed)
      // The fresh connection was seeded with the conversation so far.
      assert.isTrue(rt.connections[1]!.ops[0]!.op === "connect")
      const seeded = rt.connections[1]!
      assert.isTrue(seeded.items.some((i) => i._tag === "Message" && i.text === "weather please"))
      yield* drive(session.run("thanks"))
      yield* drive(session.run("hello"))
      assert.strictEqual(rt.connections.length, 3)
      assert.isTrue(rt.connections[1]!.closed)
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(realtime({ capabilities: ScriptedRealtime.geminiLike })))
  })

  it.effect("rule 2: the user's audio goes to the holder's connection only, never to one the outgoing agent had", () => {
    const { greeter } = pair()
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent: greeter })
      yield* drive(session.idle)
      yield* session.pushAudio(new Uint8Array(4800))
      yield* drive(session.run("weather please"))
      yield* session.pushAudio(new Uint8Array(960))
      // Tools fixed at setup: the weather agent got a fresh connection; the greeter's is closed.
      assert.strictEqual(rt.connections.length, 2)
      const pushes = (i: number) => rt.connections[i]!.ops.filter((o) => o.op === "pushAudio")
      assert.deepStrictEqual(pushes(0).map((o) => o.detail), [4800])
      assert.deepStrictEqual(pushes(1).map((o) => o.detail), [960])
      assert.isTrue(rt.connections[0]!.closed)
    }).pipe(Effect.provide(realtime({ capabilities: ScriptedRealtime.geminiLike })))
  })

  it.effect("rule 7: an error answer to an update falls back to a fresh connection with the context re-seeded", () => {
    const { greeter } = pair()
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent: greeter })
      const result = yield* drive(session.run("weather please"))
      result.expect.containsAgentHandoff({ to: "weather" })
      result.expect.containsMessage({ agent: "weather", content: "Sunny here." })
      assert.strictEqual(rt.connections.length, 2)
      // The broken connection is closed in the background (it is no one's any more).
      yield* drive(Effect.gen(function*() {
        while (!rt.connections[0]!.closed) yield* Effect.sleep("10 millis")
      }))
      assert.isTrue(rt.connections[1]!.items.some((i) => i._tag === "Message" && i.text === "weather please"))
      const next = yield* drive(session.run("in paris"))
      next.expect.containsMessage({ content: "It is sunny in Paris." })
      assertEveryCallAnswered(yield* session.history)
      assertOneFloor(yield* session.eventLog)
    }).pipe(Effect.provide(realtime({ ackDelay: "50 millis", responseDelay: "100 millis", rejectUpdate: (_n, kind) => kind === "session" })))
  })

  it.effect("rule 11: a connection that drops leaves nothing running: its fibers end with it, the session's fiber count is as before", () => {
    const agent = Agent.make({ name: "talker", instructions: "You talk." })
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent })
      yield* drive(session.run("hello"))
      const before = Diagnostics.snapshot().fibers
      // The second response drops its connection after its first words; the reply asks again
      // on a fresh connection.
      const result = yield* drive(session.run("hello again"))
      result.expect.containsMessage({ agent: "talker", content: "Hello!" })
      assert.strictEqual(rt.connections.length, 2)
      assert.isTrue(rt.connections[0]!.ops.some((op) => op.op === "dropped"))
      assert.strictEqual(session.realtime()?.open, 1)
      assert.strictEqual(Diagnostics.snapshot().fibers, before)
    }).pipe(Effect.provide(realtime({ dropConnection: (n) => n === 2 })))
  })

  it.effect("rule 12: a server that never answers: the reply fails after the timeout, the connection is given up, the next turn is answered on a fresh one at once", () => {
    const agent = Agent.make({ name: "talker", instructions: "You talk." })
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent })
      yield* drive(session.run("hello"))
      // The server takes the second request and never starts a response.
      const failed = yield* drive(session.run("hello again").pipe(Effect.flip))
      assert.strictEqual(failed._tag, "TurnFailed")
      const errors = (yield* session.eventLog).flatMap((e) => (e.type === "error" ? [e] : []))
      assert.strictEqual(errors.length, 1)
      assert.deepInclude(errors[0]!, { source: "model", reason: "Timeout", recoverable: true })
      const before = yield* Clock.currentTimeMillis
      const next = yield* drive(session.run("hello once more"))
      next.expect.containsMessage({ agent: "talker", content: "Hello!" })
      // No wait for the hung server to be idle (settling waits up to 3 s).
      assert.isBelow((yield* Clock.currentTimeMillis) - before, 1000)
      assert.strictEqual(rt.connections.length, 2)
      assert.isTrue(rt.connections[0]!.closed)
      const moves = (yield* session.eventLog).flatMap((e) => (e.type === "realtime_connection" ? [`${e.action} ${e.connectionId}`] : []))
      assert.deepStrictEqual(moves, [`opened ${rt.connections[0]!.id}`, `fell_back ${rt.connections[0]!.id}`, `opened ${rt.connections[1]!.id}`])
    }).pipe(Effect.provide(realtime({ stallResponse: (n) => n === 2 })))
  })

  it.effect("rule 7: a connection whose server hangs on the last answer is not reused: the next holder is answered on a fresh one", () => {
    const billing = Agent.make({ name: "billing", instructions: "You are billing.", onEnter: Agent.reply().pipe(Effect.asVoid) })
    const desk = Agent.make({ name: "desk", instructions: "You are desk." })
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: desk })
      // The desk's answer to this is never started by the server.
      yield* session.send("hello")
      yield* drive(Effect.sleep("1 second"))
      const before = yield* Clock.currentTimeMillis
      yield* session.handoff(billing)
      yield* drive(Effect.gen(function*() {
        while (!text.textOf("billing").includes("Billing here.")) yield* Effect.sleep("10 millis")
      }))
      // The server had 3 s to finish the desk's answer; the reply did not wait for the desk's
      // 10 s timeout on the hung connection.
      assert.isBelow((yield* Clock.currentTimeMillis) - before, 4000)
      assert.strictEqual(rt.connections.length, 2)
      assert.isTrue(rt.connections[0]!.closed)
      assert.deepStrictEqual(rt.connections[1]!.responses.map((r) => r.agent), ["billing"])
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({
        stallResponse: (n) => n === 1,
        rules: [{ when: (r) => r.instructions === "You are billing.", reply: { text: "Billing here." } }]
      }),
      TextCapture.layer
    )))
  })

  it.effect("rule 7: a take that waited on a hung connection and lost the floor meanwhile still closes the hung one", () => {
    const billing = Agent.make({ name: "billing", instructions: "You are billing.", onEnter: Agent.reply().pipe(Effect.asVoid) })
    const desk = Agent.make({ name: "desk", instructions: "You are desk." })
    // A text agent (a model of its own): it takes no realtime connection.
    const clerk = Agent.make({ name: "clerk", instructions: "You are clerk.", model: ScriptedModel.layer([]) })
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent: desk })
      // The desk's answer to this is never started by the server.
      yield* session.send("hello")
      yield* drive(Effect.sleep("1 second"))
      // Billing's take waits on the hung server; the floor moves on to the clerk meanwhile.
      yield* session.handoff(billing)
      yield* drive(Effect.sleep("100 millis"))
      yield* session.handoff(clerk)
      yield* drive(Effect.sleep("4 seconds"))
      assert.strictEqual(rt.connections.length, 1)
      assert.isTrue(rt.connections[0]!.closed)
    }).pipe(Effect.provide(ScriptedRealtime.layer({ stallResponse: (n) => n === 1, rules: [] })))
  })

  it.effect("rule 8: audio sent faster than it plays: a cut keeps what played, in the history and on the server", () => {
    // 10 ms of audio a word, a word every millisecond: the model is ten times faster than speech.
    const words = Array.from({ length: 40 }, (_, i) => `w${i + 1} `)
    return Effect.gen(function*() {
      const { rt, text, session } = yield* storyCut((said) => said.includes("w20 "), "1 millis")
      const sent = text.textOf("talker").trim().split(" ").length
      const truncate = rt.connections[0]!.ops.find((op) => op.op === "truncate")
      const playedMs = (truncate!.detail as { audioEndMs: number }).audioEndMs
      // About 20 ms played of the 200 sent.
      assert.isAbove(playedMs, 0)
      assert.isBelow(playedMs, sent * 10 / 2)
      const story = (yield* session.history).items.find((i) => i._tag === "Message" && i.role === "assistant")
      assert.isTrue(story?._tag === "Message" && story.interrupted)
      const kept = story?._tag === "Message" ? story.text : ""
      assert.isTrue(text.textOf("talker").startsWith(kept), kept)
      assert.isBelow(kept.split(" ").length, sent / 2, kept)
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({ rules: [{ when: { user: "story" }, reply: { text: words, chunkDelay: "1 millis" } }], audio: true }),
      TextCapture.layer
    )))
  })

  it("heardPart: the words heard when a fraction of the audio played; a word cut in the middle is not kept", () => {
    assert.strictEqual(RealtimeReply.heardPart("Once upon a time", 1), "Once upon a time")
    assert.strictEqual(RealtimeReply.heardPart("Once upon a time", 0.6), "Once upon")
    assert.strictEqual(RealtimeReply.heardPart("Once upon a time", 0.5), "Once")
    assert.strictEqual(RealtimeReply.heardPart("Once upon a time", 0.1), "")
    assert.strictEqual(RealtimeReply.heardPart("Once upon a time", 0), "")
  })

  it.effect("rule 8: interrupting a realtime reply cancels it and truncates at the audio played", () => {
    return Effect.gen(function*() {
      const { rt, text, session } = yield* storyCut((said) => said.length >= 6, "10 millis")
      const ops = rt.connections[0]!.ops.map((op) => op.op)
      assert.include(ops, "cancelResponse")
      const truncate = rt.connections[0]!.ops.find((op) => op.op === "truncate")
      assert.isDefined(truncate)
      assert.isAbove((truncate!.detail as { audioEndMs: number }).audioEndMs, 0)
      const story = (yield* session.history).items.find((i) => i._tag === "Message" && i.role === "assistant")
      assert.isTrue(story?._tag === "Message" && story.interrupted && story.text === text.textOf("talker"))
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({ rules: [{ when: { user: "story" }, reply: { text: ["Once ", "upon ", "a ", "time ", "far ", "away."], chunkDelay: "200 millis" } }], audio: true }),
      TextCapture.layer
    )))
  })
})
