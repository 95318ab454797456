/**
 * Found by the simulation once the user could speak into realtime connections (seeds 3, 291
 * and a client reply racing the server's own; shrunk).
 *
 * 1. The user speaks into a0's connection and the floor moves to a2 before the server answers.
 *    The connection went back to the pool and stayed there, with a0's configuration, until a2
 *    needed one (its first reply): the server answered the user's turn as a0, after a0 had
 *    handed off (rule 2). Now the new holder takes the connection as it gets the floor: a
 *    reusable one gets a2's configuration at once, one that cannot serve a2 closes.
 * 2. A connection that reported the user speaking went (an update's error answer, a fallback)
 *    before it reported the end of the turn: the session believed the user spoke for ever, so
 *    no reply ever started and the session never became quiescent (rule 10).
 * 3. The application asked for a reply an instant after the server had started its own answer
 *    to a spoken turn: the server refused the second response, and the refusal reached the agent
 *    as a model error (rule 12), although the server's answer serves the request.
 * 4. A short answer the server started by itself could arrive whole before the reply that plays
 *    it started; the reply looked its response up by id, found it gone, and played nothing. A
 *    reply now gets the response's event queue itself.
 * 5. (seed 7088) The floor came back to a0 while its connection moved; the update for a0 was
 *    refused and the connection replaced (fallback) just as a0's reply asked for a response on
 *    it: the request failed with "closed" (not "revoked"), was not retried, and the reply ended
 *    in a model error. A request on a connection that closed under it now asks once more.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../../layers/testing/TextCapture.ts"
import { Agent, AgentSession } from "../../../src/index.ts"

const a2: Agent.Agent = Agent.make({ name: "a2", instructions: "You are a2." })
const a0: Agent.Agent = Agent.make({ name: "a0", instructions: "You are a0." })
const a1: Agent.Agent = Agent.make({ name: "a1", instructions: "You are a1." })

const model = (options: Partial<ScriptedRealtime.Options>) =>
  Layer.mergeAll(
    ScriptedRealtime.layer({
      rules: [
        // By the configuration the server holds (its own answers carry no agent).
        { when: (request) => request.instructions === "You are a0.", reply: { text: "a0 answers." } },
        { when: (request) => request.instructions === "You are a2.", reply: { text: "a2 answers." } },
        { when: (request) => request.instructions === "You are a1.", reply: { text: "a1 answers." } }
      ],
      ...options
    }),
    TextCapture.layer
  )

/** The user speaks to a0; the floor moves to a2 (which does not speak first) before the server answers. */
const spokenThenHandedOff = Effect.gen(function*() {
  const rt = yield* ScriptedRealtime.ScriptedRealtime
  const text = yield* TextCapture.TextCapture
  const session = yield* AgentSession.start({ agent: a0 })
  yield* drive(session.idle)
  yield* session.pushAudio(ScriptedRealtime.utterance("hello there"))
  yield* session.handoff(a2, { reply: false })
  yield* drive(Effect.sleep("2 seconds").pipe(Effect.andThen(session.idle)))
  return { rt, text, session }
})

describe("rule 2: spoken turns across handoffs (simulation regression)", () => {
  it.effect("rule 2: a turn spoken just before a handoff is never answered with the outgoing agent's configuration (Gemini)", () =>
    Effect.gen(function*() {
      const { rt, text, session } = yield* spokenThenHandedOff
      const first = rt.connections[0]!
      // a0's connection closed at the handoff (its instructions cannot change): it answered nothing.
      assert.isTrue(first.closed)
      assert.deepStrictEqual(first.responses, [])
      assert.strictEqual(text.textOf("a0"), "")
      // The turn was heard by a connection that is gone: a2 answers when the user speaks again.
      yield* session.pushAudio(ScriptedRealtime.utterance("are you there"))
      yield* drive(Effect.sleep("1 second").pipe(Effect.andThen(session.idle)))
      assert.strictEqual(text.textOf("a2"), "a2 answers.")
    }).pipe(Effect.provide(model({ capabilities: ScriptedRealtime.geminiLike, speechEvents: false }))))

  it.effect("rule 2: a moved connection answers the turn as the new agent (OpenAI)", () =>
    Effect.gen(function*() {
      const { rt, text, session } = yield* spokenThenHandedOff
      assert.strictEqual(rt.connections.length, 1)
      assert.deepStrictEqual(rt.connections[0]!.responses.map((r) => r.instructions), ["You are a2."])
      assert.strictEqual(text.textOf("a0"), "")
      assert.strictEqual(text.textOf("a2"), "a2 answers.")
      const history = yield* session.history
      assert.isTrue(history.items.some((i) => i._tag === "Message" && i.role === "user" && i.text === "hello there"))
    }).pipe(Effect.provide(model({}))))

  it.effect("rule 10: a connection that goes while the user speaks does not leave the user speaking for ever", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a0 })
      yield* drive(session.idle)
      yield* session.pushAudio(ScriptedRealtime.utterance("hello there"))
      yield* drive(Effect.sleep("10 millis"))
      assert.isTrue((yield* session.eventLog).some((e) => e.type === "user_state_changed" && e.state === "speaking"))
      // a2 cannot use a0's connection (update rejected): it falls back to a fresh one, and the
      // old one, which had not yet said the turn ended, closes.
      yield* session.handoff(a2)
      const reply = yield* session.generateReply()
      const outcome = yield* drive(reply.wait)
      assert.strictEqual(outcome._tag, "Finished")
      const states = (yield* session.eventLog).flatMap((e) => (e.type === "user_state_changed" ? [e.state] : []))
      assert.deepStrictEqual(states, ["speaking", "listening"])
    }).pipe(Effect.provide(model({ rejectUpdate: (n) => n === 1, speechDuration: "5 seconds" }))))

  it.effect("rule 12: a reply asked for as the server starts its own answer is served by it, without an error", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: a0 })
      yield* drive(session.idle)
      yield* session.pushAudio(ScriptedRealtime.utterance("hello there"))
      // The turn ends at 200 ms and the server answers by itself 100 ms later; the
      // application asks for a reply in between.
      yield* drive(Effect.sleep("250 millis"))
      const reply = yield* session.generateReply()
      yield* drive(reply.wait)
      yield* drive(session.idle)
      const events = yield* session.eventLog
      assert.deepStrictEqual(events.filter((e) => e.type === "error"), [])
      assert.include(text.textOf("a0"), "a0 answers.")
    }).pipe(Effect.provide(model({ responseDelay: "100 millis" }))))

  it.effect("rule 12: a reply whose connection closes under it (a fallback during its request) asks again on the fresh one", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: a0 })
      yield* drive(session.idle)
      // a1 asks for a reply; 10 ms later the floor comes back to a0, whose updates on the
      // connection are refused: it falls back to a fresh connection while its reply asks.
      yield* session.handoff(a1)
      yield* drive(Effect.sleep("10 millis"))
      yield* session.handoff(a0)
      yield* drive(Effect.sleep("10 seconds").pipe(Effect.andThen(session.idle)))
      const events = yield* session.eventLog
      assert.deepStrictEqual(events.filter((e) => e.type === "error" && e.source !== "realtime"), [])
      assert.include(text.textOf("a0"), "a0 answers.")
    }).pipe(Effect.provide(model({ ackDelay: "110 millis", responseDelay: "230 millis", rejectUpdate: (n) => n === 2 }))))
})
