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

/** `passing`: its batch settled and passes the floor once the words said meanwhile end. */
/**
 * `words`: the model made its tool calls and the words it said before them still play (the calls
 * run once they end); `tools`: the calls run; `passing`: its batch settled and passes the floor
 * once the words said meanwhile end.
 */
export type SpeechPhase = "queued" | "generating" | "words" | "tools" | "passing" | "done"

/** Whether the speech waits on its tool calls (running, or settled and about to pass the floor). */
export const inToolPhase = (speech: Speech): boolean =>
  speech.phase === "words" || speech.phase === "tools" || speech.phase === "passing"

/** Whether the speech says nothing now and waits on its calls (running, or settled and about to
 * pass the floor): another speech may be said over it. */
export const waitsOnCalls = (speech: Speech): boolean => speech.phase === "tools" || speech.phase === "passing"

/** The actor-side record of a speech. Mutated only by its actor and its own fiber. */
export interface Speech {
  readonly handle: SpeechHandle
  readonly done: Deferred.Deferred<SpeechOutcome>
  readonly allowInterruptions: boolean
  phase: SpeechPhase
  /** Set when the user spoke or `interrupt` was called during the tool phase. */
  skipFollowUp: boolean
  /** While the words said before its tool calls play (Reply.ts): ends them, not the calls. */
  cut?: (() => void) | undefined
  /**
   * Whether the speech holds its work token. A batch hands it to its tool calls while they run
   * (so a tool waiting for an `AgentTask` lets the session become quiescent) and the last call
   * to finish takes it back.
   */
  holdsToken: boolean
  /**
   * How many times the user had started speaking when the speech was created: a barge-in cuts
   * only speeches older than it (a reply to the turn itself is never cut by its own start).
   */
  readonly userTurn: number
  /** Queued while a playing speech waited for its tools: a `say` or a reply may interject
   * (Speeches.ts). */
  duringTools: boolean
  /** Flows waiting for the speech that gave their work token back (handed back as it ends). */
  readonly parked: Array<ParkedWaiter>
}

/** A flow waiting for a speech, whose work token the speech hands back when it ends. */
export interface ParkedWaiter {
  returned: boolean
}

export const make = (
  fields: {
    readonly agent: string
    readonly source: SpeechSource
    readonly allowInterruptions: boolean
    readonly userTurn: number
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
    phase: "queued",
    skipFollowUp: false,
    duringTools: false,
    parked: [],
    holdsToken: true,
    userTurn: fields.userTurn
  }
  return speech
}
