/**
 * Session observers: what watches every session the process starts (the event recorder, the
 * metrics, the traces) without the runtime knowing about any of them. `AgentSession.start`
 * calls each observer of the context once, before the session takes its first message, with
 * the Scope the session lives in; an observer reads the session through its public API (its
 * event stream) and keeps what it forks in that Scope.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Effect, Layer, type Scope } from "effect"
import type { AgentSession } from "./AgentSession.ts"

/**
 * Something that watches each session started in its context (metrics, traces, a recorder): a name
 * and what it runs for a session, in the session's Scope.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionObserver {
  readonly name: string
  readonly observe: (session: AgentSession<unknown>) => Effect.Effect<void, never, Scope.Scope>
}

/**
 * The observers of the sessions started in this context (none by default).
 *
 * @since 0.1.0
 * @category services
 */
export const SessionObservers = Context.Reference<ReadonlyArray<SessionObserver>>("baton/SessionObservers", {
  defaultValue: () => []
})

/**
 * Adds `observers` to those of the context it is built in (the ones provided further out are
 * kept). Layers of observers chain (`Layer.provideMerge`); merged side by side, each would
 * start from the same list and one would win.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (...observers: ReadonlyArray<SessionObserver>): Layer.Layer<never> =>
  Layer.effect(
    SessionObservers,
    Effect.gen(function*() {
      return [...(yield* SessionObservers), ...observers]
    })
  )

/**
 * Runs every observer of the context on `session` (called by `AgentSession.start`).
 *
 * @since 0.1.0
 * @category utils
 */
export const observeAll = (session: AgentSession<unknown>): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    for (const observer of yield* SessionObservers) yield* observer.observe(session)
  })
