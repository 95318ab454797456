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
  readonly startNext: Effect.Effect<void>
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

export const make = (host: SpeechHost): Speeches => {
  const work = host.core.work
  const queue: Array<Queued> = []
  type Playing = { readonly queued: Queued; fiber: Fiber.Fiber<void> | undefined }
  let current: Playing | undefined
  let interjection: Playing | undefined
  let waiters: Array<Deferred.Deferred<void>> = []

  /** A `say` queued while the playing speech waited for its tools may interject. */
  const interjects = (queued: Queued) => queued.speech.duringTools && queued.speech.handle.source === "say"

  const finish = (speech: Speech.Speech, outcome: Speech.SpeechOutcome) => {
    if (speech.phase === "done") return
    speech.phase = "done"
    Deferred.doneUnsafe(speech.done, Exit.succeed(outcome))
    const holdsToken = speech.holdsToken
    speech.holdsToken = false
    if (outcome._tag !== "Dropped") {
      host.core.emit({
        type: "speech_finished",
        agent: host.name,
        speechId: speech.handle.id,
        interrupted: outcome._tag === "Interrupted"
      })
    }
    if (holdsToken) work.release()
  }

  const dropQueued = (reason: string, onlyInterruptible: boolean, beforeTurn?: number) => {
    for (let i = queue.length - 1; i >= 0; i--) {
      const queued = queue[i]!
      if (onlyInterruptible && !queued.speech.allowInterruptions) continue
      if (beforeTurn !== undefined && queued.speech.userTurn >= beforeTurn) continue
      queue.splice(i, 1)
      finish(queued.speech, { _tag: "Dropped", reason })
    }
  }

  const enqueue: Speeches["enqueue"] = (source, options, body) => {
    const speech = Speech.make({
      agent: host.name,
      source,
      allowInterruptions: options.allowInterruptions ?? true,
      userTurn: host.core.userTurns(),
      interrupt: (s) => Effect.sync(() => host.interrupt(s))
    })
    speech.duringTools = current?.queued.speech.phase === "tools"
    work.acquire()
    host.core.emit({ type: "speech_created", agent: host.name, speechId: speech.handle.id, source })
    if (host.closed()) {
      finish(speech, { _tag: "Dropped", reason: `${host.name} is closed` })
      return speech.handle
    }
    queue.push({ speech, body })
    host.kick()
    return speech.handle
  }

  /** Stops an interjection as a playing speech is stopped (a barge-in, the floor passing). */
  const interruptInterjection = (force: boolean, beforeTurn?: number): Effect.Effect<void> =>
    Effect.suspend(() => {
      const entry = interjection
      if (!entry) return Effect.void
      const speech = entry.queued.speech
      if (!force && !speech.allowInterruptions) return Effect.void
      if (beforeTurn !== undefined && speech.userTurn >= beforeTurn) return Effect.void
      return (entry.fiber ? Fiber.interrupt(entry.fiber) : Effect.void).pipe(
        Effect.andThen(Effect.sync(() => {
          if (interjection === entry) interjection = undefined
          finish(speech, { _tag: "Interrupted" })
        }))
      )
    })

  const interruptCurrent = (force: boolean, beforeTurn?: number): Effect.Effect<void> =>
    Effect.andThen(interruptInterjection(force, beforeTurn), interruptPlaying(force, beforeTurn))

  const interruptPlaying = (force: boolean, beforeTurn?: number): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (!current) return Effect.void
      const speech = current.queued.speech
      if (!force && !speech.allowInterruptions) return Effect.void
      if (beforeTurn !== undefined && speech.userTurn >= beforeTurn) return Effect.void
      if (speech.phase === "tools") {
        if (!force) speech.skipFollowUp = true
        return Effect.void
      }
      const entry = current
      return (entry.fiber ? Fiber.interrupt(entry.fiber) : Effect.void).pipe(
        // A fiber interrupted before it ran never reaches its own handlers: settle it here.
        Effect.andThen(Effect.sync(() => {
          if (current === entry) current = undefined
          finish(speech, { _tag: "Interrupted" })
        }))
      )
    })

  const interruptOne = (speech: Speech.Speech): Effect.Effect<void> =>
    Effect.suspend(() => {
      const index = queue.findIndex((queued) => queued.speech === speech)
      if (index >= 0) {
        queue.splice(index, 1)
        finish(speech, { _tag: "Dropped", reason: "interrupted before it started" })
      }
      if (interjection?.queued.speech === speech) return interruptInterjection(true)
      return current?.queued.speech === speech ? interruptPlaying(true) : Effect.void
    })

  const outcomeOf = (exit: Exit.Exit<void, unknown>): Speech.SpeechOutcome =>
    Exit.isSuccess(exit)
      ? { _tag: "Finished" }
      : Cause.hasInterruptsOnly(exit.cause)
      ? { _tag: "Interrupted" }
      : failed(exit.cause)

  const startNext: Effect.Effect<void> = Effect.suspend(() => {
    if (!host.mayStart() || interjection) return Effect.void
    if (current) {
      if (current.queued.speech.phase !== "tools") return Effect.void
      const index = queue.findIndex(interjects)
      if (index < 0) return Effect.void
      const [next] = queue.splice(index, 1)
      return play(next!, true)
    }
    const next = queue.shift()
    if (!next) return Effect.void
    return play(next, false)
  })

  /** Starts `next` (called from `startNext`, inside its suspend). */
  const play = (next: Queued, asInterjection: boolean): Effect.Effect<void> => {
    // A playing speech always holds its token (a parked one gets it back here).
    if (!next.speech.holdsToken) {
      work.acquire()
      next.speech.holdsToken = true
    }
    const entry: Playing = { queued: next, fiber: undefined }
    if (asInterjection) interjection = entry
    else current = entry
    next.speech.phase = "generating"
    const end = (outcome: Speech.SpeechOutcome) =>
      Effect.andThen(
        outcome._tag === "Failed" && outcome.cause !== undefined
          ? Effect.logDebug(`reply of ${host.name} failed: ${outcome.cause}`)
          : Effect.void,
        Effect.sync(() => {
        if (outcome._tag === "Failed") {
          const info = outcome.info
          host.core.emit({
            type: "error",
            agent: host.name,
            source: "model",
            message: info?.message ?? outcome.message,
            reason: info?.reason,
            status: info?.status,
            retryable: info?.retryable,
            recoverable: true
          })
        }
        host.ended(next.speech)
        finish(next.speech, outcome)
      }))
    return next.body(next.speech).pipe(
      Effect.exit,
      // A reply that fails because the session is closing under it was cut, not broken.
      Effect.flatMap((exit) => end(host.core.closed() && Exit.isFailure(exit) ? { _tag: "Interrupted" } : outcomeOf(exit))),
      Effect.onInterrupt(() => end({ _tag: "Interrupted" })),
      Diagnostics.fiber,
      Effect.forkIn(host.scope, { startImmediately: true }),
      Effect.tap((fiber) =>
        Effect.sync(() => {
          entry.fiber = fiber
        })
      ),
      Effect.asVoid
    )
  }

  /** Waits out the interjection, and one queued to start (the actor's loop starts it next). */
  const interjected: Effect.Effect<void> = Effect.suspend(() => {
    const speaking = interjection?.queued.speech ?? (host.mayStart() ? queue.find(interjects)?.speech : undefined)
    if (!speaking) return Effect.void
    host.kick()
    return Deferred.await(speaking.done).pipe(Effect.andThen(interjected))
  })

  const isSettled = () =>
    interjection
      ? false
      : current
      ? current.queued.speech.phase === "tools" && !(host.mayStart() && queue.some(interjects))
      : queue.length === 0 || !host.mayStart()

  const self: Speeches = {
    enqueue,
    finish,
    dropQueued,
    interruptOne,
    interruptCurrent,
    startNext,
    ended: (speech) => {
      if (current?.queued.speech === speech) current = undefined
      if (interjection?.queued.speech === speech) interjection = undefined
    },
    current: () => current?.queued.speech ?? interjection?.queued.speech,
    queued: () => queue.length,
    interjected,
    interjecting: () => interjection !== undefined || (queue.length > 0 && host.mayStart() && queue.some(interjects)),
    settled: Effect.suspend(() => {
      if (isSettled()) return Effect.void
      const waiter = Deferred.makeUnsafe<void>()
      waiters.push(waiter)
      return Deferred.await(waiter)
    }),
    reconcile: (holdsFloor) => {
      for (const { speech } of queue) {
        if (holdsFloor && !speech.holdsToken) {
          work.acquire()
          speech.holdsToken = true
        } else if (!holdsFloor && speech.holdsToken) {
          speech.holdsToken = false
          work.release()
        }
      }
    },
    waiting: () => waiters.length > 0,
    notifySettled: () => {
      if (waiters.length === 0 || !isSettled()) return
      for (const waiter of waiters) Deferred.doneUnsafe(waiter, Effect.void)
      waiters = []
    }
  }
  return self
}
