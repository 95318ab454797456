/**
 * An actor's speeches: a queue and at most one playing, with the interjections said over it
 * (speeches/Interjections.ts). Only the actor's loop starts or stops them; a speech's work token
 * is held from the moment it is queued until it ends (a flow waiting for one parks its own on
 * it: speeches/Parking.ts).
 *
 * A record and functions over it (docs/patterns.md): `Speeches.make(config)` once per actor,
 * then `Speeches.enqueue(speeches, ...)`, `Speeches.startNext(speeches)` and the like.
 */
import { Cause, Deferred, Effect, Exit } from "effect"
import * as Diagnostics from "../Diagnostics.ts"
import * as ErrorInfo from "../ErrorInfo.ts"
import * as Speech from "../Speech.ts"
import { waitFor } from "./speeches/Parking.ts"
import { anyInToolPhase, entryOf, finish, interjectsOver, type Playing, type Queued, removePlaying, type Speeches, top } from "./speeches/State.ts"
import * as Work from "./Work.ts"

export { interjectedOver, interjectingOver, startPassing, under } from "./speeches/Interjections.ts"
import { cuttable, type InterruptOptions } from "./speeches/Interrupt.ts"
export { interruptCurrent, type InterruptOptions, interruptOne } from "./speeches/Interrupt.ts"
export { awaitEnd } from "./speeches/Parking.ts"
export { type Config, finish, make, type Queued, type Speeches } from "./speeches/State.ts"

export interface EnqueueOptions {
  readonly allowInterruptions?: boolean | undefined
  /** A reply asked by a tool call while its batch runs: it may interject (a `say` always may). */
  readonly byTool?: boolean | undefined
}

/** Queues a speech (holding a work token until it ends); dropped at once if the actor closed. */
export const enqueue = (
  speeches: Speeches,
  source: Speech.SpeechSource,
  options: EnqueueOptions,
  body: Queued["body"]
): Speech.SpeechHandle => {
  const config = speeches.config
  const speech = Speech.make({
    agent: config.name,
    source,
    allowInterruptions: options.allowInterruptions ?? true,
    userTurn: config.core.userTurns(),
    overTools: (source === "say" || (source === "generate_reply" && options.byTool === true)) && anyInToolPhase(speeches.state),
    interrupt: (speech) => Effect.sync(() => config.interrupt(speech)),
    wait: (speech) => waitFor(speeches, speech)
  })
  Work.acquire(config.work)
  config.core.emit({ type: "speech_created", agent: config.name, speechId: speech.handle.id, source })
  if (config.closed()) {
    finish(speeches, speech, { _tag: "Dropped", reason: `${config.name} is closed` })
    return speech.handle
  }
  speeches.state.queue.push({ speech, body })
  config.kick()
  return speech.handle
}

/** Drops the queued speeches the options cut (as `interruptCurrent` cuts the playing ones). */
export const dropQueued = (speeches: Speeches, reason: string, options: InterruptOptions): void => {
  const queue = speeches.state.queue
  for (let i = queue.length - 1; i >= 0; i--) {
    const queued = queue[i]!
    if (!cuttable(queued.speech, options)) continue
    queue.splice(i, 1)
    finish(speeches, queued.speech, { _tag: "Dropped", reason })
  }
}

/** The playing speech (the interjection, when the speech it interrupts has ended). */
export const current = (speeches: Speeches): Speech.Speech | undefined =>
  speeches.state.current?.queued.speech ?? speeches.state.interjections[0]?.queued.speech

export const queued = (speeches: Speeches): number => speeches.state.queue.length

/** The speech's fiber ended (the actor's loop heard it): it leaves the stack. */
export const ended = (speeches: Speeches, speech: Speech.Speech): void => {
  const entry = entryOf(speeches.state, speech)
  if (entry) removePlaying(speeches.state, entry)
}

/** Ends a playing speech before its fiber does (it leaves the stack now; see ToolBatch's
 * `passAfter`). */
export const finishEarly = (speeches: Speeches, speech: Speech.Speech, outcome: Speech.SpeechOutcome): void => {
  ended(speeches, speech)
  finish(speeches, speech, outcome)
}

/** Starts the next queued speech if it may start; called on the step that runs it. */
export const startNext = (speeches: Speeches): Effect.Effect<void> => {
  if (!speeches.config.mayStart()) return Effect.void
  const queue = speeches.state.queue
  const playing = top(speeches.state)
  if (playing) {
    const index = queue.findIndex(interjectsOver(playing.queued.speech))
    if (index < 0) return Effect.void
    const [next] = queue.splice(index, 1)
    return play(speeches, next!, { asInterjection: true })
  }
  const next = queue.shift()
  if (!next) return Effect.void
  return play(speeches, next, { asInterjection: false })
}

/** A failed speech: one line and a reason for the event; the whole cause goes to the debug log. */
const failed = (cause: Cause.Cause<unknown>): Speech.SpeechOutcome => {
  const info = ErrorInfo.fromCause(cause)
  return { _tag: "Failed", message: info.message, info, cause: Cause.pretty(cause) }
}

const outcomeOf = (exit: Exit.Exit<void, unknown>): Speech.SpeechOutcome =>
  Exit.isSuccess(exit)
    ? { _tag: "Finished" }
    : Cause.hasInterruptsOnly(exit.cause)
    ? { _tag: "Interrupted" }
    : failed(exit.cause)

/** Called on the speech's last step: ends it there (a failure said in one line), unless a
 * failure's cause is logged first. */
const playEnded = (speeches: Speeches, speech: Speech.Speech, outcome: Speech.SpeechOutcome): Effect.Effect<void> => {
  const config = speeches.config
  const end = () => {
    if (outcome._tag === "Failed") {
      const info = outcome.info
      config.core.emit({
        type: "error",
        agent: config.name,
        source: "model",
        message: info?.message ?? outcome.message,
        reason: info?.reason,
        status: info?.status,
        retryable: info?.retryable,
        recoverable: true
      })
    }
    config.ended(speech)
    finish(speeches, speech, outcome)
  }
  if (outcome._tag === "Failed" && outcome.cause !== undefined) {
    return Effect.andThen(Effect.logDebug(`reply of ${config.name} failed: ${outcome.cause}`), Effect.sync(end))
  }
  end()
  return Effect.void
}

/** Starts `next` (called from `startNext`, on its step). */
const play = (speeches: Speeches, next: Queued, { asInterjection }: { readonly asInterjection: boolean }): Effect.Effect<void> => {
  const { config, state } = speeches
  // A playing speech always holds its token (a parked one gets it back here).
  if (!Speech.holdsToken(next.speech)) Work.acquire(config.work)
  const entry: Playing = { queued: next, fiber: undefined }
  if (asInterjection) state.interjections.push(entry)
  else state.current = entry
  Speech.generate(next.speech)
  return next.body(next.speech).pipe(
    // However it ends (uninterruptibly): a reply that fails because the session is closing
    // under it was cut, not broken.
    Effect.onExit((exit) =>
      playEnded(speeches, next.speech, config.core.closed() && Exit.isFailure(exit) ? { _tag: "Interrupted" } : outcomeOf(exit))
    ),
    Effect.forkIn(config.scope, { startImmediately: true }),
    Effect.map((fiber) => {
      entry.fiber = Diagnostics.counted(fiber)
    })
  )
}

/** Nothing generating: every playing speech waits for its tools and none may interject, or
 * nothing plays and nothing queued may start. */
const isSettled = (speeches: Speeches): boolean => {
  const s = speeches.state
  return s.current || s.interjections.length > 0
    ? (!s.current || Speech.waitsOnCalls(s.current.queued.speech)) &&
      s.interjections.every((entry) => Speech.waitsOnCalls(entry.queued.speech)) &&
      !(speeches.config.mayStart() && s.queue.some(interjectsOver(top(s)!.queued.speech)))
    : s.queue.length === 0 || !speeches.config.mayStart()
}

/** Completes when nothing is queued and nothing is being generated (see `Actor`). */
export const settled = (speeches: Speeches): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (isSettled(speeches)) return Effect.void
    const waiter = Deferred.makeUnsafe<void>()
    speeches.state.waiters.push(waiter)
    // What it waits for may be a speech about to interject: the loop starts it.
    speeches.config.kick()
    return Deferred.await(waiter)
  })

/** Whether a flow waits for `settled`. */
export const waiting = (speeches: Speeches): boolean => speeches.state.waiters.length > 0

/** Wakes the flows waiting for `settled`, if it holds now. */
export const notifySettled = (speeches: Speeches): void => {
  const s = speeches.state
  if (s.waiters.length === 0 || !isSettled(speeches)) return
  for (const waiter of s.waiters) Deferred.doneUnsafe(waiter, Effect.void)
  s.waiters = []
}

/**
 * Queued speeches hold work tokens only while their actor holds the floor: one waiting for the
 * floor to come back is not work the session can do now (rule 10).
 */
export const reconcile = (speeches: Speeches, holdsFloor: boolean): void => {
  const work = speeches.config.work
  for (const { speech } of speeches.state.queue) {
    const held = Speech.holdsToken(speech)
    if (holdsFloor && !held) {
      Work.acquire(work)
      Speech.setToken(speech, true)
    } else if (!holdsFloor && held) {
      Speech.setToken(speech, false)
      Work.release(work)
    }
  }
}
