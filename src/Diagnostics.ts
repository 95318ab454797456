/**
 * Live counts of what baton has running in this process: sessions, actors, the Scopes they own
 * and the fibers baton forked. All return to zero when every session is closed (rule 11).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, type Fiber, Scope } from "effect"

/**
 * Live sessions, actors, scopes and fibers, and work-token errors: what the simulation checks for
 * leaks after a run.
 *
 * @since 0.1.0
 * @category models
 */
export interface Counts {
  readonly sessions: number
  readonly actors: number
  readonly scopes: number
  readonly fibers: number
  /** Work tokens released more often than acquired: always 0 unless baton has a bug. */
  readonly tokenErrors: number
}

const counts = { sessions: 0, actors: 0, scopes: 0, fibers: 0, tokenErrors: 0 }

/** Where the last work token was released twice: the stack of that release, for the failure
 * the test suite reports (test/setup/tokens.ts). */
let lastTokenError: string | undefined

/**
 * Records a work token released more often than acquired (a baton bug; the test setup fails the
 * test that did it).
 *
 * @since 0.1.0
 * @category utils
 */
export const tokenError = () => {
  counts.tokenErrors++
  lastTokenError = new Error("a work token was released twice").stack
}

/**
 * The stack of the last double release, if any.
 *
 * @since 0.1.0
 * @category utils
 */
export const lastTokenErrorStack = (): string | undefined => lastTokenError

/**
 * The counts now.
 *
 * @since 0.1.0
 * @category utils
 */
export const snapshot = (): Counts => ({ ...counts })

/**
 * `Effect.forkIn`, with the forked fiber counted as live until it ends: an observer on the
 * fiber rather than a wrapper around its body, three fewer interpreter steps per fiber (a
 * handoff starts three).
 *
 * @since 0.1.0
 * @category utils
 */
export const forkIn = (scope: Scope.Scope, options?: { readonly startImmediately?: boolean | undefined }) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<Fiber.Fiber<A, E>, never, R> =>
  Effect.map(Effect.forkIn(effect, scope, options), counted)

/** `forkIn` for a caller that keeps no handle on the fiber: counted, and one step fewer than
 * `forkIn` then `Effect.asVoid`.
 *
 * @since 0.1.0
 * @category utils
 */
export const startIn = (scope: Scope.Scope, options?: { readonly startImmediately?: boolean | undefined }) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<void, never, R> =>
  Effect.map(Effect.forkIn(effect, scope, options), countedVoid)

const countedVoid = (fiber: Fiber.Fiber<unknown, unknown>): void => {
  counted(fiber)
}

/** Counts `fiber` as live until it ends; for a caller that goes on from `Effect.forkIn` with a
 * step of its own anyway (one step fewer than `forkIn` then a step).
 *
 * @since 0.1.0
 * @category utils
 */
export const counted = <A, E>(fiber: Fiber.Fiber<A, E>): Fiber.Fiber<A, E> => {
  counts.fibers++
  fiber.addObserver(fiberEnded)
  return fiber
}

const fiberEnded = () => {
  counts.fibers--
}

/**
 * Counts `effect` as a live fiber while it runs (for an effect that is not a fiber's whole body).
 *
 * @since 0.1.0
 * @category utils
 */
export const fiber = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    counts.fibers++
    return effect.pipe(Effect.ensuring(Effect.sync(() => void counts.fibers--)))
  })

/**
 * A child scope of `parent`, counted until it closes.
 *
 * @since 0.1.0
 * @category utils
 */
export const forkScope = (parent: Scope.Scope, kind: "sessions" | "actors"): Effect.Effect<Scope.Closeable> =>
  Effect.suspend(() => {
    const { scope, onClose } = forkScopeUnsafe(parent, kind)
    return Effect.as(onClose(Effect.void), scope)
  })

/**
 * `forkScope` on the caller's step: the child scope now, counted, and `onClose`, which adds the
 * scope's one finalizer of this kind (`finalizer`, then the count goes down). Its owner can then
 * build itself around the scope and add its own finalizer in the same step.
 *
 * @since 0.1.0
 * @category utils
 */
export const forkScopeUnsafe = (
  parent: Scope.Scope,
  kind: "sessions" | "actors"
): { readonly scope: Scope.Closeable; readonly onClose: (finalizer: Effect.Effect<void>) => Effect.Effect<void> } => {
  const scope = Scope.forkUnsafe(parent)
  counts.scopes++
  counts[kind]++
  const uncount = Effect.sync(() => {
    counts.scopes--
    counts[kind]--
  })
  return { scope, onClose: (finalizer) => Scope.addFinalizer(scope, Effect.ensuring(finalizer, uncount)) }
}
