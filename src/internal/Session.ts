/**
 * The running session behind `AgentSession.start` and `resume`: `launch` builds it (event log,
 * supervisor, guardrails, observers, a durable session's journal) and `facade` is what the
 * program holds, each entry point a message to the supervisor or a read of its state.
 */
import { Clock, Deferred, Duration, Effect, Option, Scope, Semaphore, Stream } from "effect"
import { LanguageModel } from "effect/ai"
import { type RealtimeError, RealtimeModel } from "../../services/RealtimeModel.ts"
import { TextOutput } from "../../services/TextOutput.ts"
import type { Agent } from "../Agent.ts"
import type { ReplyOptions, SayOptions } from "../CurrentAgent.ts"
import * as Diagnostics from "../Diagnostics.ts"
import * as Approvals from "./Approvals.ts"
import * as Guardrails from "./Guardrails.ts"
import * as Durable from "./Durable.ts"
import { type FloorError, InvalidInput, MissingModel, SessionClosed, TurnFailed } from "../Errors.ts"
import * as RealtimePool from "./realtime/Pool.ts"
import * as EventLog from "./EventLog.ts"
import * as Preemptive from "./Preemptive.ts"
import * as RealtimeBinding from "./realtime/Binding.ts"
import * as Supervisor from "./Supervisor.ts"
import * as UserAway from "./UserAway.ts"
import * as SessionObserver from "../SessionObserver.ts"
import type { HandoffOptions } from "../Handoff.ts"
import type { Human } from "../Human.ts"
import { type HandBackOptions, TAKE_OVER_TIMEOUT, type TakeOverOptions } from "./HumanFloor.ts"
import { RunResult } from "../RunResult.ts"
import type { HandoffOutcome, SessionMessage } from "./SessionCore.ts"
import type { SpeechHandle } from "../Speech.ts"
import type { Tool } from "../Tool.ts"
import * as Work from "./Work.ts"
import type { AgentSession, RunOptions, StartOptions } from "../AgentSession.ts"

/**
 * The agent a session starts with answers the user's first turn: it needs a model, its own, the
 * session's (a `LanguageModel` in the context) or a realtime one. Said at start, not at the first
 * reply. (Agents handed the floor later are checked as they reply: `MissingModel` there too.)
 */
export const requireModel = (agent: Agent): Effect.Effect<void, MissingModel> =>
  Effect.gen(function*() {
    if (agent.model) return
    if (Option.isSome(yield* Effect.serviceOption(LanguageModel.LanguageModel))) return
    if (Option.isSome(yield* Effect.serviceOption(RealtimeModel))) return
    return yield* Effect.fail(MissingModel.of(agent.name))
  })

/** The session itself; `durable`: its claim in a store (and, resuming, its journal folded). */
export const launch = Effect.fnUntraced(
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
    const session: AgentSession<U, unknown> = facade<U>(supervisor, events, options, yield* Semaphore.make(1), durable)
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

const takeOver = Effect.fn("AgentSession.takeOver")((facade: Facade, human: Human, options: TakeOverOptions = {}) =>
  Effect.flatMap(Deferred.make<HandoffOutcome>(), (reply) => {
    const core = facade.supervisor.core
    core.send({ _tag: "TakeOver", human, reason: options.reason, afterTask: options.afterTask, reply })
    if (!options.afterTask) return Deferred.await(reply)
    // A claim on a task's return is bounded, and withdrawn if its asker goes: the supervisor
    // answers the withdrawal in its own step, so the outcome is whichever happened first.
    const withdraw = (reason: string) =>
      Effect.suspend(() => {
        core.send({ _tag: "WithdrawTakeOver", reply, reason })
        return Deferred.await(reply)
      })
    const bound = Duration.fromInputUnsafe(options.timeout ?? TAKE_OVER_TIMEOUT)
    return Deferred.await(reply).pipe(
      Effect.timeoutOrElse({ duration: bound, orElse: () => withdraw(`the task did not return within ${Duration.format(bound)}`) }),
      Effect.onInterrupt(() => withdraw("the take-over was cancelled"))
    )
  }))

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
  runLock: Semaphore.Semaphore,
  durable: Durable.Prepared | undefined
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
    persist: durable ? Durable.persist(durable) : Effect.void,
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
      start: (text, onText) => Preemptive.start(core, text, onText),
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
