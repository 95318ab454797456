/**
 * A session: the supervisor of one conversation. It owns the floor, the shared history, the
 * event stream and the actors, and processes its mailbox one message at a time. It lives in
 * the Scope it was started in; closing that Scope (or `close`) closes every actor's Scope.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Clock, Deferred, Duration, Effect, Option, Scope, Semaphore, Stream } from "effect"
import { LanguageModel } from "effect/ai"
import { type RealtimeError, RealtimeModel } from "../services/RealtimeModel.ts"
import type { SessionNotFound, SessionStoreService, StoreError } from "../services/SessionStore.ts"
import { TextOutput, type TextOutputService } from "../services/TextOutput.ts"
import type { VoiceError } from "../services/VoiceError.ts"
import type { Agent, ToolRequirements } from "./Agent.ts"
import type { ChatContext } from "./ChatContext.ts"
import type { ReplyOptions, SayOptions } from "./CurrentAgent.ts"
import * as Diagnostics from "./Diagnostics.ts"
import type { AgentNotFound, SessionNotResumable, StoreOptions, UserdataRefused } from "./Durability.ts"
import * as Approvals from "./internal/Approvals.ts"
import * as Guardrails from "./internal/Guardrails.ts"
import type * as Guardrail from "./Guardrail.ts"
import * as Durable from "./internal/Durable.ts"
import { type FloorError, InvalidInput, MissingModel, SessionClosed, TurnFailed } from "./Errors.ts"
import type { SessionEvent, VoiceDecision } from "./Events.ts"
import * as RealtimePool from "./internal/realtime/Pool.ts"
import * as EventLog from "./internal/EventLog.ts"
import * as Preemptive from "./internal/Preemptive.ts"
import * as RealtimeBinding from "./internal/realtime/Binding.ts"
import * as Supervisor from "./internal/Supervisor.ts"
import * as UserAway from "./internal/UserAway.ts"
import * as SessionObserver from "./SessionObserver.ts"
import type { UsageSummary } from "./observe/Usage.ts"
import type { HandoffOptions } from "./Handoff.ts"
import type { Human } from "./Human.ts"
import type { HandBackOptions } from "./internal/HumanFloor.ts"
import { RunResult } from "./RunResult.ts"
import type { HandoffOutcome, SessionMessage } from "./internal/SessionCore.ts"
import type { SpeechHandle } from "./Speech.ts"
import type { Any as AnyTool, Tool } from "./Tool.ts"
import * as Work from "./internal/Work.ts"

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
   */
  readonly preemptive: {
    readonly start: (text: string) => Effect.Effect<boolean>
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
   */
  readonly takeOver: (human: Human, options?: { readonly reason?: string }) => Effect.Effect<HandoffOutcome>
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
    yield* requireModel(options.agent as Agent)
    // A durable session's userdata is checked and the session created in the store first.
    const durable = options.store ? yield* Durable.create({ ...options, store: options.store }, options.userdata) : undefined
    return yield* launch(options, durable)
  }
  // (Its errors are those of a durable start only when a store is given: a type the checker
  // cannot see in the body.)
) as unknown as typeof start

/**
 * The agent a session starts with answers the user's first turn: it needs a model, its own, the
 * session's (a `LanguageModel` in the context) or a realtime one. Said at start, not at the first
 * reply. (Agents handed the floor later are checked as they reply: `MissingModel` there too.)
 */
const requireModel = (agent: Agent): Effect.Effect<void, MissingModel> =>
  Effect.gen(function*() {
    if (agent.model) return
    if (Option.isSome(yield* Effect.serviceOption(LanguageModel.LanguageModel))) return
    if (Option.isSome(yield* Effect.serviceOption(RealtimeModel))) return
    return yield* Effect.fail(MissingModel.of(agent.name))
  })

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
  return yield* launch({ ...options, agent: options.agents[0]!, userdata: userdata as U }, prepared)
})

/** The session itself; `durable`: its claim in a store (and, resuming, its journal folded). */
const launch = Effect.fnUntraced(
  function*<U>(options: StartOptions<U, unknown>, durable: Durable.Prepared | undefined) {
    const parent = yield* Effect.scope
    const scope = yield* Diagnostics.forkScope(parent, "sessions")
    const clock = yield* Clock.Clock
    const now = () => clock.currentTimeMillisUnsafe()
    const log = yield* EventLog.make(now)
    const events = durable ? Durable.watch(log, durable) : log
    const guardrails = Guardrails.make(options.guardrails ?? [])
    const supervisor: Supervisor.Supervisor = yield* Supervisor.make({
      scope,
      events,
      now,
      ...(durable ? { id: durable.id, history: Durable.history(durable), beforeStep: Durable.beforeStep(durable) } : {}),
      textOutput: Guardrails.wrapOutput(guardrails, options.textOutput ?? (yield* TextOutput)),
      defaultModel: Option.getOrUndefined(yield* Effect.serviceOption(LanguageModel.LanguageModel)),
      realtimeModel: Option.getOrUndefined(yield* Effect.serviceOption(RealtimeModel)),
      // What they need is in `start`'s requirements: the session's fibers, forked here, have it.
      tools: (options.tools ?? []) as ReadonlyArray<Tool>,
      userdata: options.userdata,
      session: () => session
    })
    const session: AgentSession<U, unknown> = facade<U>(supervisor, events, options, yield* Semaphore.make(1))
    yield* Guardrails.attach(guardrails, supervisor.core)
    // Observers (recorder, metrics, traces) watch from before the first message; their
    // finalizers run after the session's shutdown (registered before it), so they see `close`.
    yield* SessionObserver.observeAll(session as AgentSession<unknown>).pipe(Scope.provide(parent))
    // A durable session's journal, and its actors restored or its entry agent started.
    if (durable) yield* Durable.attach(durable, supervisor, parent, options.agent as Agent)
    yield* supervisor.loop.pipe(Diagnostics.forkIn(scope))
    // Registered after the session's Scope was forked, so it runs before that Scope closes.
    yield* Scope.addFinalizer(parent, supervisor.shutdown)
    // Watching from before the first event (the entry agent's first `listening`).
    if (options.userAwayTimeout !== undefined) {
      yield* UserAway.run(supervisor.core, session.events, Duration.toMillis(Duration.fromInputUnsafe(options.userAwayTimeout))).pipe(
        Diagnostics.startIn(scope, { startImmediately: true })
      )
    }
    if (!durable) supervisor.core.send({ _tag: "Start", agent: options.agent as Agent })
    return session
  }
)

/** What the facade's entry points work on (one per session). */
interface Facade {
  readonly supervisor: Supervisor.Supervisor
  readonly events: EventLog.EventLog
  readonly maxInputChars: number
}

const tooLong = (facade: Facade, text: string) =>
  text.length > facade.maxInputChars
    ? Effect.fail(new InvalidInput({ message: `the user's text has ${text.length} characters, over the limit of ${facade.maxInputChars} (maxInputChars)` }))
    : undefined

const isClosed = (facade: Facade, what: string) =>
  Effect.fail(new SessionClosed({ message: `${what}: session ${facade.supervisor.core.id} is closed; start a new one` }))

const ask = <A, E>(facade: Facade, make: (reply: Deferred.Deferred<A, E>) => SessionMessage) =>
  Effect.flatMap(Deferred.make<A, E>(), (reply) => {
    facade.supervisor.core.send(make(reply))
    return Deferred.await(reply)
  })

// The entry points are named spans, defined once for every session. `run` is on every turn's
// path: its span skips the call-site stack capture (Effect.fn's), which cost a tenth of a run.
const run = (facade: Facade, text: string, runOptions: RunOptions = {}) =>
  runBody(facade, text, runOptions).pipe(Effect.withSpan("AgentSession.run", undefined, { captureStackTrace: false }))

const runBody = Effect.fnUntraced(function*(facade: Facade, text: string, runOptions: RunOptions) {
  const { supervisor, events } = facade
  const work = supervisor.core.work
  if (supervisor.closed()) return yield* isClosed(facade, "run")
  const refused = tooLong(facade, text)
  if (refused) return yield* refused
  yield* Work.idle(work)
  if (supervisor.closed()) return yield* isClosed(facade, "run")
  const from = EventLog.next(events)
  supervisor.core.send({ _tag: "Input", text })
  yield* runOptions.waitForBackground ? supervisor.idleWithBackground : Work.idle(work)
  const result = new RunResult(EventLog.since(events, from))
  if (result.unanswered) {
    const errors = result.errors
    return yield* new TurnFailed({ message: `the turn got no answer: ${errors.map((e) => e.message).join("; ")}`, errors, result })
  }
  return result
})

const say = Effect.fn("AgentSession.say")((facade: Facade, text: string, options: SayOptions = {}) =>
  ask<SpeechHandle, FloorError>(facade, (reply) => ({ _tag: "Say", text, options, reply }))
)

const generateReply = Effect.fn("AgentSession.generateReply")((facade: Facade, options: ReplyOptions = {}) =>
  ask<SpeechHandle, FloorError>(facade, (reply) => ({ _tag: "Reply", options, reply }))
)

const handoff = Effect.fn("AgentSession.handoff")((facade: Facade, target: Agent, options: HandoffOptions = {}) =>
  ask<HandoffOutcome, never>(facade, (reply) => ({ _tag: "Handoff", from: undefined, target, options, reply }))
)

const takeOver = Effect.fn("AgentSession.takeOver")((facade: Facade, human: Human, options: { readonly reason?: string } = {}) =>
  ask<HandoffOutcome, never>(facade, (reply) => ({ _tag: "TakeOver", human, reason: options.reason, reply }))
)

const handBack = Effect.fn("AgentSession.handBack")((facade: Facade, agent: Agent, options: HandBackOptions = {}) =>
  ask<HandoffOutcome, never>(facade, (reply) => ({ _tag: "HandBack", agent, options, reply }))
)

const whisper = Effect.fn("AgentSession.whisper")((facade: Facade, text: string) =>
  ask<void, FloorError>(facade, (reply) => ({ _tag: "Whisper", text, reply }))
)

/** The session as the program sees it, over the supervisor. */
const facade = <U>(
  supervisor: Supervisor.Supervisor,
  events: EventLog.EventLog,
  options: StartOptions<U, unknown>,
  runLock: Semaphore.Semaphore
): AgentSession<U, unknown> => {
  const { core, state } = supervisor
  const work = core.work
  const self: Facade = { supervisor, events, maxInputChars: options.maxInputChars ?? 32_000 }
  return {
    id: core.id,
    userdata: options.userdata as U,
    send: (text) =>
      Effect.suspend((): Effect.Effect<void, SessionClosed | InvalidInput> =>
        supervisor.closed() ? isClosed(self, "send") : tooLong(self, text) ?? Effect.sync(() => core.send({ _tag: "Input", text }))
      ),
    run: (text, runOptions) => runLock.withPermit(run(self, text, runOptions)),
    idle: Work.idle(work),
    idleWithBackground: supervisor.idleWithBackground,
    setUserSpeaking: (speaking) => Effect.sync(() => core.setUserSpeaking(speaking)),
    transcribed: (transcript, final) =>
      Effect.sync(() => void (supervisor.closed() || EventLog.emit(events, { type: "user_input_transcribed", transcript, final }))),
    voiceError: (error) =>
      Effect.sync(() =>
        void (supervisor.closed() || EventLog.emit(events, {
          type: "error",
          agent: state.holder?.name,
          source: "voice",
          message: error.message,
          ...(error.status !== undefined ? { status: error.status } : {}),
          retryable: error.retryable,
          recoverable: true
        }))
      ),
    voiceDecision: (decision) =>
      Effect.sync(() => void (supervisor.closed() || EventLog.emit(events, { type: "voice_decision", ...decision }))),
    preemptive: {
      start: (text) => Preemptive.start(core, text),
      commit: (text) => Preemptive.commit(core, text),
      discard: Preemptive.discard(core)
    },
    pushAudio: (pcm) =>
      Effect.suspend((): Effect.Effect<void, RealtimeError | SessionClosed> =>
        supervisor.closed() ? isClosed(self, "pushAudio") : state.holder ? RealtimeBinding.pushAudio(state.holder, pcm) : Effect.void
      ),
    realtime: () => (core.realtimePool ? RealtimePool.stats(core.realtimePool) : undefined),
    say: (text, sayOptions) => say(self, text, sayOptions),
    generateReply: (replyOptions) => generateReply(self, replyOptions),
    interrupt: Effect.sync(() => core.send({ _tag: "Interrupt" })),
    approve: (callId) => Approvals.approve(core, callId),
    reject: (callId, rejectOptions) => Approvals.reject(core, callId, rejectOptions),
    pendingApprovals: Effect.sync(() => Approvals.pending(core)),
    // `start` (or the caller's `AgentSession<U, R>`) checked that the session has what it needs.
    handoff: (agent, handoffOptions) => handoff(self, agent as Agent, handoffOptions),
    takeOver: (human, takeOverOptions) => takeOver(self, human, takeOverOptions),
    handBack: (agent, handBackOptions) => handBack(self, agent as Agent, handBackOptions),
    whisper: (text) => whisper(self, text),
    currentHuman: Effect.sync(() => state.human?.human),
    history: Effect.sync(() => core.history()),
    currentAgent: Effect.sync(() => state.holder?.agent),
    events: Stream.suspend(() =>
      supervisor.closed() ? Stream.empty : events.live.pipe(Stream.takeUntil((event) => event.type === "close"))
    ),
    eventLog: Effect.sync(() => [...EventLog.all(events)]),
    eventsSince: (from) => Effect.sync(() => EventLog.since(events, from)),
    closed: Effect.sync(() => supervisor.closed()),
    usage: Effect.sync(() => events.usage.summary()),
    awaitClosed: Deferred.await(supervisor.closedSignal),
    close: supervisor.close
  }
}
