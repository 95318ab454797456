/**
 * A realtime server that never starts the response it was asked for must not hold the turn:
 * after `RealtimeResponseTimeout` the reply fails with a Timeout (a typed `TurnFailed` on run, an
 * error event with reason Timeout), and the session goes on. Under TestClock (`drive`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../layers/testing/ScriptedRealtime.ts"
import { RealtimeResponseTimeout } from "../../services/RealtimeModel.ts"
import { Agent, AgentSession, TurnFailed } from "../../src/index.ts"

const agent = Agent.make({ name: "voice", instructions: "You answer." })
const rules = [{ when: { user: /hello/ }, reply: { text: "Hello!" } }] as const

describe("realtime: a response that never starts", () => {
  it.effect("fails the turn with a Timeout after RealtimeResponseTimeout; the error event says so", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent })
      const failed = yield* drive(session.run("hello")).pipe(Effect.flip)
      assert.instanceOf(failed, TurnFailed)
      const events = yield* session.eventLog
      const error = events.find((e) => e.type === "error" && e.source === "model")
      assert.isDefined(error)
      assert.strictEqual(error?.type === "error" ? error.reason : undefined, "Timeout")
      assert.match(error?.type === "error" ? error.message : "", /no response from the realtime model within 2s/)
    }).pipe(Effect.provide(Layer.mergeAll(
      // the server answers after a minute: far past the two seconds allowed here
      ScriptedRealtime.layer({ rules, responseDelay: "60 seconds" }),
      Layer.succeed(RealtimeResponseTimeout, "2 seconds")
    ))), 30_000)

  it.effect("a server that answers within the limit is waited for", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent })
      const result = yield* drive(session.run("hello"))
      assert.isTrue(result.events.some((e) => e.type === "message" && e.role === "assistant" && e.content === "Hello!"))
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({ rules, responseDelay: "1 second" }),
      Layer.succeed(RealtimeResponseTimeout, "2 seconds")
    ))), 30_000)
})
