/**
 * An actor's speeches: a queue and at most one playing. Only the actor's loop starts or stops
 * them; a speech's work token is held from the moment it is queued until it ends.
 *
 * One exception, the interjection: a `say` queued while the playing speech waits for its tools
 * ("One moment, connecting you to verification.") is spoken right away, while the tools run, so
 * that it is heard before what they lead to (an `AgentTask`'s first words, a handoff) rather than
 * after (rules 2 and 6). The waiting speech generates again only once the interjection ended,
 * and a batch that passes the floor passes it only then: one voice at a time, nothing lost.
 */
import { Cause, Deferred, Effect, Exit, Fiber, type Scope } from "effect"
import * as Diagnostics from "../Diagnostics.ts"
import * as ErrorInfo from "../ErrorInfo.ts"
import type { SessionCore } from "./SessionCore.ts"
import * as Speech from "../Speech.ts"


/** A failed speech: one line and a reason for the event; the whole cause goes to the debug log. */
const failed = (cause: Cause.Cause<unknown>): Speech.SpeechOutcome => {
  const info = ErrorInfo.fromCause(cause)
  return { _tag: "Failed", message: info.message, info, cause: Cause.pretty(cause) }
}

export interface SpeechHost {
  readonly name: string
  readonly core: SessionCore
  readonly scope: Scope.Scope
  /** Whether a queued speech may start now (the actor holds the floor, is active, ...). */
  readonly mayStart: () => boolean
  /** Whether the actor is closed (new speeches are dropped at once). */
  readonly closed: () => boolean
  /** Asks the actor's loop to interrupt `speech`. */
  readonly interrupt: (speech: Speech.Speech) => void
  /** Tells the actor's loop that the speech ended (so it can start the next one). */
  readonly ended: (speech: Speech.Speech) => void
  /** Wakes the actor's loop. */
  readonly kick: () => void
}

export interface Queued {
  readonly speech: Speech.Speech
  readonly body: (speech: Speech.Speech) => Effect.Effect<void, unknown>
}

export interface Speeches {
  readonly enqueue: (
    source: Speech.SpeechSource,
    options: { readonly allowInterruptions?: boolean | undefined },
    body: Queued["body"]
  ) => Speech.SpeechHandle
  /** Ends a speech as seen from outside (outcome, event, token); idempotent. */
  readonly finish: (speech: Speech.Speech, outcome: Speech.SpeechOutcome) => void
  /** Drops queued speeches (only those created before user turn `beforeTurn` when given). */
  readonly dropQueued: (reason: string, onlyInterruptible: boolean, beforeTurn?: number) => void
  /** Drops `speech` if queued, interrupts it if playing. */
  readonly interruptOne: (speech: Speech.Speech) => Effect.Effect<void>
  /** Stops the playing speech (see `interruptCurrent` in the actor). */
  readonly interruptCurrent: (force: boolean, beforeTurn?: number) => Effect.Effect<void>
  /** Starts the next queued speech if it may start; called on the step that runs it. */
  readonly startNext: () => Effect.Effect<void>
  readonly ended: (speech: Speech.Speech) => void
  /** The playing speech (the interjection, when the speech it interrupts has ended). */
  readonly current: () => Speech.Speech | undefined
  readonly queued: () => number
  /** Completes when no interjection is being spoken. */
  readonly interjected: Effect.Effect<void>
  /** Whether an interjection is being spoken or about to start (a cheap check before waiting). */
  readonly interjecting: () => boolean
  /** Completes when nothing is queued and nothing is being generated (see `Actor`). */
  readonly settled: Effect.Effect<void>
  readonly notifySettled: () => void
  /** Whether a flow waits for `settled`. */
  readonly waiting: () => boolean
  /**
   * Queued speeches hold work tokens only while their actor holds the floor: one waiting for
   * the floor to come back is not work the session can do now (rule 10).
   */
  readonly reconcile: (holdsFloor: boolean) => void
}

type Playing = { readonly queued: Queued; fiber: Fiber.Fiber<void, unknown> | undefined }

/** The speeches of one actor: the queue, the one playing, an interjection, those waiting. */
interface State {
  readonly host: SpeechHost
  readonly work: SessionCore["work"]
  readonly queue: Array<Queued>
  current: Playing | undefined
  interjection: Playing | undefined
  waiters: Array<Deferred.Deferred<void>>
}

export const make = (host: SpeechHost): Speeches => {
  const s: State = { host, work: host.core.work, queue: [], current: undefined, interjection: undefined, waiters: [] }
  const interjectedOnce: Effect.Effect<void> = Effect.suspend(() => interjected(s, interjectedOnce))
  return {
    enqueue: (source, options, body) => enqueue(s, source, options, body),
    finish: (speech, outcome) => finish(s, speech, outcome),
    dropQueued: (reason, onlyInterruptible, beforeTurn) => dropQueued(s, reason, onlyInterruptible, beforeTurn),
    interruptOne: (speech) => interruptOne(s, speech),
    interruptCurrent: (force, beforeTurn) => interruptCurrent(s, force, beforeTurn),
    startNext: () => startNext(s),
    ended: (speech) => {
      if (s.current?.queued.speech === speech) s.current = undefined
      if (s.interjection?.queued.speech === speech) s.interjection = undefined
    },
    current: () => s.current?.queued.speech ?? s.interjection?.queued.speech,
    queued: () => s.queue.length,
    interjected: interjectedOnce,
    interjecting: () => s.interjection !== undefined || (s.queue.length > 0 && host.mayStart() && s.queue.some(interjects)),
    settled: Effect.suspend(() => {
      if (isSettled(s)) return Effect.void
      const waiter = Deferred.makeUnsafe<void>()
      s.waiters.push(waiter)
      return Deferred.await(waiter)
    }),
    reconcile: (holdsFloor) => reconcile(s, holdsFloor),
    waiting: () => s.waiters.length > 0,
    notifySettled: () => {
      if (s.waiters.length === 0 || !isSettled(s)) return
      for (const waiter of s.waiters) Deferred.doneUnsafe(waiter, Effect.void)
      s.waiters = []
    }
  }
}

/** A `say` queued while the playing speech waited for its tools may interject. */
const interjects = (queued: Queued) => queued.speech.duringTools && queued.speech.handle.source === "say"

const finish = (s: State, speech: Speech.Speech, outcome: Speech.SpeechOutcome) => {
  if (speech.phase === "done") return
  speech.phase = "done"
  Deferred.doneUnsafe(speech.done, Exit.succeed(outcome))
  const holdsToken = speech.holdsToken
  speech.holdsToken = false
  if (outcome._tag !== "Dropped") {
    s.host.core.emit({
      type: "speech_finished",
      agent: s.host.name,
      speechId: speech.handle.id,
      interrupted: outcome._tag === "Interrupted"
    })
  }
  if (holdsToken) s.work.release()
}

const dropQueued = (s: State, reason: string, onlyInterruptible: boolean, beforeTurn?: number) => {
  for (let i = s.queue.length - 1; i >= 0; i--) {
    const queued = s.queue[i]!
    if (onlyInterruptible && !queued.speech.allowInterruptions) continue
    if (beforeTurn !== undefined && queued.speech.userTurn >= beforeTurn) continue
    s.queue.splice(i, 1)
    finish(s, queued.speech, { _tag: "Dropped", reason })
  }
}

const enqueue = (
  s: State,
  source: Speech.SpeechSource,
  options: { readonly allowInterruptions?: boolean | undefined },
  body: Queued["body"]
): Speech.SpeechHandle => {
  const host = s.host
  const speech = Speech.make({
    agent: host.name,
    source,
    allowInterruptions: options.allowInterruptions ?? true,
    userTurn: host.core.userTurns(),
    interrupt: (speech) => Effect.sync(() => host.interrupt(speech))
  })
  speech.duringTools = s.current?.queued.speech.phase === "tools"
  s.work.acquire()
  host.core.emit({ type: "speech_created", agent: host.name, speechId: speech.handle.id, source })
  if (host.closed()) {
    finish(s, speech, { _tag: "Dropped", reason: `${host.name} is closed` })
    return speech.handle
  }
  s.queue.push({ speech, body })
  host.kick()
  return speech.handle
}

/** Whether `speech` is cut by an interruption with these terms. */
const cuttable = (speech: Speech.Speech, force: boolean, beforeTurn: number | undefined) =>
  (force || speech.allowInterruptions) && (beforeTurn === undefined || speech.userTurn < beforeTurn)

/** Stops an interjection as a playing speech is stopped (a barge-in, the floor passing). */
const interruptInterjection = (s: State, force: boolean, beforeTurn?: number): Effect.Effect<void> =>
  Effect.suspend(() => {
    const entry = s.interjection
    if (!entry || !cuttable(entry.queued.speech, force, beforeTurn)) return Effect.void
    return (entry.fiber ? Fiber.interrupt(entry.fiber) : Effect.void).pipe(
      Effect.andThen(Effect.sync(() => {
        if (s.interjection === entry) s.interjection = undefined
        finish(s, entry.queued.speech, { _tag: "Interrupted" })
      }))
    )
  })

const interruptCurrent = (s: State, force: boolean, beforeTurn?: number): Effect.Effect<void> =>
  Effect.andThen(interruptInterjection(s, force, beforeTurn), interruptPlaying(s, force, beforeTurn))

const interruptPlaying = (s: State, force: boolean, beforeTurn?: number): Effect.Effect<void> =>
  Effect.suspend(() => {
    const entry = s.current
    if (!entry || !cuttable(entry.queued.speech, force, beforeTurn)) return Effect.void
    const speech = entry.queued.speech
    if (speech.phase === "tools") {
      if (!force) speech.skipFollowUp = true
      return Effect.void
    }
    return (entry.fiber ? Fiber.interrupt(entry.fiber) : Effect.void).pipe(
      // A fiber interrupted before it ran never reaches its own handlers: settle it here.
      Effect.andThen(Effect.sync(() => {
        if (s.current === entry) s.current = undefined
        finish(s, speech, { _tag: "Interrupted" })
      }))
    )
  })

const interruptOne = (s: State, speech: Speech.Speech): Effect.Effect<void> =>
  Effect.suspend(() => {
    const index = s.queue.findIndex((queued) => queued.speech === speech)
    if (index >= 0) {
      s.queue.splice(index, 1)
      finish(s, speech, { _tag: "Dropped", reason: "interrupted before it started" })
    }
    if (s.interjection?.queued.speech === speech) return interruptInterjection(s, true)
    return s.current?.queued.speech === speech ? interruptPlaying(s, true) : Effect.void
  })

const outcomeOf = (exit: Exit.Exit<void, unknown>): Speech.SpeechOutcome =>
  Exit.isSuccess(exit)
    ? { _tag: "Finished" }
    : Cause.hasInterruptsOnly(exit.cause)
    ? { _tag: "Interrupted" }
    : failed(exit.cause)

const startNext = (s: State): Effect.Effect<void> => {
  if (!s.host.mayStart() || s.interjection) return Effect.void
  if (s.current) {
    if (s.current.queued.speech.phase !== "tools") return Effect.void
    const index = s.queue.findIndex(interjects)
    if (index < 0) return Effect.void
    const [next] = s.queue.splice(index, 1)
    return play(s, next!, true)
  }
  const next = s.queue.shift()
  if (!next) return Effect.void
  return play(s, next, false)
}

/** Ends a speech that played: a failure said (one line; the cause to the debug log). */
/** Called on the speech's last step: ends it there, unless a failure's cause is logged first. */
const ended = (s: State, speech: Speech.Speech, outcome: Speech.SpeechOutcome): Effect.Effect<void> => {
  const end = () => {
    if (outcome._tag === "Failed") {
      const info = outcome.info
      s.host.core.emit({
        type: "error",
        agent: s.host.name,
        source: "model",
        message: info?.message ?? outcome.message,
        reason: info?.reason,
        status: info?.status,
        retryable: info?.retryable,
        recoverable: true
      })
    }
    s.host.ended(speech)
    finish(s, speech, outcome)
  }
  if (outcome._tag === "Failed" && outcome.cause !== undefined) {
    return Effect.andThen(Effect.logDebug(`reply of ${s.host.name} failed: ${outcome.cause}`), Effect.sync(end))
  }
  end()
  return Effect.void
}

/** Starts `next` (called from `startNext`, inside its suspend). */
const play = (s: State, next: Queued, asInterjection: boolean): Effect.Effect<void> => {
  // A playing speech always holds its token (a parked one gets it back here).
  if (!next.speech.holdsToken) {
    s.work.acquire()
    next.speech.holdsToken = true
  }
  const entry: Playing = { queued: next, fiber: undefined }
  if (asInterjection) s.interjection = entry
  else s.current = entry
  next.speech.phase = "generating"
  return next.body(next.speech).pipe(
    // However it ends (uninterruptibly): a reply that fails because the session is closing
    // under it was cut, not broken.
    Effect.onExit((exit) =>
      ended(s, next.speech, s.host.core.closed() && Exit.isFailure(exit) ? { _tag: "Interrupted" } : outcomeOf(exit))
    ),
    Effect.forkIn(s.host.scope, { startImmediately: true }),
    Effect.map((fiber) => {
      entry.fiber = Diagnostics.counted(fiber)
    })
  )
}

/** Waits out the interjection, and one queued to start (the actor's loop starts it next). */
const interjected = (s: State, again: Effect.Effect<void>): Effect.Effect<void> => {
  const speaking = s.interjection?.queued.speech ?? (s.host.mayStart() ? s.queue.find(interjects)?.speech : undefined)
  if (!speaking) return Effect.void
  s.host.kick()
  return Deferred.await(speaking.done).pipe(Effect.andThen(again))
}

const isSettled = (s: State) =>
  s.interjection
    ? false
    : s.current
    ? s.current.queued.speech.phase === "tools" && !(s.host.mayStart() && s.queue.some(interjects))
    : s.queue.length === 0 || !s.host.mayStart()

/**
 * Queued speeches hold work tokens only while their actor holds the floor: one waiting for the
 * floor to come back is not work the session can do now (rule 10).
 */
const reconcile = (s: State, holdsFloor: boolean) => {
  for (const { speech } of s.queue) {
    if (holdsFloor && !speech.holdsToken) {
      s.work.acquire()
      speech.holdsToken = true
    } else if (!holdsFloor && speech.holdsToken) {
      speech.holdsToken = false
      s.work.release()
    }
  }
}
