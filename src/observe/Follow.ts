/**
 * Following a session's events from its public API, losing none: the live stream, with any gap
 * before its first event (or between chunks) filled from the session's kept log by sequence
 * number, and what is left when the session or the Scope closes flushed at the end. The
 * recorder, the metrics and the traces all read a session this way.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Fiber, type Scope, Stream } from "effect"
import type { AgentSession } from "../AgentSession.ts"
import type { SessionEvent } from "../Events.ts"

/**
 * Calls `handle` with every event of `session` in order, each once, from its first kept event
 * (an observer attached at start sees start-up) until `close`. Runs in a fiber of its own; when
 * `scope` closes, it waits for `close` if the session is closing, else stops, and hands over what
 * was not handled yet. `handle` runs uninterruptibly (a line is never half written).
 *
 * @since 0.1.0
 * @category combinators
 */
export const follow = <R>(
  session: AgentSession<unknown>,
  handle: (events: ReadonlyArray<SessionEvent>) => Effect.Effect<void, never, R>
): Effect.Effect<void, never, Scope.Scope | R> =>
  Effect.gen(function*() {
    let next = 0
    const take = (events: ReadonlyArray<SessionEvent>) =>
      Effect.suspend(() => {
        const fresh = events.filter((e) => e.seq >= next)
        if (fresh.length === 0) return Effect.void
        next = fresh[fresh.length - 1]!.seq + 1
        return handle(fresh)
      }).pipe(Effect.uninterruptible)
    const catchUp = (upTo: number) =>
      Effect.flatMap(session.eventsSince(next), (kept) => take(kept.filter((e) => e.seq < upTo)))
    const rest = Effect.flatMap(session.eventsSince(next), take)

    const fiber = yield* session.events.pipe(
      Stream.runForEachArray((chunk) => catchUp(chunk[0].seq).pipe(Effect.andThen(take(chunk)))),
      Effect.andThen(rest),
      Effect.forkDetach
    )
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (yield* session.closed) yield* Fiber.await(fiber)
        else yield* Fiber.interrupt(fiber)
        yield* rest
      })
    )
  })
