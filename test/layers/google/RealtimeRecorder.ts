/**
 * Test helpers shared by the realtime provider tests (OpenAI Realtime and Gemini Live): record a
 * connection's event stream, wait for an event (live clock), and capture log lines.
 */
import { Deferred, Effect, type Exit, Layer, Logger, References, Result, type Scope, Stream } from "effect"
import type { RealtimeConnection, RealtimeError, RealtimeEvent } from "../../../services/RealtimeModel.ts"

export interface Recorder {
  /** Every event so far, in order. */
  readonly events: () => ReadonlyArray<RealtimeEvent>
  readonly tags: () => ReadonlyArray<string>
  /** The first event (from index `from`) satisfying `pred`; fails after `timeoutMs`. */
  readonly waitFor: (
    pred: (event: RealtimeEvent) => boolean,
    options?: { readonly timeoutMs?: number; readonly from?: number }
  ) => Effect.Effect<RealtimeEvent, Error>
  /** How the stream ended (waits up to `timeoutMs`). */
  readonly ended: (timeoutMs?: number) => Effect.Effect<Exit.Exit<void, RealtimeError>, Error>
}

export const record = (connection: RealtimeConnection): Effect.Effect<Recorder, never, Scope.Scope> =>
  Effect.gen(function*() {
    const seen: Array<RealtimeEvent> = []
    const done = yield* Deferred.make<Exit.Exit<void, RealtimeError>>()
    yield* connection.events.pipe(
      Stream.runForEach((event) => Effect.sync(() => void seen.push(event))),
      Effect.exit,
      Effect.flatMap((exit) => Deferred.succeed(done, exit)),
      Effect.forkScoped
    )
    const waitFor: Recorder["waitFor"] = (pred, options = {}) =>
      Effect.gen(function*() {
        const deadline = Date.now() + (options.timeoutMs ?? 3_000)
        while (true) {
          const found = seen.slice(options.from ?? 0).find(pred)
          if (found !== undefined) return found
          if (Date.now() > deadline) {
            return yield* Effect.fail(new Error(`no matching event; seen: ${seen.map((e) => e._tag).join(", ")}`))
          }
          yield* Effect.sleep("5 millis")
        }
      })
    return {
      events: () => [...seen],
      tags: () => seen.map((e) => e._tag),
      waitFor,
      ended: (timeoutMs = 3_000) =>
        Deferred.await(done).pipe(
          Effect.timeoutOrElse({ duration: timeoutMs, orElse: () => Effect.fail(new Error("the event stream did not end")) })
        )
    }
  })

/** Runs `effect` with log lines (level >= Debug) captured into `lines`. */
export const captureLogs = (lines: Array<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.provide(
      Layer.mergeAll(
        Logger.layer([
          Logger.make((options) => {
            lines.push(`${options.logLevel} ${(options.message as ReadonlyArray<unknown>).map(String).join(" ")}`)
          })
        ]),
        Layer.succeed(References.MinimumLogLevel, "Debug")
      )
    )
  )

/** Retries `assertion` (every 5 ms, live clock) until it stops throwing or `timeoutMs` passes. */
export const eventually = (assertion: () => void, timeoutMs = 2_000): Effect.Effect<void> =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (true) {
      const result = yield* Effect.result(Effect.try({ try: assertion, catch: (error) => error }))
      if (Result.isSuccess(result)) return
      if (Date.now() > deadline) return yield* Effect.die(result.failure)
      yield* Effect.sleep("5 millis")
    }
  })
