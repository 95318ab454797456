/**
 * A session: the supervisor of one conversation. It owns the floor, the shared history, the
 * event stream and the actors, and processes its mailbox one message at a time. It lives in
 * the Scope it was started in; closing that Scope (or `close`) closes every actor's Scope.
 * This module is its public face (the session's type, `start` and `resume`, durable or not); the
 * running session they launch, and the entry points of the value they return, are
 * `internal/Session.ts`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Duration, Effect, type Scope, type Stream } from "effect"
import type { RealtimeError } from "../services/RealtimeModel.ts"
import type { SessionNotFound, SessionStoreService, StoreError } from "../services/SessionStore.ts"
import type { TextOutputService } from "../services/TextOutput.ts"
import type { VoiceError } from "../services/VoiceError.ts"
import type { Agent, ToolRequirements } from "./Agent.ts"
import type { ChatContext } from "./ChatContext.ts"
import type { ReplyOptions, SayOptions } from "./CurrentAgent.ts"
import type { AgentNotFound, SessionNotResumable, StoreOptions, UserdataRefused } from "./Durability.ts"
import type * as Guardrail from "./Guardrail.ts"
import * as Durable from "./internal/Durable.ts"
import { type FloorError, InvalidInput, MissingModel, SessionClosed, TurnFailed } from "./Errors.ts"
import type { SessionEvent, VoiceDecision } from "./Events.ts"
import type { UsageSummary } from "./observe/Usage.ts"
import type { HandoffOptions } from "./Handoff.ts"
import type { Human } from "./Human.ts"
import type { HandBackOptions, TakeOverOptions } from "./internal/HumanFloor.ts"
import { RunResult } from "./RunResult.ts"
import type { HandoffOutcome } from "./internal/SessionCore.ts"
import type { SpeechHandle } from "./Speech.ts"
import type { Any as AnyTool, Tool } from "./Tool.ts"
import * as Session from "./internal/Session.ts"

/**
 * A running session: send it user text or audio, `run` a turn and wait for its result, watch its
 * events, interrupt the agent speaking, and close it. Made by `start`; it lives in the Scope it
 * was started in.
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentSession<out U = unknown, in R = never> {
  readonly id: string
  readonly userdata: U
  /** Sends user text to the agent holding the floor; fails with `SessionClosed` once closing. */
  readonly send: (text: string) => Effect.Effect<void, SessionClosed | InvalidInput>
  /**
   * Sends user text and waits until the session is quiescent: no message waiting in any mailbox,
   * no speech playing, no handoff or hook chain in progress, the floor holder idle (rule 10).
   * The result holds what happened since the input (start-up is not part of the first run).
   * Fails with `SessionClosed` when the session is closing or closed, `InvalidInput` when the text
   * is longer than `maxInputChars`, and with `TurnFailed` (which
   * carries the result) when a model failed and the turn got no reply and no handoff.
   */
  readonly run: (text: string, options?: RunOptions) => Effect.Effect<RunResult, SessionClosed | TurnFailed | InvalidInput>
  /** Waits until the session is quiescent. */
  readonly idle: Effect.Effect<void>
  /** Waits until the session is quiescent and no background tool is running. */
  readonly idleWithBackground: Effect.Effect<void>
  /**
   * A durable session: writes everything it has committed so far to its store and returns once
   * the store has it (an append in flight first). What a server runs before it sends a client to
   * resume elsewhere, so the node that claims the session reads all the client was told. Nothing
   * to do without a store.
   */
  readonly persist: Effect.Effect<void>
  /**
   * Tells the session whether the user is speaking (from a VAD or a transport). While they
   * are, no speech starts and nothing is told; when they start, the current reply is cut.
   */
  readonly setUserSpeaking: (speaking: boolean) => Effect.Effect<void>
  /** Reports what speech-to-text heard (an interim guess or the final text) as a `user_input_transcribed` event. */
  readonly transcribed: (transcript: string, final: boolean) => Effect.Effect<void>
  /**
   * An engine of a voice pipeline failed (a frame the VAD refused, an utterance or a stream
   * the speech-to-text engine lost, a sentence the TTS could not say): a recoverable `error`
   * event with source `voice`, for the agent holding the floor. The session goes on.
   */
  readonly voiceError: (error: VoiceError) => Effect.Effect<void>
  /** A decision of the voice pipeline (endpointing, barge-in, ...) as a `voice_decision` event. */
  readonly voiceDecision: (decision: Omit<VoiceDecision, "type" | "seq" | "at">) => Effect.Effect<void>
  /**
   * The voice pipeline's preemptive generation: `start` the holder's reply to the user's words
   * before their turn ended (false when the holder cannot take it now), `commit` when the turn is
   * sent with those words (the reply uses the call made ahead), `discard` when the user went on.
   * `onText` sees the reply's text as it comes (to synthesize its first words ahead, unheard).
   */
  readonly preemptive: {
    readonly start: (text: string, onText?: (agent: string, delta: string, complete: boolean) => Effect.Effect<void>) => Effect.Effect<boolean>
    readonly commit: (text: string) => Effect.Effect<void>
    readonly discard: Effect.Effect<void>
  }
  /**
   * The user's audio (PCM16 mono at the model's input rate) for the agent holding the floor,
   * when it talks through a realtime model; the model's turn detection takes it from there.
   * Dropped when the holder has no realtime model. Fails with `SessionClosed` once closing.
   */
  readonly pushAudio: (pcm: Uint8Array) => Effect.Effect<void, RealtimeError | SessionClosed>
  readonly say: (text: string, options?: SayOptions) => Effect.Effect<SpeechHandle, FloorError>
  readonly generateReply: (options?: ReplyOptions) => Effect.Effect<SpeechHandle, FloorError>
  /** Interrupts what the agent holding the floor is saying. */
  readonly interrupt: Effect.Effect<void>
  /**
   * Runs a tool call waiting for approval (`tool_approval_requested`; `Tool.make({ needsApproval })`).
   * Fails with `InvalidInput` when no call with that id is waiting.
   */
  readonly approve: (callId: string) => Effect.Effect<void, InvalidInput>
  /**
   * Answers a tool call waiting for approval without running it: the model reads that it was not
   * approved, and `reason` if given. Fails with `InvalidInput` when no call with that id is waiting.
   */
  readonly reject: (callId: string, options?: { readonly reason?: string }) => Effect.Effect<void, InvalidInput>
  /** The ids of the tool calls waiting for approval, oldest first. */
  readonly pendingApprovals: Effect.Effect<ReadonlyArray<string>>
  /**
   * Hands the floor to `agent` from outside (the holder's current reply is cut). The agent runs
   * with the services the session was started with: it may need only what `start` needed (`R`).
   */
  readonly handoff: (agent: Agent<R>, options?: HandoffOptions) => Effect.Effect<HandoffOutcome>
  /**
   * A person takes the floor (`Human`): the agent holding it stops at once, as on a barge-in (its
   * speech cut, its running tool calls answered, a running task cancelled), and says nothing more;
   * the caller's words go to `human.heard` and the human's (`human.say`) to the caller, both
   * recorded in the history. `NotApplied` when a human already holds it or no agent does.
   * `afterTask`: a task holding the floor (a transfer the human answered) is not cancelled; the
   * human takes the floor when it returns, in that step, so its result reaches the tool and the
   * agent never replies to it. Such a take-over waits at most `timeout` (30 seconds) for the
   * return, and is withdrawn if interrupted: then `NotApplied`, and the agent keeps the floor.
   */
  readonly takeOver: (human: Human, options?: TakeOverOptions) => Effect.Effect<HandoffOutcome>
  /**
   * The human holding the floor hands it back to `agent` (resumed when it was paused, as a
   * handoff would: its onResume or onEnter runs); `note` is an instruction for its next reply.
   */
  readonly handBack: (agent: Agent<R>, options?: HandBackOptions) => Effect.Effect<HandoffOutcome>
  /**
   * Text only the agent holding the floor sees, as instructions for its next reply (an operator
   * listening in). Fails with `FloorError` when no agent holds the floor.
   */
  readonly whisper: (text: string) => Effect.Effect<void, FloorError>
  /** The person holding the floor, if one does (then `currentAgent` is undefined). */
  readonly currentHuman: Effect.Effect<Human | undefined>
  /** The whole conversation: every agent's items and the handoff records. */
  readonly history: Effect.Effect<ChatContext>
  /** The agent holding the floor. */
  readonly currentAgent: Effect.Effect<Agent | undefined>
  /** Events from the moment the stream is run, up to and including `close`. */
  readonly events: Stream.Stream<SessionEvent>
  /** Every event kept so far (the last 20,000). */
  readonly eventLog: Effect.Effect<ReadonlyArray<SessionEvent>>
  /** The kept events whose sequence number is `seq` or later. */
  readonly eventsSince: (seq: number) => Effect.Effect<ReadonlyArray<SessionEvent>>
  /** Whether the session has started closing. */
  readonly closed: Effect.Effect<boolean>
  /** What the session's model calls used so far: tokens and audio per model and per agent. */
  readonly usage: Effect.Effect<UsageSummary>
  /** Completes once the session is closed. */
  readonly awaitClosed: Effect.Effect<void>
  readonly close: Effect.Effect<void>
  /** Connections of the realtime pool: open now, and opened in all (undefined without one). */
  readonly realtime: () => { readonly open: number; readonly opened: number } | undefined
}

/**
 * `R`: what the entry agent and the session's tools need from the program; see `Agent`.
 *
 * @since 0.1.0
 * @category models
 */
export interface StartOptions<U, R = never> {
  readonly agent: Agent<R>
  readonly userdata?: U
  /** Where agents' words go (default: the `TextOutput` of the context). */
  readonly textOutput?: TextOutputService
  /** Output guardrails on what every agent of the session says (see `Guardrail.output`). */
  readonly guardrails?: ReadonlyArray<Guardrail.OutputGuardrail<R>>
  /**
   * Tools every agent of the session has. Their background calls belong to the session (they
   * outlive a handoff) and report to whoever holds the floor.
   */
  readonly tools?: ReadonlyArray<Tool<unknown, R>>
  /** The longest user text `send` and `run` take (characters; default 32,000). */
  readonly maxInputChars?: number
  /**
   * No word from the user for this long while the agent waits for them: `user_state_changed` to
   * `away`, and the holder's `onUserAway` runs (default: never).
   */
  readonly userAwayTimeout?: Duration.Input
}

/**
 * Options of `session.run`: whether to wait for background tools too.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions {
  /** Also wait for background (long-running) tools to finish and be told (default false). */
  readonly waitForBackground?: boolean
}

/**
 * Starts a session in the current Scope with `options.agent` holding the floor: the event log,
 * the supervisor (mailbox, floor, actors) and the facade the program talks to. Closing that
 * Scope closes the session.
 *
 * Not a span of its own (unlike `run`, `say`, `handoff`): the session's fibers are forked here
 * and would all carry it as their parent for the session's whole life.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { AgentSession } from "@baton-voice/baton"
 * import { OpenAiChat } from "@baton-voice/baton/openai"
 *
 * const program = Effect.gen(function*() {
 *   const session = yield* AgentSession.start({ agent: greeter })
 *   const result = yield* session.run("What's the weather in Paris?")
 *   console.log(result.toString())
 * }).pipe(Effect.scoped, Effect.provide(OpenAiChat.layerConfigFetch))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const start: <
  U = undefined,
  R = never,
  const T extends ReadonlyArray<AnyTool> = readonly [],
  S extends SessionStoreService | undefined = undefined,
  G = never
>(
  options: Omit<StartOptions<U, R>, "tools" | "guardrails"> & {
    readonly tools?: T
    readonly guardrails?: ReadonlyArray<Guardrail.OutputGuardrail<G>>
  } & StoreOptions<U, S>
) => Effect.Effect<
  AgentSession<U, R | ToolRequirements<T> | G>,
  MissingModel | ([S] extends [undefined] ? never : UserdataRefused | StoreError),
  Scope.Scope | R | ToolRequirements<T> | G
> = Effect.fnUntraced(
  function*<U>(options: StartOptions<U, unknown> & StoreOptions<U, SessionStoreService | undefined>) {
    yield* Session.requireModel(options.agent as Agent)
    // A durable session's userdata is checked and the session created in the store first.
    const durable = options.store ? yield* Durable.create({ ...options, store: options.store }, options.userdata) : undefined
    return yield* Session.launch(options, durable)
  }
  // (Its errors are those of a durable start only when a store is given: a type the checker
  // cannot see in the body.)
) as unknown as typeof start

/**
 * Resumes a durable session from its journal in the current Scope: the session is claimed (a
 * process still writing it is fenced and stops), its agents are found again by name among
 * `agents`, and it goes on where its journal ends (docs/durability.md says what a program sees).
 *
 * @since 0.1.0
 * @category constructors
 */
export const resume: <U = undefined, R = never, G = never>(
  options: Omit<StartOptions<U, R>, "agent" | "userdata" | "guardrails"> & Omit<StoreOptions<U, SessionStoreService>, "id" | "store"> & {
    readonly id: string
    readonly store: SessionStoreService
    readonly agents: ReadonlyArray<Agent<R>>
    readonly guardrails?: ReadonlyArray<Guardrail.OutputGuardrail<G>>
  }
) => Effect.Effect<
  AgentSession<U, R | G>,
  StoreError | SessionNotFound | SessionNotResumable | AgentNotFound | UserdataRefused,
  Scope.Scope | R | G
> = Effect.fnUntraced(function*<U>(
  options: Omit<StartOptions<U, unknown>, "agent" | "userdata"> & Omit<StoreOptions<U, SessionStoreService>, "id" | "store"> & {
    readonly id: string
    readonly store: SessionStoreService
    readonly agents: ReadonlyArray<Agent<unknown>>
  }
) {
  const { prepared, userdata } = yield* Durable.claim(options, options.agents as ReadonlyArray<Agent>)
  return yield* Session.launch({ ...options, agent: options.agents[0]!, userdata: userdata as U }, prepared)
})
