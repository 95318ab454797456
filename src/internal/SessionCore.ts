/**
 * The session's internals shared by the supervisor (`Floor`) and its actors. Plain state with
 * synchronous mutators: every floor change is one synchronous step, so no other fiber can see
 * it half done (rule 1).
 */
import type { Deferred, Scope } from "effect"
import type { LanguageModel } from "effect/ai"
import type { TextOutputService } from "../../services/TextOutput.ts"
import type { Actor } from "./actor/Actor.ts"
import type * as Background from "./Background.ts"
import type { Pool } from "./realtime/Pool.ts"
import type { Agent } from "../Agent.ts"
import type { AgentSession } from "../AgentSession.ts"
import type { ChatContext, ChatItem } from "../ChatContext.ts"
import type { ReplyOptions, SayOptions, TaskResult } from "../CurrentAgent.ts"
import type { FloorError, TaskError } from "../Errors.ts"
import type { EventInput, SessionEvent } from "../Events.ts"
import type { HandoffOptions } from "../Handoff.ts"
import type { Human } from "../Human.ts"
import type { HandBackOptions } from "./HumanFloor.ts"
import type { SpeechHandle } from "../Speech.ts"
import type { Tool } from "../Tool.ts"
import type { Work } from "./Work.ts"
import type { FlowObserver } from "../FlowObserver.ts"

/** A work token given up by a flow waiting for a task; returned exactly once. */
export interface Handover {
  pending: boolean
}

export type HandoffOutcome =
  | { readonly _tag: "Applied"; readonly to: string }
  | { readonly _tag: "NotApplied"; readonly reason: string }

/** Messages to the session supervisor, processed one at a time. */
export type SessionMessage =
  | { readonly _tag: "Start"; readonly agent: Agent }
  /** `itemId`: a turn the user spoke to another agent, passed on under its transcript's id. */
  | { readonly _tag: "Input"; readonly text: string; readonly itemId?: string | undefined }
  | {
    readonly _tag: "Say"
    readonly text: string
    readonly options: SayOptions
    readonly reply: Deferred.Deferred<SpeechHandle, FloorError>
  }
  | {
    readonly _tag: "Reply"
    readonly options: ReplyOptions
    readonly reply: Deferred.Deferred<SpeechHandle, FloorError>
  }
  | { readonly _tag: "Interrupt" }
  | {
    readonly _tag: "Handoff"
    /** The actor asking; undefined when the application forces a handoff. */
    readonly from: Actor | undefined
    readonly target: Agent
    readonly options: HandoffOptions
    readonly reply: Deferred.Deferred<HandoffOutcome>
  }
  | {
    readonly _tag: "StartTask"
    readonly caller: Actor
    readonly task: Agent
    readonly result: Deferred.Deferred<unknown, TaskError>
    /** Set when the waiting flow gave its work token up (see Work.ts and Tasks.ts). */
    readonly handover: Handover
    readonly extraTools: ReadonlyArray<Tool>
    /** The tool call of the caller that awaits the task, if one does (the journal keeps it). */
    readonly callId?: string | undefined
  }
  | { readonly _tag: "CompleteTask"; readonly actor: Actor; readonly result: TaskResult }
  | { readonly _tag: "Background"; readonly delivery: Background.Delivery }
  /** A session tool's call is answered (its output is in history): what it reported meanwhile can
   * be taken now, by the holder or, while a person holds the floor, recorded (HumanFloor.ts). */
  | { readonly _tag: "SessionCallAnswered" }
  | { readonly _tag: "UserSpeaking"; readonly speaking: boolean; readonly userTurn: number }
  /** A person takes the floor from the agent holding it (HumanFloor.ts). */
  | {
    readonly _tag: "TakeOver"
    readonly human: Human
    readonly reason?: string | undefined
    readonly reply: Deferred.Deferred<HandoffOutcome>
    /** The holder that has cut what it was saying (it is asked first, so its words are recorded
     * before the floor moves: one atomic step, rule 1). If the floor moved meanwhile, the new
     * holder is asked in turn. */
    readonly cutBy?: Actor | undefined
    /** A task holding the floor is not cancelled: the human takes the floor from its caller in the
     * very step the task returns (its result still reaches the caller's tool, no reply starts). */
    readonly afterTask?: boolean | undefined
  }
  /** A take-over waiting for a task's return (`afterTask`) is withdrawn: it timed out or its
   * asker was interrupted. Its reply is `NotApplied` with `reason` unless it was applied first. */
  | { readonly _tag: "WithdrawTakeOver"; readonly reply: Deferred.Deferred<HandoffOutcome>; readonly reason: string }
  /** The person holding the floor hands it back to `agent`. */
  | { readonly _tag: "HandBack"; readonly agent: Agent; readonly options: HandBackOptions; readonly reply: Deferred.Deferred<HandoffOutcome> }
  /** The person holding the floor says `text` to the caller. */
  | { readonly _tag: "HumanSay"; readonly human: Human; readonly text: string; readonly voiced?: boolean; readonly reply: Deferred.Deferred<void, FloorError> }
  /** Text only the agent holding the floor sees, for its next reply (Whispers.ts). */
  | { readonly _tag: "Whisper"; readonly text: string; readonly reply: Deferred.Deferred<void, FloorError> }

export interface SessionCore {
  readonly id: string
  readonly work: Work
  /** Background calls still running (only waited for when a run asks). */
  readonly background: Work
  /** The user is speaking (voice): no speech starts and nothing is told meanwhile. */
  readonly userSpeaking: () => boolean
  /**
   * `connectionId`: the realtime connection whose turn detection says so; if it goes before it
   * says the user stopped, the user is taken to have stopped (else no reply would ever start).
   */
  readonly setUserSpeaking: (speaking: boolean, connectionId?: string) => void
  /** How many times the user has started speaking (a barge-in cuts only older speeches). */
  readonly userTurns: () => number
  /** The realtime connections, when the session has a realtime model. */
  readonly realtimePool: Pool | undefined
  /** Tools given to the session: every agent has them; their background calls belong to the session. */
  readonly sessionTools: ReadonlyArray<Tool>
  readonly sessionOwner: Background.Owner
  /** Deliveries of session tools, taken by whoever holds the floor when it is idle. */
  readonly sessionDeliveries: Array<Background.Delivery>
  readonly scope: Scope.Closeable
  readonly userdata: unknown
  readonly textOutput: TextOutputService
  readonly defaultModel: LanguageModel.LanguageModel | undefined
  /** Told about the user's hooks, task results and background handlers as they run (FlowObserver.ts). */
  readonly observer: FlowObserver | undefined
  /** The public session, for tool and hook contexts. */
  readonly session: () => AgentSession<unknown>
  /** Sends a message to the supervisor (holds a work token until it is handled). */
  readonly send: (message: SessionMessage) => void
  /**
   * If the supervisor is waiting for a message, it handles its mailbox now, on the caller's
   * turn, not on the next turn of the event loop (an Effect queue wakes its taker there). For a
   * sender that waits for the answer next, such as a batch handing the floor on. The order of
   * messages does not change.
   */
  readonly handleNow: () => void
  /** The actor holding the floor (undefined before start and after close). */
  readonly holder: () => Actor | undefined
  readonly closed: () => boolean
  /** Stamps and publishes an event; synchronous so a transition is never seen half done. */
  readonly emit: (event: EventInput) => SessionEvent
  /** Appends to the shared history (or places it before the first of `followedBy` the history
   * has: a user's turn transcribed after its answer) and publishes `conversation_item_added`. */
  readonly record: (item: ChatItem, agent: string | undefined, followedBy?: ReadonlyArray<string>) => void
  readonly history: () => ChatContext
  readonly now: () => number
}
