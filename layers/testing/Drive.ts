/**
 * Runs an effect while advancing the `TestClock`, so scripted delays and tools that sleep make
 * progress in tests without real waiting.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"

/**
 * How `drive` moves the `TestClock`: the step per round and the test time after which it gives up.
 *
 * @since 0.1.0
 * @category models
 */
export interface DriveOptions {
  /** How far the clock moves per step (default 10 ms). */
  readonly step?: Duration.Input
  /** Fails when the effect has not finished after this much test time (default 10 minutes). */
  readonly limit?: Duration.Input
}

/**
 * Runs `effect` to completion under `TestClock`, moving the clock a step at a time (10 ms by
 * default) whenever the effect has nothing left to do, so scripted delays and sleeping tools make
 * progress without real waiting. Fails with an `Error` after `limit` of test time (10 minutes by
 * default), interrupting the effect.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { AgentSession } from "@baton-voice/baton"
 * import { Drive, ScriptedModel } from "@baton-voice/baton/testing"
 *
 * const test = Drive.drive(Effect.gen(function*() {
 *   const session = yield* AgentSession.start({ agent: greeter })
 *   return yield* session.run("hello")
 * })).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer([{ when: { user: "hello" }, reply: { text: "Hi!", delay: "2 seconds" } }])))
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const drive = <A, E, R>(effect: Effect.Effect<A, E, R>, options: DriveOptions = {}): Effect.Effect<A, E | Error, R> =>
  Effect.gen(function*() {
    const step = Duration.fromInputUnsafe(options.step ?? "10 millis")
    const limit = Duration.toMillis(Duration.fromInputUnsafe(options.limit ?? "10 minutes"))
    const fiber = yield* Effect.forkChild(effect)
    let elapsed = 0
    while (true) {
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      const exit = fiber.pollUnsafe()
      if (exit) return yield* exit
      if (elapsed > limit) {
        yield* Fiber.interrupt(fiber)
        return yield* Effect.fail(new Error(`drive: not finished after ${limit} ms of test time`))
      }
      yield* TestClock.adjust(step)
      elapsed += Duration.toMillis(step)
    }
  })

/**
 * Advances the `TestClock` step by step until `condition` holds.
 *
 * @since 0.1.0
 * @category combinators
 */
export const until = (condition: () => boolean, options: DriveOptions = {}): Effect.Effect<void, Error> =>
  drive(
    Effect.gen(function*() {
      while (!condition()) yield* Effect.sleep(Duration.fromInputUnsafe(options.step ?? "10 millis"))
    }),
    options
  )
