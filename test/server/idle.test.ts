/**
 * Idle connections give their slot back (issue 33): `/twilio` had no idle timeout, so a silent
 * stream that answers pings held a session slot for ever.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Option, Queue } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { idleReason, pullWithin } from "../../server/Liveness.ts"
import { Agent } from "../../src/index.ts"
import { connect, start, wait } from "./harness.ts"

const agent = Agent.make({ name: "ivr", instructions: "Answer the phone." })
const model = ScriptedModel.layer([{ when: { agent: "ivr" }, reply: { text: "Hello." } }])

describe("Server idle timeout", () => {
  it.effect("a pull gives up after idleSeconds without a frame, and not a moment before", () =>
    Effect.gen(function*() {
      const frames = yield* Queue.unbounded<string>()
      const first = yield* pullWithin(Queue.take(frames), 300).pipe(Effect.forkChild)
      yield* TestClock.adjust("299 seconds")
      yield* Queue.offer(frames, "media")
      assert.deepStrictEqual(yield* Fiber.join(first), Option.some("media"))
      const second = yield* pullWithin(Queue.take(frames), 300).pipe(Effect.forkChild)
      yield* TestClock.adjust("299 seconds")
      assert.isUndefined(second.pollUnsafe())
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* Fiber.join(second), Option.none())
    }))

  it.effect("with idleSeconds 0 a pull waits for ever", () =>
    Effect.gen(function*() {
      const frames = yield* Queue.unbounded<string>()
      const pull = yield* pullWithin(Queue.take(frames), 0).pipe(Effect.forkChild)
      yield* TestClock.adjust("365 days")
      assert.isUndefined(pull.pollUnsafe())
      yield* Queue.offer(frames, "late")
      assert.deepStrictEqual(yield* Fiber.join(pull), Option.some("late"))
    }))

  it.live("a /twilio stream that says nothing for idleSeconds is closed and its slot given back", () =>
    Effect.gen(function*() {
      const server = yield* start(agent, model, { idleSeconds: 1 })
      const caller = yield* connect(`${server.ws}/twilio`)
      const streamSid = "MZ00000000000000000000000000000009"
      caller.sendJson({ event: "connected", protocol: "Call", version: "1.0.0" })
      caller.sendJson({ event: "start", streamSid, start: { streamSid, mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 } } })
      const closed = yield* wait(() => Promise.race([caller.closed, new Promise<undefined>((r) => setTimeout(() => r(undefined), 5000))]))
      assert.deepStrictEqual(closed, { code: 1000, reason: idleReason(1) })
      yield* wait(async () => {
        for (let i = 0; i < 200 && server.state.registry.open() > 0; i++) await new Promise((r) => setTimeout(r, 10))
      })
      assert.strictEqual(server.state.registry.open(), 0)
    }).pipe(Effect.scoped))
})
