/**
 * Quiescence tracking for `session.run()` (rule 10).
 *
 * Every unit of foreground work holds one token while it can still make progress: a message in
 * a mailbox, a queued or playing speech, a running hook, a tool call of a batch. Work that
 * spawns work acquires the new token before releasing its own, so the count only reaches zero
 * when nothing is left to do. A flow that waits for the user (an `AgentTask` awaited by a hook or
 * a tool) gives its token up while it waits, and whoever wakes it acquires one for it *before*
 * waking it: there is no gap in which the session looks idle while a wake-up is in flight.
 */
import { Deferred, Effect } from "effect"
import * as Diagnostics from "../Diagnostics.ts"

export interface Work {
  /** Tokens held now. */
  readonly count: () => number
  readonly acquire: () => void
  readonly release: () => void
  /** Holds a token while `effect` runs. */
  readonly track: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Completes when no token is held. */
  readonly idle: Effect.Effect<void>
}

export const make = (): Work => {
  let count = 0
  let waiters: Array<Deferred.Deferred<void>> = []
  const acquire = () => {
    count++
  }
  const release = () => {
    count--
    if (count < 0) {
      // A bug in baton; counted (tests assert it never happens) rather than crashing a session.
      count = 0
      Diagnostics.tokenError()
    }
    if (count === 0 && waiters.length > 0) {
      const ready = waiters
      waiters = []
      for (const waiter of ready) Deferred.doneUnsafe(waiter, Effect.void)
    }
  }
  const idle: Effect.Effect<void> = Effect.suspend(() => {
    if (count === 0) return Effect.void
    const waiter = Deferred.makeUnsafe<void>()
    waiters.push(waiter)
    return Deferred.await(waiter).pipe(Effect.andThen(idle))
  })
  return {
    count: () => count,
    acquire,
    release,
    track: (effect) =>
      Effect.acquireUseRelease(Effect.sync(acquire), () => effect, () => Effect.sync(release)),
    idle
  }
}
