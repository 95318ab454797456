/**
 * The LiveKit worker's state as one record, written only by the functions here (the worker's
 * fibers call them; nothing else assigns a field). The connection to the server's dispatch is a
 * tagged union, one function per transition:
 *
 *   Connecting ──opened──► Open ──registered──► Registered
 *       ▲                   │                      │
 *       └──── Waiting ◄─────┴───────lost───────────┘      (any) ──closed──► Closed
 *             (the backoff's delay, until a time on the Clock)
 *
 * and the drain is a second, smaller one (`Serving` → `Draining`). Times are the `Clock`'s
 * milliseconds, so a `TestClock` drives them. Problems with what the server sent are kept
 * bounded: the last `PROBLEMS_KEPT`, and a count of the older ones.
 */
import type { Fiber, Queue } from "effect"

/**
 * The connection to the server's dispatch. `outbox` is the open socket's queue of frames to
 * send; a state without one has no socket, and what is sent then is dropped (the server hears
 * the worker's state again when it registers).
 *
 * @since 0.1.0
 * @category models
 */
export type Connection =
  /** Dialing (attempt `attempt` since the last registration). */
  | { readonly _tag: "Connecting"; readonly attempt: number }
  /** The socket is open and the registration sent; no answer yet. */
  | { readonly _tag: "Open"; readonly attempt: number; readonly outbox: Queue.Queue<Uint8Array> }
  /** The server registered the worker as `workerId` at `since`. */
  | { readonly _tag: "Registered"; readonly workerId: string; readonly since: number; readonly outbox: Queue.Queue<Uint8Array> }
  /** Lost (`why`): the next attempt is at `until`, after the backoff's delay. */
  | { readonly _tag: "Waiting"; readonly attempt: number; readonly until: number; readonly why: string }
  /** The worker has left (its Scope closed). */
  | { readonly _tag: "Closed" }

/**
 * Whether the worker takes jobs: `Draining` from its Scope starting to close (no new jobs).
 *
 * @since 0.1.0
 * @category models
 */
export type Drain = { readonly _tag: "Serving" } | { readonly _tag: "Draining"; readonly since: number }

/**
 * How many recent problems the state keeps; older ones are only counted.
 *
 * @since 0.1.0
 * @category constants
 */
export const PROBLEMS_KEPT = 20

/**
 * The worker's state.
 *
 * @since 0.1.0
 * @category models
 */
export interface State {
  readonly connection: Connection
  readonly drain: Drain
  /** The id of the last registration (kept while reconnecting). */
  readonly workerId: string | undefined
  readonly registrations: number
  readonly accepted: number
  readonly refused: number
  readonly pingMs: number | undefined
  /** The last `PROBLEMS_KEPT` problems, most recent last, and how many older ones were dropped. */
  readonly problems: ReadonlyArray<string>
  readonly olderProblems: number
  /** Jobs this worker said it would take, by id, and when: only these may be assigned (for a minute). */
  readonly awaiting: ReadonlyMap<string, number>
  readonly jobs: ReadonlyMap<string, Fiber.Fiber<void>>
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }
const write = (state: State): Mutable<State> => state as Mutable<State>

/** How long an accepted job may wait for its assignment. */
const AWAIT_ASSIGNMENT_MS = 60_000

/**
 * A worker that has not connected yet.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): State => ({
  connection: { _tag: "Connecting", attempt: 1 },
  drain: { _tag: "Serving" },
  workerId: undefined,
  registrations: 0,
  accepted: 0,
  refused: 0,
  pingMs: undefined,
  problems: [],
  olderProblems: 0,
  awaiting: new Map(),
  jobs: new Map()
})

// --- the connection's transitions (none leaves Closed) ---

/**
 * Dialing again.
 *
 * @since 0.1.0
 * @category transitions
 */
export const connecting = (state: State, attempt: number): void => {
  if (state.connection._tag !== "Closed") write(state).connection = { _tag: "Connecting", attempt }
}

/**
 * The socket opened; frames to send go to `outbox`.
 *
 * @since 0.1.0
 * @category transitions
 */
export const opened = (state: State, outbox: Queue.Queue<Uint8Array>): void => {
  if (state.connection._tag === "Connecting") write(state).connection = { _tag: "Open", attempt: state.connection.attempt, outbox }
}

/**
 * The server registered the worker.
 *
 * @since 0.1.0
 * @category transitions
 */
export const registered = (state: State, workerId: string, now: number): void => {
  if (state.connection._tag !== "Open" && state.connection._tag !== "Registered") return
  const s = write(state)
  s.connection = { _tag: "Registered", workerId, since: now, outbox: state.connection.outbox }
  s.workerId = workerId
  s.registrations++
}

/**
 * The connection was lost (or never opened): the next attempt is at `until`.
 *
 * @since 0.1.0
 * @category transitions
 */
export const waiting = (state: State, attempt: number, until: number, why: string): void => {
  if (state.connection._tag !== "Closed") write(state).connection = { _tag: "Waiting", attempt, until, why }
}

/**
 * The worker left: final.
 *
 * @since 0.1.0
 * @category transitions
 */
export const closed = (state: State): void => {
  write(state).connection = { _tag: "Closed" }
}

/**
 * The socket frames go to, if there is one.
 *
 * @since 0.1.0
 * @category getters
 */
export const outbox = (state: State): Queue.Queue<Uint8Array> | undefined =>
  state.connection._tag === "Open" || state.connection._tag === "Registered" ? state.connection.outbox : undefined

// --- the drain ---

/**
 * The Scope started closing: no new jobs from now on.
 *
 * @since 0.1.0
 * @category transitions
 */
export const startDrain = (state: State, now: number): void => {
  if (state.drain._tag === "Serving") write(state).drain = { _tag: "Draining", since: now }
}

/**
 * Whether the worker is draining.
 *
 * @since 0.1.0
 * @category getters
 */
export const isDraining = (state: State): boolean => state.drain._tag === "Draining"

// --- what the server sent ---

/**
 * Records a problem with what the server sent, keeping the last `PROBLEMS_KEPT`.
 *
 * @since 0.1.0
 * @category transitions
 */
export const problem = (state: State, text: string): void => {
  const s = write(state)
  const kept = [...state.problems, text]
  const over = kept.length - PROBLEMS_KEPT
  s.problems = over > 0 ? kept.slice(over) : kept
  if (over > 0) s.olderProblems += over
}

/**
 * The worker answered an offer of `jobId`: accepted (it may be assigned) or refused.
 *
 * @since 0.1.0
 * @category transitions
 */
export const answered = (state: State, jobId: string, accepted: boolean, now: number): void => {
  const s = write(state)
  if (accepted) {
    s.accepted++
    ;(state.awaiting as Map<string, number>).set(jobId, now)
  } else s.refused++
}

/**
 * Why an assignment of `jobId` is not started, or undefined when it is one this worker accepted
 * (which it then stops awaiting; acceptances older than a minute are forgotten).
 *
 * @since 0.1.0
 * @category transitions
 */
export const assignmentRefusal = (state: State, jobId: string, now: number): string | undefined => {
  const awaiting = state.awaiting as Map<string, number>
  const acceptedAt = awaiting.get(jobId)
  awaiting.delete(jobId)
  for (const [id, at] of awaiting) if (now - at > AWAIT_ASSIGNMENT_MS) awaiting.delete(id)
  if (isDraining(state)) return `the worker is draining: job ${jobId} is not started`
  if (state.jobs.has(jobId)) return `job ${jobId} is already running here`
  if (acceptedAt === undefined) return `an assignment for job ${jobId}, which this worker did not accept`
  if (now - acceptedAt > AWAIT_ASSIGNMENT_MS) return `an assignment for job ${jobId} more than a minute after this worker accepted it`
  return undefined
}

/**
 * A job started (its fiber) or ended.
 *
 * @since 0.1.0
 * @category transitions
 */
export const jobStarted = (state: State, jobId: string, fiber: Fiber.Fiber<void>): void => {
  ;(state.jobs as Map<string, Fiber.Fiber<void>>).set(jobId, fiber)
}

/**
 * A job ended.
 *
 * @since 0.1.0
 * @category transitions
 */
export const jobEnded = (state: State, jobId: string): void => {
  ;(state.jobs as Map<string, Fiber.Fiber<void>>).delete(jobId)
}

/**
 * The server answered a ping sent at `sentAt`.
 *
 * @since 0.1.0
 * @category transitions
 */
export const pong = (state: State, sentAt: number, now: number): void => {
  write(state).pingMs = now - sentAt
}
