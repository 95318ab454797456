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
      EventLog.emit(log, { type: "user_state_changed", state: "speaking" })
      assert.strictEqual(EventLog.listeners(log), 0)
      const first = yield* log.live.pipe(Stream.take(2), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      const second = yield* log.live.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      assert.strictEqual(EventLog.listeners(log), 2)
      EventLog.emit(log, { type: "user_state_changed", state: "listening" })
      EventLog.emit(log, { type: "user_state_changed", state: "speaking" })
      const seen = yield* Fiber.join(first)
      const seenBySecond = yield* Fiber.join(second)
      assert.deepStrictEqual(seen.map((e) => e.seq), [1, 2])
      assert.deepStrictEqual(seenBySecond.map((e) => e.seq), [1])
      // Both streams ended: nothing listens, and nothing is lost from the log.
      assert.strictEqual(EventLog.listeners(log), 0)
      EventLog.emit(log, { type: "user_state_changed", state: "listening" })
      assert.deepStrictEqual(EventLog.all(log).map((e) => e.seq), [0, 1, 2, 3])
    }))

  it.effect("a watcher is told after each event, once the event is kept (a durable session's journal)", () =>
    Effect.gen(function*() {
      const log = yield* EventLog.make(() => 0)
      EventLog.emit(log, { type: "user_state_changed", state: "speaking" })
      const told: Array<number> = []
      EventLog.watch(log, () => told.push(EventLog.next(log) - 1))
      EventLog.emit(log, { type: "user_state_changed", state: "listening" })
      EventLog.emit(log, { type: "user_state_changed", state: "speaking" })
      assert.deepStrictEqual(told, [1, 2])
      assert.deepStrictEqual(EventLog.since(log, 1).map((e) => e.seq), [1, 2])
    }))
})
