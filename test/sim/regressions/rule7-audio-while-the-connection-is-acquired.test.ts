/**
 * Found by the simulation (seeds 360187 and 420836, shrunk; both fail at e1363a9).
 *
 * a0 greets, and the application hands the floor to a1 at once: a1's lease waits until a0's
 * cut answer has ended on the server (200 ms here). 20 ms later the user speaks while the
 * application hands the floor back to a0. The audio reached a1, still the holder, and waited
 * behind a1's acquisition. When that acquisition ended a1 no longer held the floor, so the
 * connection went to a0; then the audio's own turn came, found no lease and opened a second
 * connection for a1, which nobody used (rule 7: never by accident), and the audio was dropped.
 * Now a flow that gets its turn after its actor passed the floor acquires nothing, and the
 * audio goes to the holder's connection.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../../layers/testing/TextCapture.ts"
import { Agent, AgentSession } from "../../../src/index.ts"

describe("rule 7: reuse when possible, never by accident (simulation regression)", () => {
  it.effect("rule 7: audio pushed while the floor moves back opens no connection and reaches the holder", () => {
    const a0 = Agent.make({ name: "a0", instructions: "You are a0.", onEnter: Agent.reply().pipe(Effect.asVoid) })
    const a1 = Agent.make({ name: "a1", instructions: "You are a1." })
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent: a0 })
      const first = yield* session.handoff(a1).pipe(Effect.forkChild({ startImmediately: true }))
      yield* drive(Effect.sleep("20 millis"))
      const back = yield* session.handoff(a0).pipe(Effect.forkChild({ startImmediately: true }))
      const audio = yield* session.pushAudio(ScriptedRealtime.utterance("are you there")).pipe(Effect.forkChild({ startImmediately: true }))
      yield* drive(Fiber.join(first).pipe(Effect.andThen(Fiber.join(back))))
      const pushed = yield* drive(Fiber.await(audio))
      yield* drive(Effect.sleep("2 seconds").pipe(Effect.andThen(session.idle)))
      assert.strictEqual((yield* session.currentAgent)?.name, "a0")
      assert.strictEqual(rt.connections.length, 1, `connections: ${rt.connections.map((c) => c.id).join(", ")}`)
      assert.isTrue(Exit.isSuccess(pushed), `pushAudio: ${String(pushed)}`)
      // The words were heard on the holder's connection, and answered.
      const history = yield* session.history
      assert.isTrue(history.items.some((i) => i._tag === "Message" && i.role === "user" && i.text === "are you there"))
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({
        responseDelay: "200 millis",
        rules: [
          { when: { user: "are you there" }, reply: { text: "Yes." } },
          { when: (r) => r.instructions === "You are a0.", reply: { text: "Hello from a0." } },
          { when: (r) => r.instructions === "You are a1.", reply: { text: "Hello from a1." } }
        ]
      }),
      TextCapture.layer
    )))
  })
})
