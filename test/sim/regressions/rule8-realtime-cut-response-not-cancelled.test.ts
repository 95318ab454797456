/**
 * Found by the simulation once scenarios got realtime agents (113 of 3,000 seeds: 34, 348, 768,
 * 101, 291, 309, 330 ..., shrunk).
 *
 * A realtime reply that is cut (the user speaks over it, or a handoff moves the floor) is not
 * cancelled on the server before the connection is used again:
 * - the next response is asked for while the server still runs the cut one: the provider answers
 *   "a response is already in progress" (OpenAI Realtime: conversation_already_has_active_response)
 *   and that reply fails with a model error; the user's turn gets no answer;
 * - after a handoff moved the connection, the cut response runs on with the new holder's
 *   instructions (seed 768), and its late events are taken for the new holder's next request,
 *   which then never completes: `run` never resolves (rule 10).
 * Late events of a response asked for by an actor that passed the floor, or that was cut, should
 * be dropped (rule 8), and the cut response cancelled before another is asked for.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../../layers/testing/TextCapture.ts"
import { Agent, AgentSession } from "../../../src/index.ts"

const greeter: Agent.Agent = Agent.make({
  name: "greeter",
  instructions: "Greet.",
  onEnter: Agent.reply({ instructions: "greet the caller" }).pipe(Effect.asVoid)
})

const a: Agent.Agent = Agent.make({ name: "a", instructions: "You are A." })
const b: Agent.Agent = Agent.make({ name: "b", instructions: "You are B." })

describe("rule 8: late answers are harmless (simulation regression)", () => {
  it.effect("rule 8: the user speaking over a realtime reply gets an answer, not a provider error", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: greeter })
      // The caller speaks at once, while the greeting is being asked for.
      yield* session.send("hi there")
      yield* drive(session.idle)
      const events = yield* session.eventLog
      assert.deepStrictEqual(events.filter((e) => e.type === "error").map((e) => e.type === "error" ? e.message : ""), [])
      assert.strictEqual(text.textOf("greeter").endsWith("Hi, how can I help?"), true, text.textOf("greeter"))
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({
        rules: [
          { when: { instructions: "greet the caller" }, reply: { text: "Hello!" } },
          { when: { user: "hi there" }, reply: { text: "Hi, how can I help?" } }
        ]
      }),
      TextCapture.layer
    ))))

  it.effect("rule 8: a realtime response of the old holder does not stall the new holder's replies", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: a })
      // The user speaks and, at once, the application hands the call to B.
      yield* drive(Effect.sleep("550 millis").pipe(Effect.andThen(session.send("hello")), Effect.andThen(session.handoff(b))))
      yield* drive(Effect.sleep("700 millis").pipe(Effect.andThen(session.run("are you there?"))), { limit: "1 minute" })
      assert.isTrue(text.textOf("b").endsWith("B here."), text.textOf("b"))
      const errors = (yield* session.eventLog).flatMap((e) => (e.type === "error" ? [e.message.split("\n")[0]] : []))
      assert.deepStrictEqual(errors, [])
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({
        rules: [
          // A's answer takes a while (and says nothing): the floor moves before it ends.
          { when: { agent: "a" }, reply: { delay: "190 millis" } },
          { when: { agent: "b" }, reply: { text: "B here." } }
        ]
      }),
      TextCapture.layer
    ))))
})
