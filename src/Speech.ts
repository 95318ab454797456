/**
 * Speech: one reply being generated and delivered, run as one fiber owned by an actor.
 * Interrupting a reply interrupts that fiber while it generates; once its tool calls run, an
 * interruption only cancels the follow-up reply (tool calls are never cut in half). The words a
 * reply says before its tool calls ("Let me check Paris.") are in the tool phase once the model
 * made the calls: a cut ends the words (what was heard is kept, marked interrupted) and the
 * follow-up, and the calls run, as LiveKit runs tools that already started (issue 39).
 */
import type { ErrorInfo } from "./ErrorInfo.ts"
import { Deferred, Effect } from "effect"
import { nextId } from "./ChatContext.ts"

/**
 * What queued a speech: `Agent.say`, `Agent.reply`, the user's turn, or a reply to tool outputs.
 *
 * @since 0.1.0
 * @category models
 */
export type SpeechSource = "say" | "generate_reply" | "user_turn" | "tool_reply"

/**
 * How a speech ended: played to the end, interrupted, dropped before it started (with why), or
 * failed (with what the error event says).
 *
 * @since 0.1.0
 * @category models
 */
export type SpeechOutcome =
  | { readonly _tag: "Finished" }
  | { readonly _tag: "Interrupted" }
  /** Never started: its agent lost the floor or the session closed first. */
  | { readonly _tag: "Dropped"; readonly reason: string }
  | {
    readonly _tag: "Failed"
    readonly message: string
    readonly info?: ErrorInfo | undefined
    /** The pretty cause, for the debug log. */
    readonly cause?: string | undefined
  }

/**
 * A speech queued by `Agent.reply` or `Agent.say`: its id, agent and source, `wait` for how it
 * ended (finished, interrupted, dropped or failed), and `interrupt` to cut it.
 *
 * @since 0.1.0
 * @category models
 */
export interface SpeechHandle {
  readonly id: string
  readonly agent: string
  readonly source: SpeechSource
  /** Completes when the speech has finished, was interrupted, dropped or failed. */
  readonly wait: Effect.Effect<SpeechOutcome>
  readonly interrupt: Effect.Effect<void>
}

/**
 * Where a speech is, as one tagged union: the only writers are the transitions below, called by
 * its actor and its own fiber. What each state carries is what can vary there, so that no
 * impossible combination (a finished speech holding its work token, a generating one without it,
 * a queued one whose follow-up was cut) can be written.
 *
 *   Queued ──start──► Generating ──words──► Words ──tools──► Tools ──passing──► Passing
 *                        ▲   └──────────────tools──────────────►│                  │
 *                        └────────────── generate (its follow-up) ┘                 │
 *   every state ──finish──► Done ◄──────────────────────────────────────────────────┘
 */
export type SpeechState =
  /** Waiting to start. `token`: whether it holds its work token (only while its actor holds the
   * floor, Speeches.ts); `overTools`: queued while a playing speech waited on its tools, so a
   * `say` or a reply asked by a tool may interject (speeches/Interjections.ts). */
  | { readonly _tag: "Queued"; readonly token: boolean; readonly overTools: boolean }
  /** Generating, holding its token. `followUpCut`: no model call after its tool calls (the user
   * spoke, `interrupt`, the floor passing). */
  | { readonly _tag: "Generating"; readonly followUpCut: boolean }
  /** The model made its tool calls and the words it said before them still play (Reply.ts),
   * holding its token; `cut` ends the words, not the calls. */
  | { readonly _tag: "Words"; readonly followUpCut: boolean; readonly cut: () => void }
  /** Its tool calls run. `token`: false while the calls hold it (ToolBatch.ts) or it is parked
   * on what is said over it (speeches/Parking.ts). */
  | { readonly _tag: "Tools"; readonly followUpCut: boolean; readonly token: boolean }
  /** Its batch settled and passes the floor once the words said meanwhile end: no follow-up. */
  | { readonly _tag: "Passing"; readonly token: boolean }
  | { readonly _tag: "Done" }

const DONE: SpeechState = { _tag: "Done" }
const GENERATING: SpeechState = { _tag: "Generating", followUpCut: false }
const GENERATING_CUT: SpeechState = { _tag: "Generating", followUpCut: true }
const noCut = () => {}

/** The actor-side record of a speech. */
export interface Speech {
  readonly handle: SpeechHandle
  readonly done: Deferred.Deferred<SpeechOutcome>
  readonly allowInterruptions: boolean
  /**
   * How many times the user had started speaking when the speech was created: a barge-in cuts
   * only speeches older than it (a reply to the turn itself is never cut by its own start).
   */
  readonly userTurn: number
  /** Written only by the transitions of this module. */
  state: SpeechState
  /** Flows waiting for the speech that gave their work token back (handed back as it ends). */
  readonly parked: Array<ParkedWaiter>
}

/** A flow waiting for a speech, whose work token the speech hands back when it ends. */
export interface ParkedWaiter {
  returned: boolean
}

export const isDone = (speech: Speech): boolean => speech.state._tag === "Done"

/** Whether the speech waits on its tool calls (the words before them, running, or settled and
 * about to pass the floor). */
export const inToolPhase = (speech: Speech): boolean => {
  const tag = speech.state._tag
  return tag === "Words" || tag === "Tools" || tag === "Passing"
}

/** Whether the speech says nothing now and waits on its calls (running, or settled and about to
 * pass the floor): another speech may be said over it. */
export const waitsOnCalls = (speech: Speech): boolean => speech.state._tag === "Tools" || speech.state._tag === "Passing"

/** Whether the speech holds its work token: while generating and playing words it always does;
 * queued, running its tools or passing, as its state says; done, never. */
export const holdsToken = (speech: Speech): boolean => {
  const state = speech.state
  switch (state._tag) {
    case "Generating":
    case "Words":
      return true
    case "Done":
      return false
    default:
      return state.token
  }
}

/** Records whether the speech holds its token (queued, running its tools or passing; elsewhere
 * the state decides and this changes nothing). */
export const setToken = (speech: Speech, token: boolean): void => {
  const state = speech.state
  switch (state._tag) {
    case "Queued":
      if (state.token !== token) speech.state = { _tag: "Queued", token, overTools: state.overTools }
      return
    case "Tools":
      if (state.token !== token) speech.state = { _tag: "Tools", followUpCut: state.followUpCut, token }
      return
    case "Passing":
      if (state.token !== token) speech.state = { _tag: "Passing", token }
      return
    default:
      return
  }
}

/** Whether no model call follows its tool calls: cut, or its batch passes the floor, or done. */
export const followUpCut = (speech: Speech): boolean => {
  const state = speech.state
  switch (state._tag) {
    case "Queued":
      return false
    case "Passing":
    case "Done":
      return true
    default:
      return state.followUpCut
  }
}

/** No model call after its tool calls (a speech not yet started or already passing: nothing to
 * cut). */
export const cutFollowUp = (speech: Speech): void => {
  const state = speech.state
  switch (state._tag) {
    case "Generating":
      speech.state = GENERATING_CUT
      return
    case "Words":
      if (!state.followUpCut) speech.state = { _tag: "Words", followUpCut: true, cut: state.cut }
      return
    case "Tools":
      if (!state.followUpCut) speech.state = { _tag: "Tools", followUpCut: true, token: state.token }
      return
    default:
      return
  }
}

/** Whether it was queued while a playing speech waited on its tools (it may interject). */
export const queuedOverTools = (speech: Speech): boolean => speech.state._tag === "Queued" && speech.state.overTools

/** Starts generating (from the queue, holding its token, or again after its tool calls). */
export const generate = (speech: Speech): void => {
  if (speech.state._tag !== "Done") speech.state = followUpCut(speech) ? GENERATING_CUT : GENERATING
}

/** The model made its tool calls; the words said before them play, and `cut` ends them. */
export const words = (speech: Speech, cut: () => void): void => {
  speech.state = { _tag: "Words", followUpCut: followUpCut(speech), cut }
}

/** The words before the calls ended: a cut has nothing left to end. */
export const wordsEnded = (speech: Speech): void => {
  const state = speech.state
  if (state._tag === "Words") speech.state = { _tag: "Words", followUpCut: state.followUpCut, cut: noCut }
}

/** Ends the words said before its calls (what was heard is kept) and cuts the follow-up. */
export const cutWords = (speech: Speech): void => {
  const state = speech.state
  if (state._tag !== "Words") return
  if (!state.followUpCut) speech.state = { _tag: "Words", followUpCut: true, cut: state.cut }
  state.cut()
}

/** Ends the words said before its calls if they play, and cuts its follow-up (the user typed or
 * spoke while its calls were made). */
export const cutWordsAndFollowUp = (speech: Speech): void =>
  speech.state._tag === "Words" ? cutWords(speech) : cutFollowUp(speech)

/** Its tool calls run, holding its token until the batch hands it to them. */
export const tools = (speech: Speech): void => {
  speech.state = { _tag: "Tools", followUpCut: followUpCut(speech), token: true }
}

/** Its batch settled and passes the floor (its token as it was). */
export const passing = (speech: Speech): void => {
  speech.state = { _tag: "Passing", token: holdsToken(speech) }
}

/** Ended: the token it held, if it held one (the caller gives it back). */
export const finish = (speech: Speech): boolean => {
  const held = holdsToken(speech)
  speech.state = DONE
  return held
}

export const make = (
  fields: {
    readonly agent: string
    readonly source: SpeechSource
    readonly allowInterruptions: boolean
    readonly userTurn: number
    /** Queued while a playing speech waited on its tools (it may interject). */
    readonly overTools: boolean
    readonly interrupt: (speech: Speech) => Effect.Effect<void>
    /** How a flow waits for it (default: for its outcome). */
    readonly wait?: (speech: Speech) => Effect.Effect<SpeechOutcome>
  }
): Speech => {
  const done = Deferred.makeUnsafe<SpeechOutcome>()
  const speech: Speech = {
    handle: {
      id: nextId("speech"),
      agent: fields.agent,
      source: fields.source,
      wait: fields.wait ? Effect.suspend(() => fields.wait!(speech)) : Deferred.await(done),
      interrupt: Effect.suspend(() => fields.interrupt(speech))
    },
    done,
    allowInterruptions: fields.allowInterruptions,
    userTurn: fields.userTurn,
    state: { _tag: "Queued", token: true, overTools: fields.overTools },
    parked: []
  }
  return speech
}
