/**
 * Found by the simulation once scenarios got realtime agents (seed 467, shrunk; also 3, 101,
 * 309, 329, 474 ...).
 *
 * With a realtime model whose chat context cannot be edited (Gemini Live: items can be appended,
 * not deleted), interrupting a reply after the server produced some of it leaves the server
 * holding an item baton did not record. The next turn syncs the context on the same
 * connection, which needs that item deleted: the model refuses ("items cannot be deleted"), the
 * reply fails with a model error, and so does every later turn. The connection is kept although
 * a part that differs is not mutable for that model (rule 7: then a fresh connection is opened).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../../layers/testing/TextCapture.ts"
import { Agent, AgentSession } from "../../../src/index.ts"

const greeter: Agent.Agent = Agent.make({
  name: "greeter",
  instructions: "Greet.",
  onEnter: Agent.reply({ instructions: "greet the caller" }).pipe(Effect.asVoid)
})

describe("rule 7: reuse when possible, never by accident (simulation regression)", () => {
  it.effect("rule 7: after an interrupted reply, a model whose context cannot be edited still answers the next turn", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      // The greeting is answered after 220 ms; at that moment the application interrupts it (its
      // timer was set first, so it fires first).
      const started = yield* Deferred.make<AgentSession.AgentSession>()
      const interrupter = yield* Effect.sleep("220 millis").pipe(
        Effect.andThen(Deferred.await(started)),
        Effect.flatMap((session) => session.interrupt),
        Effect.forkChild({ startImmediately: true })
      )
      const session = yield* AgentSession.start({ agent: greeter })
      yield* Deferred.succeed(started, session)
      yield* drive(Fiber.join(interrupter))
      yield* drive(session.run("hi"))
      const errors = (yield* session.eventLog).flatMap((e) => (e.type === "error" ? [e.message.split("\n")[0]] : []))
      assert.deepStrictEqual(errors, [])
      assert.isTrue(text.textOf("greeter").endsWith("How can I help?"), text.textOf("greeter"))
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({
        capabilities: ScriptedRealtime.geminiLike,
        responseDelay: "220 millis",
        rules: [
          { when: { instructions: "greet the caller" }, reply: { text: "Hello!" } },
          { when: { user: "hi" }, reply: { text: "How can I help?" } }
        ]
      }),
      TextCapture.layer
    ))))
})
