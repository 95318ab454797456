/**
 * Quiescence tracking for `session.run()` (rule 10).
 *
 * Every unit of foreground work holds one token while it can still make progress: a message in
 * a mailbox, a queued or playing speech, a running hook, a tool call of a batch. Work that
 * spawns work acquires the new token before releasing its own, so the count only reaches zero
 * when nothing is left to do. A flow that waits for the user (an `AgentTask` awaited by a hook or
 * a tool) gives its token up while it waits, and whoever wakes it acquires one for it *before*
 * waking it: there is no gap in which the session looks idle while a wake-up is in flight.
 *
 * A record and functions over it (docs/patterns.md): `Work.make()` once per count, then
 * `Work.acquire(work)`, `Work.release(work)`, `Work.track(work, effect)` and `Work.idle(work)`.
 */
import { Deferred, Effect } from "effect"
import { dual } from "effect/Function"
import * as Diagnostics from "../Diagnostics.ts"

/** The one mutable part: written by the functions of this module only. */
interface State {
  /** Tokens held now. */
  count: number
  /** Flows waiting for the count to reach zero. */
  waiters: Array<Deferred.Deferred<void>>
}

export interface Work {
  readonly state: State
}

export const make = (): Work => ({ state: { count: 0, waiters: [] } })

/** Tokens held now. */
export const count = (work: Work): number => work.state.count

/** Takes a token. */
export const acquire = (work: Work): void => {
  work.state.count++
}

/** Gives a token back; at zero, wakes whoever waits in `idle`. */
export const release = (work: Work): void => {
  const state = work.state
  state.count--
  if (state.count < 0) {
    // A bug in baton; counted (tests assert it never happens) rather than crashing a session.
    state.count = 0
    Diagnostics.tokenError()
  }
  if (state.count === 0 && state.waiters.length > 0) {
    const ready = state.waiters
    state.waiters = []
    for (const waiter of ready) Deferred.doneUnsafe(waiter, Effect.void)
  }
}

/** Holds a token while `effect` runs. */
export const track: {
  (work: Work): <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(effect: Effect.Effect<A, E, R>, work: Work): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(effect: Effect.Effect<A, E, R>, work: Work): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(Effect.sync(() => acquire(work)), () => effect, () => Effect.sync(() => release(work)))
)

/** Completes when no token is held. */
export const idle = (work: Work): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (work.state.count === 0) return Effect.void
    const waiter = Deferred.makeUnsafe<void>()
    work.state.waiters.push(waiter)
    return Effect.andThen(Deferred.await(waiter), idle(work))
  })
