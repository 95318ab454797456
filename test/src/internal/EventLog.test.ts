/**
 * The session's event log (src/internal/EventLog.ts): every event is kept and numbered; it is
 * published to the live stream only while one runs, and a stream gets every event from its start.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import * as EventLog from "../../../src/internal/EventLog.ts"

describe("EventLog", () => {
  it.effect("publishes only while a live stream runs, and the stream gets every event from its start", () =>
    Effect.gen(function*() {
      const log = yield* EventLog.make(() => 0)
      log.emit({ type: "user_state_changed", state: "speaking" })
      assert.strictEqual(log.listeners(), 0)
      const first = yield* log.live.pipe(Stream.take(2), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      const second = yield* log.live.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      assert.strictEqual(log.listeners(), 2)
      log.emit({ type: "user_state_changed", state: "listening" })
      log.emit({ type: "user_state_changed", state: "speaking" })
      const seen = yield* Fiber.join(first)
      const seenBySecond = yield* Fiber.join(second)
      assert.deepStrictEqual(seen.map((e) => e.seq), [1, 2])
      assert.deepStrictEqual(seenBySecond.map((e) => e.seq), [1])
      // Both streams ended: nothing listens, and nothing is lost from the log.
      assert.strictEqual(log.listeners(), 0)
      log.emit({ type: "user_state_changed", state: "listening" })
      assert.deepStrictEqual(log.all().map((e) => e.seq), [0, 1, 2, 3])
    }))
})
