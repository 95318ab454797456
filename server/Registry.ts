/**
 * The sessions a process holds: how many are open, the limit, and the drain. Admission reserves a
 * slot before the WebSocket upgrade (so the limit answers 503, not a half-open socket), held as
 * one resource until the session ends (`session`); each connection registers a closer the drain
 * completes when its deadline passes.
 */
import { Deferred, Effect, Option } from "effect"

export type Admission = "ok" | "full" | "draining"

export interface Registry {
  readonly admit: () => Admission
  readonly release: () => void
  readonly open: () => number
  readonly total: () => number
  readonly draining: () => boolean
  /** A connection's closer: completed with the reason when the drain's deadline passes. */
  readonly register: (closer: Deferred.Deferred<string>) => Effect.Effect<void>
  readonly unregister: (closer: Deferred.Deferred<string>) => Effect.Effect<void>
  /**
   * Stops admitting, lets open sessions finish for `deadlineMs`, then closes the rest and waits
   * (up to `graceMs`) for them to go.
   */
  readonly drain: (deadlineMs: number, graceMs?: number) => Effect.Effect<{ readonly finished: number; readonly closed: number }>
}

export const make = (maxSessions: number): Effect.Effect<Registry> =>
  Effect.gen(function*() {
    let open = 0
    let total = 0
    let draining = false
    const closers = new Set<Deferred.Deferred<string>>()
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
      register: (closer) => Effect.sync(() => void closers.add(closer)),
      unregister: (closer) => Effect.sync(() => void closers.delete(closer)),
      drain: (deadlineMs, graceMs = 5000) =>
        Effect.gen(function*() {
          draining = true
          const before = open
          yield* waitEmpty(deadlineMs)
          const left = open
          for (const closer of closers) Deferred.doneUnsafe(closer, Effect.succeed("the service is shutting down"))
          yield* waitEmpty(graceMs)
          return { finished: before - left, closed: left }
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
