/**
 * The session's typed event stream. Every event carries the session-wide sequence number and
 * the clock time (milliseconds, `Clock`, so tests under `TestClock` see test time).
 */
import type { ErrorReason } from "./ErrorInfo.ts"
import type { ChatItem, FunctionCall, FunctionCallOutput, HandoffKind } from "./ChatContext.ts"
import type { UsageSummary } from "./observe/Usage.ts"
import type { SpeechSource } from "./Speech.ts"

/**
 * What an agent is doing: starting up, listening, thinking (a model call runs) or speaking.
 *
 * @since 0.1.0
 * @category models
 */
export type AgentState = "initializing" | "listening" | "thinking" | "speaking"

interface Base {
  readonly seq: number
  readonly at: number
}

/**
 * An agent's state changed.
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentStateChanged extends Base {
  readonly type: "agent_state_changed"
  readonly agent: string
  readonly state: AgentState
  readonly previous: AgentState
}

/**
 * A chat item entered the session's history (a message, a function call, its output or a handoff
 * record).
 *
 * @since 0.1.0
 * @category models
 */
export interface ConversationItemAdded extends Base {
  readonly type: "conversation_item_added"
  readonly agent: string | undefined
  readonly item: ChatItem
  /**
   * The id of the item it was placed before in the history: it came after it (a spoken turn
   * whose transcript came after the realtime answer to it). Absent: at the end.
   */
  readonly before?: string | undefined
}

/**
 * A batch of tool calls settled: each call with its output, and whether the batch passes the
 * floor.
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionToolsExecuted extends Base {
  readonly type: "function_tools_executed"
  readonly agent: string
  readonly calls: ReadonlyArray<{ readonly call: FunctionCall; readonly output: FunctionCallOutput }>
  /** The batch passes the floor: no reply follows on this agent. */
  readonly hasHandoff: boolean
  readonly handoffTo?: string | undefined
  /**
   * True when the handoff is applied later, not as the batch settles: a long-running tool's
   * result after its first output (rule 9), or the batch of a reply said over other batches,
   * which passes the floor once they have settled.
   */
  readonly deferred: boolean
}

/**
 * The floor passed from one agent to another (a handoff, a task lent the floor, or its return).
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentHandoffEvent extends Base {
  readonly type: "agent_handoff"
  readonly from: string | undefined
  readonly to: string
  readonly kind: HandoffKind
  readonly resumed: boolean
  readonly reason?: string | undefined
}

/**
 * A handoff was asked for but not applied (another one in the same batch won, or the batch was
 * cut); `reason` says why.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandoffNotApplied extends Base {
  readonly type: "handoff_not_applied"
  readonly agent: string
  readonly to: string
  readonly reason: string
}

/**
 * An agent's speech was queued (a reply, a fixed utterance, a tool's follow-up).
 *
 * @since 0.1.0
 * @category models
 */
export interface SpeechCreated extends Base {
  readonly type: "speech_created"
  readonly agent: string
  readonly speechId: string
  readonly source: SpeechSource
}

/**
 * An agent's speech ended, played to the end or interrupted.
 *
 * @since 0.1.0
 * @category models
 */
export interface SpeechFinished extends Base {
  readonly type: "speech_finished"
  readonly agent: string
  readonly speechId: string
  readonly interrupted: boolean
}

/**
 * Something failed (a model, a tool, a hook, input, the transport, a realtime connection or a
 * voice engine): one line saying what and, for model failures, a reason a program can branch on.
 *
 * @since 0.1.0
 * @category models
 */
export interface ErrorEvent extends Base {
  readonly type: "error"
  readonly agent: string | undefined
  /** `voice`: an engine of the voice pipeline (VAD, speech to text, text to speech, audio). */
  readonly source: "model" | "tool" | "hook" | "input" | "transport" | "realtime" | "voice"
  /** One line: what failed and, where known, what to do (never a stack trace). */
  readonly message: string
  /** Why, for a program to branch on (model failures; see src/ErrorInfo.ts). */
  readonly reason?: ErrorReason | undefined
  /** The provider's HTTP status, where there is one. */
  readonly status?: number | undefined
  /** Whether trying the same request again can help. */
  readonly retryable?: boolean | undefined
  /** The session goes on after it. */
  readonly recoverable: boolean
}

/**
 * The user started or stopped speaking (voice sessions), went away (said nothing for the
 * session's `userAwayTimeout` while the agent waited), or came back (`listening` after `away`:
 * they typed; `speaking`: they spoke).
 *
 * @since 0.1.0
 * @category models
 */
export interface UserStateChanged extends Base {
  readonly type: "user_state_changed"
  readonly state: "speaking" | "listening" | "away"
}

/**
 * What a speech-to-text engine heard of the user: guesses as they speak, then the final text.
 *
 * @since 0.1.0
 * @category models
 */
export interface UserInputTranscribed extends Base {
  readonly type: "user_input_transcribed"
  readonly transcript: string
  readonly final: boolean
}

/**
 * Text only the agent sees, for its next reply: an operator's whisper (`session.whisper`), or the
 * note of a hand back from a person (`note: true`). In the event log (the timeline draws it as a
 * note); the service does not send it to the caller.
 *
 * @since 0.1.0
 * @category models
 */
export interface WhisperEvent extends Base {
  readonly type: "whisper"
  /** The agent it is for. */
  readonly agent: string
  readonly text: string
  readonly note: boolean
}

/**
 * A decision of the voice pipeline about the user's turn, so a trace shows why a turn ended when
 * it did or a reply was cut (or not):
 *
 * - `endpointing`: the silence the turn waits for (`delayMs`), from what the words so far say
 *   (`reason`: they end a sentence, answer the agent's question, trail off, or give no sign);
 * - `preemptive_generation`: a reply started on the final transcript before the turn ended
 *   (`started`), then `used` for the turn or `discarded` unheard (the user went on, the floor moved);
 * - `interruption`: speech over a reply `cut` it, or was `ignored` (shorter than
 *   `minInterruptionMs` or fewer words than `minInterruptionWords`);
 * - `false_interruption`: a reply cut by speech with no words was `resumed` where it stopped.
 *
 * @since 0.1.0
 * @category models
 */
export interface VoiceDecision extends Base {
  readonly type: "voice_decision"
  readonly decision: "endpointing" | "preemptive_generation" | "interruption" | "false_interruption"
  readonly outcome:
    | "sentence_end"
    | "answer"
    | "trailing_off"
    | "no_sign"
    | "started"
    | "used"
    | "discarded"
    | "cut"
    | "ignored"
    | "resumed"
  /** The words the decision was made on, when it looked at them. */
  readonly transcript?: string | undefined
  /** endpointing: the silence waited for (ms). */
  readonly delayMs?: number | undefined
  /** interruption: how long the speech over the reply lasted (ms of audio) and its words. */
  readonly speechMs?: number | undefined
  readonly words?: number | undefined
}

/**
 * A realtime connection was opened, moved to a new holder, updated for it, fell back (an update
 * was refused), closed, or dropped (its socket was lost or the server hung up; the agent's next
 * request opens a new one).
 *
 * @since 0.1.0
 * @category models
 */
export interface RealtimeConnectionEvent extends Base {
  readonly type: "realtime_connection"
  readonly agent: string
  readonly connectionId: string
  readonly action: "opened" | "reused" | "updated" | "fell_back" | "closed" | "dropped"
}

/**
 * One model call ended: an LLM step or a realtime response. Times are milliseconds from
 * `startedAt` (the request); tokens as the provider reported them (absent when it did not).
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelCallEvent extends Base {
  readonly type: "model_call"
  readonly agent: string
  readonly speechId: string
  readonly kind: "llm" | "realtime"
  readonly provider: string
  readonly model: string
  readonly startedAt: number
  readonly firstTextMs?: number | undefined
  readonly firstAudioMs?: number | undefined
  readonly inputTokens?: number | undefined
  readonly outputTokens?: number | undefined
  /** Seconds of audio the model sent. */
  readonly audioOutputSeconds?: number | undefined
  readonly outcome: "ok" | "error" | "interrupted"
  /** The error's reason (its `reason` tag or field), when the call failed. */
  readonly errorReason?: string | undefined
  /** Models that failed before this one answered (`ModelFallback`), in order, with why. */
  readonly failedOver?: ReadonlyArray<{ readonly provider: string; readonly model: string; readonly reason: string }> | undefined
}

/**
 * The session closed: why, and what its model calls used.
 *
 * @since 0.1.0
 * @category models
 */
export interface CloseEvent extends Base {
  readonly type: "close"
  readonly reason: string
  /** What the session's model calls used, per model and per agent. */
  readonly usage?: UsageSummary | undefined
}

/**
 * A tool call that needs approval waits for it (`Tool.make({ needsApproval })`): the program (or
 * the service's operator) answers with `session.approve(callId)` or `session.reject(callId)`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolApprovalRequested extends Base {
  readonly type: "tool_approval_requested"
  readonly agent: string
  readonly callId: string
  readonly tool: string
  /** The raw arguments as the model sent them. */
  readonly arguments: string
}

/**
 * A call waiting for approval was answered: approved or rejected by the program (`by: "app"`),
 * or rejected because the user spoke over it (`"barge_in"`) or its agent passed the floor
 * (`"handoff"`). A call still waiting when the session closes is answered as cancelled.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolApprovalAnswered extends Base {
  readonly type: "tool_approval_answered"
  readonly agent: string
  readonly callId: string
  readonly tool: string
  readonly approved: boolean
  readonly by: "app" | "barge_in" | "handoff"
  readonly reason?: string | undefined
}

/**
 * A guardrail tripped (`Agent.make({ guardrails })`, or the session's): on what the agent was
 * saying (`output`, its speech cut where it had been heard), or on a tool call's arguments or
 * result (`tool_input`, `tool_output`); `policy` is what was done about it.
 *
 * @since 0.1.0
 * @category models
 */
export interface GuardrailTripped extends Base {
  readonly type: "guardrail_tripped"
  readonly agent: string
  readonly guardrail: string
  readonly kind: "output" | "tool_input" | "tool_output"
  readonly policy: "say" | "handoff" | "end_call" | "error_output"
  /** What the guardrail said about it. */
  readonly message: string
  readonly callId?: string | undefined
}

/**
 * Every event a session emits, in order, with a sequence number and a time; `session.events`
 * streams them and the event log records them.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionEvent =
  | AgentStateChanged
  | ConversationItemAdded
  | FunctionToolsExecuted
  | AgentHandoffEvent
  | HandoffNotApplied
  | SpeechCreated
  | SpeechFinished
  | ErrorEvent
  | UserStateChanged
  | UserInputTranscribed
  | WhisperEvent
  | VoiceDecision
  | RealtimeConnectionEvent
  | ModelCallEvent
  | ToolApprovalRequested
  | ToolApprovalAnswered
  | GuardrailTripped
  | CloseEvent

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

/**
 * An event before the session stamps it.
 *
 * @since 0.1.0
 * @category models
 */
export type EventInput = DistributiveOmit<SessionEvent, "seq" | "at">
