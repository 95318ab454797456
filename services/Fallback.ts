/**
 * What `ModelFallback` and `TtsFallback` share: a stream taken from the first of several
 * engines whose answer starts. An engine that fails before its first element (with a fault the
 * caller names) or gives none within `attemptTimeout` is left for the next, and passed over for
 * `recoverAfter`; once an answer has started, its failure is the stream's. When every engine is
 * passed over, all are tried in order.
 */
import { type Cause, Channel, Clock, Duration, Effect, Exit, Pull, Scope, Stream } from "effect"

/**
 * What every fallback (`ModelFallback`, `SttFallback`, `TtsFallback`) is tuned by: how long an
 * engine may take to its first element before the next is asked, and how long one that failed is
 * passed over.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** How long an engine may take to its first element before the next is asked. */
  readonly attemptTimeout?: Duration.Input | undefined
  /** How long an engine that failed is passed over (default 30 s). */
  readonly recoverAfter?: Duration.Input | undefined
}

export interface Engine {
  /** How it is named in the log. */
  readonly name: string
  /** Passed over until then (ms, the Effect clock). */
  downUntil: number
}

export interface Attempts<C extends Engine, A, E> {
  readonly engines: ReadonlyArray<C>
  readonly attempt: (engine: C) => Stream.Stream<A, E>
  /** Why a failure may be left for the next engine; `undefined`: it is the answer (or a defect). */
  readonly fault: (cause: Cause.Cause<E>) => string | undefined
  /** The failure of an engine that gave nothing within the attempt timeout. */
  readonly noAnswer: (engine: C, timeout: Duration.Duration) => E
  readonly attemptTimeout: Duration.Duration
  readonly recoverAfterMs: number
  /** The engine whose answer started. */
  readonly answered?: ((engine: C) => void) | undefined
  /** An engine left for the next, with why. */
  readonly failedOver?: ((engine: C, reason: string) => void) | undefined
}

/** The engines to try, in order: those not passed over first, then the others (a last resort). */
export const inOrder = <C extends Engine>(engines: ReadonlyArray<C>, now: number): ReadonlyArray<C> => [
  ...engines.filter((e) => e.downUntil <= now),
  ...engines.filter((e) => e.downUntil > now)
]

export const recoverAfterMs = (options: Options) => Duration.toMillis(Duration.fromInputUnsafe(options.recoverAfter ?? "30 seconds"))

/** The stream of the first engine whose answer starts; the other attempts are closed. */
export const firstToAnswer = <C extends Engine, A, E>(attempts: Attempts<C, A, E>): Stream.Stream<A, E> =>
  Stream.fromChannel(Channel.fromTransform((_, scope) => pullOfFirst(attempts, scope)))

const pullOfFirst = <C extends Engine, A, E>(attempts: Attempts<C, A, E>, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const order = inOrder(attempts.engines, now)
    for (let k = 0; ; k++) {
      const engine = order[k]!
      const attempt = yield* Scope.fork(scope)
      const pull = yield* Stream.toPull(attempts.attempt(engine)).pipe(Scope.provide(attempt))
      const first = yield* pull.pipe(
        Effect.timeoutOrElse({ duration: attempts.attemptTimeout, orElse: () => Effect.fail(attempts.noAnswer(engine, attempts.attemptTimeout)) }),
        Effect.exit
      )
      if (Exit.isSuccess(first)) {
        engine.downUntil = 0
        attempts.answered?.(engine)
        let pending: typeof first.value | undefined = first.value
        return Effect.suspend(() => {
          if (pending === undefined) return pull
          const chunk = pending
          pending = undefined
          return Effect.succeed(chunk)
        })
      }
      // It ended without an element, or not with a fault an engine can be left for: as it is.
      const reason = Pull.isDoneCause(first.cause) ? undefined : attempts.fault(first.cause as Cause.Cause<E>)
      if (reason === undefined) return Effect.failCause(first.cause)
      engine.downUntil = now + attempts.recoverAfterMs
      const next = order[k + 1]
      if (next === undefined) return Effect.failCause(first.cause)
      attempts.failedOver?.(engine, reason)
      yield* Scope.close(attempt, Exit.void)
      yield* Effect.logWarning(`${engine.name} failed before answering (${reason}); asking ${next.name}`)
    }
  })
