/**
 * The speeches of one actor as a record (`{ config, state }`, docs/patterns.md): what the actor
 * gave them (its name, core, Scope and the few questions only it can answer) and one mutable
 * state (the queue, the one playing, the interjections over it, the flows waiting for them to
 * settle). The functions over it are in Speeches.ts and this folder; this module holds the
 * record, the reads of the stack they share, and `finish`.
 */
import { Deferred, Effect, Exit, type Fiber, type Scope } from "effect"
import * as Speech from "../../Speech.ts"
import type { ReplyError } from "../Reply.ts"
import type { SessionCore } from "../SessionCore.ts"
import * as Work from "../Work.ts"

/** What the actor gives its speeches. */
export interface Config {
  readonly name: string
  readonly core: SessionCore
  readonly work: Work.Work
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
  /** A reply or a `say`: it fails only as a reply does (a hook's own failure is caught and
   * reported before it gets here). */
  readonly body: (speech: Speech.Speech) => Effect.Effect<void, ReplyError>
}

/** A playing speech; `fiber` is set on the step that forks it. */
export interface Playing {
  readonly queued: Queued
  fiber: Fiber.Fiber<void, unknown> | undefined
}

/** The one mutable part: written by the functions of Speeches.ts and this folder only. */
export interface State {
  readonly queue: Array<Queued>
  current: Playing | undefined
  /** Speeches said over the current one (or over one that ended), the last on top. */
  readonly interjections: Array<Playing>
  waiters: Array<Deferred.Deferred<void>>
}

export interface Speeches {
  readonly config: Config
  readonly state: State
}

export const make = (config: Config): Speeches => ({
  config,
  state: { queue: [], current: undefined, interjections: [], waiters: [] }
})

/**
 * Whether `queued` may interject over `under`: a `say` or a reply queued while a playing speech
 * waited for its tools, while `under` runs its tools; only a `say` once its batch settled and
 * passes the floor (a new reply then would be a model call after the handoff was decided).
 */
export const interjectsOver = (under: Speech.Speech) => (queued: Queued): boolean => {
  if (!Speech.queuedOverTools(queued.speech)) return false
  const source = queued.speech.handle.source
  if (under.state._tag === "Tools") return source === "say" || source === "generate_reply"
  return under.state._tag === "Passing" && source === "say"
}

/** The playing speeches, bottom first: the current one, then the interjections over it (made
 * only where a speech plays over another; the common paths read the fields). */
export const stack = (s: State): ReadonlyArray<Playing> =>
  s.interjections.length === 0 ? (s.current ? [s.current] : []) : s.current ? [s.current, ...s.interjections] : s.interjections

/** The playing entry of `speech`, if it plays. */
export const entryOf = (s: State, speech: Speech.Speech): Playing | undefined => {
  if (s.current?.queued.speech === speech) return s.current
  for (const entry of s.interjections) if (entry.queued.speech === speech) return entry
  return undefined
}

/** Where `speech` is in the stack of playing speeches (-1: not playing). */
export const stackIndex = (s: State, speech: Speech.Speech): number => {
  if (s.current?.queued.speech === speech) return 0
  const offset = s.current ? 1 : 0
  for (let i = 0; i < s.interjections.length; i++) if (s.interjections[i]!.queued.speech === speech) return i + offset
  return -1
}

/** Whether a playing speech waits on its calls (another may be said over it). */
export const anyInToolPhase = (s: State): boolean => {
  if (s.current && Speech.waitsOnCalls(s.current.queued.speech)) return true
  for (const entry of s.interjections) if (Speech.waitsOnCalls(entry.queued.speech)) return true
  return false
}

/** The speech on top of the stack: the only one that may be generating. */
export const top = (s: State): Playing | undefined => s.interjections[s.interjections.length - 1] ?? s.current

export const removePlaying = (s: State, entry: Playing): void => {
  if (s.current === entry) s.current = undefined
  const index = s.interjections.indexOf(entry)
  if (index >= 0) s.interjections.splice(index, 1)
}

/** Ends a speech as seen from outside (outcome, event, token); idempotent. */
export const finish = (speeches: Speeches, speech: Speech.Speech, outcome: Speech.SpeechOutcome): void => {
  if (Speech.isDone(speech)) return
  const { core, name, work } = speeches.config
  const held = Speech.finish(speech)
  // Flows that gave their work token back to wait for this speech get it back first.
  for (const waiter of speech.parked.splice(0)) {
    Work.acquire(work)
    waiter.returned = true
  }
  Deferred.doneUnsafe(speech.done, Exit.succeed(outcome))
  if (outcome._tag !== "Dropped") {
    core.emit({ type: "speech_finished", agent: name, speechId: speech.handle.id, interrupted: outcome._tag === "Interrupted" })
  }
  if (held) Work.release(work)
}
