/**
 * Interrupting speeches: a queued one is dropped; a generating one is cut (its fiber
 * interrupted); the words said before tool calls end; a speech running its tools only loses its
 * follow-up (tool calls are never cut in half).
 */
import { Effect, Fiber } from "effect"
import * as Speech from "../../Speech.ts"
import { entryOf, finish, type Playing, removePlaying, type Speeches, stack } from "./State.ts"

/** Which speeches an interruption cuts. */
export interface InterruptOptions {
  /** Also those that do not allow interruptions (the floor passing, the actor closing); not
   * given: only those that do (the user barging in). */
  readonly force?: boolean | undefined
  /** Only those created before this user turn. */
  readonly beforeTurn?: number | undefined
}

const forced: InterruptOptions = { force: true }

/** Whether `speech` is cut by an interruption with these terms. */
export const cuttable = (speech: Speech.Speech, options: InterruptOptions): boolean =>
  (options.force === true || speech.allowInterruptions) &&
  (options.beforeTurn === undefined || speech.userTurn < options.beforeTurn)

/** Stops the playing speeches, top first (a barge-in, the floor passing); with `beforeTurn`,
 * only those older than that user turn. */
export const interruptCurrent = (speeches: Speeches, options: InterruptOptions): Effect.Effect<void> =>
  Effect.suspend(() => {
    const s = speeches.state
    if (s.interjections.length === 0) return s.current ? interruptPlaying(speeches, s.current, options) : Effect.void
    return Effect.forEach([...stack(s)].reverse(), (entry) => interruptPlaying(speeches, entry, options), { discard: true })
  })

/** Stops one playing speech: cut while it generates; while its tools run, only its follow-up. */
const interruptPlaying = (speeches: Speeches, entry: Playing, options: InterruptOptions): Effect.Effect<void> =>
  Effect.suspend(() => {
    const speech = entry.queued.speech
    if (Speech.isDone(speech) || !cuttable(speech, options)) return Effect.void
    // The words before its calls end (what was heard is kept) and no follow-up comes, also when
    // the floor passes; the calls the model made run.
    if (speech.state._tag === "Words") {
      Speech.cutWords(speech)
      return Effect.void
    }
    if (Speech.waitsOnCalls(speech)) {
      if (options.force !== true) Speech.cutFollowUp(speech)
      return Effect.void
    }
    return (entry.fiber ? Fiber.interrupt(entry.fiber) : Effect.void).pipe(
      // A fiber interrupted before it ran never reaches its own handlers: settle it here.
      Effect.andThen(Effect.sync(() => {
        removePlaying(speeches.state, entry)
        finish(speeches, speech, { _tag: "Interrupted" })
      }))
    )
  })

/** Drops `speech` if queued, interrupts it if playing. */
export const interruptOne = (speeches: Speeches, speech: Speech.Speech): Effect.Effect<void> =>
  Effect.suspend(() => {
    const s = speeches.state
    const index = s.queue.findIndex((queued) => queued.speech === speech)
    if (index >= 0) {
      s.queue.splice(index, 1)
      finish(speeches, speech, { _tag: "Dropped", reason: "interrupted before it started" })
    }
    const entry = entryOf(s, speech)
    return entry ? interruptPlaying(speeches, entry, forced) : Effect.void
  })
