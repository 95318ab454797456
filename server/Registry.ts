/**
 * The sessions a process holds: how many are open, the limit, and the drain. Admission reserves a
 * slot before the WebSocket upgrade (so the limit answers 503, not a half-open socket), held as
 * one resource until the session ends (`session`); each connection registers a closer the drain
 * completes when its deadline passes. Two calls are admitted elsewhere, each once for its life: a
 * /twilio stream's call at its `start` message, which alone says whether it is new (Twilio.ts),
 * and a call restored from the store (Server.ts); a client back to a live call takes no slot.
 */
import { Deferred, Effect, Option } from "effect"

export type Admission = "ok" | "full" | "draining"

export interface Registry {
  readonly admit: () => Admission
  readonly release: () => void
  readonly open: () => number
  readonly total: () => number
  readonly draining: () => boolean
  /**
   * A session's closer: completed with the reason when the drain's deadline passes. `move`, for a
   * session whose client can come back on another node: tells it to, and says whether it did.
   */
  readonly register: (closer: Deferred.Deferred<string>, move?: Effect.Effect<boolean>) => Effect.Effect<void>
  readonly unregister: (closer: Deferred.Deferred<string>) => Effect.Effect<void>
  /**
   * Stops admitting, lets open sessions finish for `deadlineMs`, then closes the rest and waits
   * (up to `graceMs`) for them to go. With `move` (sessions are in a durable store), the sessions
   * that can move are moved at once; the others (phone lines) have the deadline.
   */
  readonly drain: (deadlineMs: number, graceMs?: number, options?: { readonly move?: boolean }) => Effect.Effect<Drained>
}

export interface Drained {
  readonly finished: number
  readonly closed: number
  /** Told to reconnect to another node. */
  readonly moved: number
}

export const make = (maxSessions: number): Effect.Effect<Registry> =>
  Effect.gen(function*() {
    let open = 0
    let total = 0
    let draining = false
    const closers = new Map<Deferred.Deferred<string>, Effect.Effect<boolean> | undefined>()
    let empty = yield* Deferred.make<void>()
    const signalIfEmpty = () => {
      if (open === 0) Deferred.doneUnsafe(empty, Effect.void)
    }
    const waitEmpty = (ms: number) =>
      Effect.suspend(() => (open === 0 ? Effect.succeed(true) : Deferred.await(empty).pipe(Effect.as(true)))).pipe(
        Effect.timeoutOption(ms),
        Effect.map(Option.isSome)
      )
    return {
      admit: () => {
        if (draining) return "draining"
        if (open >= maxSessions) return "full"
        if (open === 0) empty = Deferred.makeUnsafe<void>()
        open++
        total++
        return "ok"
      },
      release: () => {
        open = Math.max(0, open - 1)
        signalIfEmpty()
      },
      open: () => open,
      total: () => total,
      draining: () => draining,
      register: (closer, move) => Effect.sync(() => void closers.set(closer, move)),
      unregister: (closer) => Effect.sync(() => void closers.delete(closer)),
      drain: (deadlineMs, graceMs = 5000, options = {}) =>
        Effect.gen(function*() {
          draining = true
          const before = open
          let moved = 0
          if (options.move) {
            for (const move of [...closers.values()]) if (move && (yield* move)) moved++
          }
          yield* waitEmpty(deadlineMs)
          const left = open
          for (const closer of closers.keys()) Deferred.doneUnsafe(closer, Effect.succeed("the service is shutting down"))
          yield* waitEmpty(graceMs)
          return { finished: Math.max(0, before - left - moved), closed: left, moved }
        })
    }
  })

/** How one upgrade request becomes a session in a slot of the registry. */
export interface InSlot<S, A, E1, E2, R1, R2> {
  /** The answer when no slot is free, or the service is draining. */
  readonly refused: (why: "full" | "draining") => Effect.Effect<A>
  /** The WebSocket upgrade. */
  readonly upgrade: Effect.Effect<S, E1, R1>
  /** The session on the upgraded socket, until it ends. */
  readonly serve: (socket: S) => Effect.Effect<A, E2, R2>
}

/**
 * Admits, upgrades and serves with the slot as one resource: taken at admission, given back once
 * however the rest ends (the upgrade failing, the session ending, an interruption at any step).
 */
export const session = <S, A, E1, E2, R1, R2>(registry: Registry, steps: InSlot<S, A, E1, E2, R1, R2>): Effect.Effect<A, E1 | E2, R1 | R2> =>
  Effect.acquireUseRelease(
    Effect.sync(() => registry.admit()),
    (admission) => (admission === "ok" ? Effect.flatMap(steps.upgrade, steps.serve) : steps.refused(admission)),
    (admission) => (admission === "ok" ? Effect.sync(() => registry.release()) : Effect.void)
  )
