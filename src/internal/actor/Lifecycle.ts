/**
 * An actor's lifecycle as one tagged union, with one function per transition: the only writers
 * of `actor.lifecycle`. Transitions that do not apply to the current state leave it unchanged
 * (a refused handoff stops the passing of an actor that is passing, and of no other).
 *
 *   Starting ──activate──► Active ◄──stopPassing── Passing
 *                            │  └──startPassing──────►│
 *                            │                        │
 *                 deactivate ▼◄───────────────────────┘ deactivate
 *                  Paused (resumes with its context) or Closing (final)
 *                            │
 *               Scope closed ▼
 *                       Terminated (late messages get their answers; `flushed` once the
 *                       background reports it had pending are recorded)
 */

export type Lifecycle =
  /** Made, not activated yet. */
  | { readonly _tag: "Starting" }
  /** Activated: may hold the floor and speak. */
  | { readonly _tag: "Active" }
  /** The floor is being passed on (a handoff, a task lent or completed): nothing new starts
   * until the session has answered. */
  | { readonly _tag: "Passing" }
  /** Passed the floor; a later handoff back resumes it with its chat context. */
  | { readonly _tag: "Paused" }
  /** Deactivated for good; its Scope closes next. */
  | { readonly _tag: "Closing" }
  /** Its Scope has closed. */
  | { readonly _tag: "Terminated"; readonly flushed: boolean }

const STARTING: Lifecycle = { _tag: "Starting" }
const ACTIVE: Lifecycle = { _tag: "Active" }
const PASSING: Lifecycle = { _tag: "Passing" }
const PAUSED: Lifecycle = { _tag: "Paused" }
const CLOSING: Lifecycle = { _tag: "Closing" }

export const initial = STARTING

/** An actor, as far as its lifecycle goes: the field is written only by `set`, below. */
interface Holder {
  lifecycle: Lifecycle
}

const set = (actor: Holder, next: Lifecycle) => {
  actor.lifecycle = next
}

/** Active and not passing the floor: it may start speeches and take input. */
export const isActive = (actor: Holder): boolean => actor.lifecycle._tag === "Active"
export const isPassing = (actor: Holder): boolean => actor.lifecycle._tag === "Passing"
/** Deactivated for good or gone: it is never activated again. */
export const isClosed = (actor: Holder): boolean => actor.lifecycle._tag === "Closing" || actor.lifecycle._tag === "Terminated"
export const isTerminated = (actor: Holder): boolean => actor.lifecycle._tag === "Terminated"

/** The floor arrived (entered or resumed). */
export const activate = (actor: Holder): void => {
  if (actor.lifecycle._tag === "Starting" || actor.lifecycle._tag === "Paused") set(actor, ACTIVE)
}

/** The actor asked for the floor to move (a handoff, a task, a completion). */
export const startPassing = (actor: Holder): void => {
  if (actor.lifecycle._tag === "Active") set(actor, PASSING)
}

/** The move was refused, or the floor was lent and the actor waits: it is active again. */
export const stopPassing = (actor: Holder): void => {
  if (actor.lifecycle._tag === "Passing") set(actor, ACTIVE)
}

/** The floor left: paused until a handoff back, or closing for good. */
export const deactivate = (actor: Holder, final: boolean): void => {
  if (actor.lifecycle._tag !== "Terminated") set(actor, final ? CLOSING : PAUSED)
}

/** The actor's Scope closed. */
export const terminate = (actor: Holder): void => set(actor, { _tag: "Terminated", flushed: false })

/** What was pending at close has been recorded: later reports are recorded at once. */
export const flushed = (actor: Holder): void => set(actor, { _tag: "Terminated", flushed: true })
