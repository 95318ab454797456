/**
 * The session's supervisor: its mailbox and the fiber that handles it one message at a time
 * (`Floor.handle`), the core its actors share, the realtime pool, and the shutdown. Assembled by
 * `AgentSession.start`, which puts the public face (the facade) on it.
 */
import { Cause, Deferred, Effect, Exit, Fiber, Queue, Scope } from "effect"
import type { LanguageModel } from "effect/ai"
import type { RealtimeModel } from "../../services/RealtimeModel.ts"
import type { TextOutputService } from "../../services/TextOutput.ts"
import type { AgentSession } from "../AgentSession.ts"
import { ChatContext, type ChatItem, nextId } from "../ChatContext.ts"
import { FloorError } from "../Errors.ts"
import type { Tool } from "../Tool.ts"
import * as Background from "./Background.ts"
import * as EventLog from "./EventLog.ts"
import * as Floor from "./Floor.ts"
import * as RealtimePool from "./realtime/Pool.ts"
import type { SessionCore, SessionMessage } from "./SessionCore.ts"
import { wakeTakerNow } from "./EffectFastPaths.ts"
import * as Work from "./Work.ts"
import { CurrentFlowObserver, type FlowObserver } from "../FlowObserver.ts"

export interface Config {
  /** The session's own Scope (forked from the one it was started in). */
  readonly scope: Scope.Closeable
  readonly events: EventLog.EventLog
  readonly now: () => number
  readonly textOutput: TextOutputService
  readonly defaultModel: LanguageModel.LanguageModel | undefined
  readonly realtimeModel: RealtimeModel["Service"] | undefined
  readonly tools: ReadonlyArray<Tool>
  readonly userdata: unknown
  /** The public session, for tool and hook contexts (made after the supervisor). */
  readonly session: () => AgentSession<unknown>
  /** The session's id (default: a fresh one); a durable session's is its id in the store. */
  readonly id?: string | undefined
  /** The shared history a resumed session starts with. */
  readonly history?: ChatContext | undefined
  /** Runs before each message is handled (a durable session's journal flush); none by default. */
  readonly beforeStep?: Effect.Effect<void> | undefined
}

export interface Supervisor {
  readonly core: SessionCore
  readonly state: Floor.FloorState
  readonly closed: () => boolean
  /** Handles the mailbox until the session's Scope closes. */
  readonly loop: Effect.Effect<never, Cause.Done>
  /** Closes the actors (innermost first), answers what is left, emits `close`, closes the Scope. */
  readonly shutdown: Effect.Effect<void>
  /** `shutdown` in a fiber of its own (a tool may close the session it runs in), the session
   * closed to new work at once: nothing starts while that fiber is scheduled (rule 11). */
  readonly close: Effect.Effect<void>
  /** Waits until no message, speech, hook or tool is in flight, and no background call runs. */
  readonly idleWithBackground: Effect.Effect<void>
  readonly closedSignal: Deferred.Deferred<void>
}

/** The supervisor's own state: one record, written by the functions below. */
interface Running {
  readonly config: Config
  /** Read once from the context the session starts in (`CurrentFlowObserver`; none by default). */
  readonly observer: FlowObserver | undefined
  readonly mailbox: Queue.Queue<SessionMessage, Cause.Done>
  readonly backgroundScope: Scope.Closeable
  readonly closedSignal: Deferred.Deferred<void>
  readonly work: Work.Work
  readonly background: Work.Work
  readonly state: Floor.FloorState
  /** Session tools' reports, taken by whoever holds the floor when it is idle. */
  readonly sessionDeliveries: Array<Background.Delivery>
  /** No new work: set by `close` at once, or by `shutdown` as it starts. */
  closed: boolean
  /** `shutdown` has started (it runs once). */
  shuttingDown: boolean
  userSpeaking: boolean
  userTurns: number
  /** The realtime connection that reported the user speaking, if one did. */
  speakingOn: string | undefined
  history: ChatContext
}

export const make = (config: Config): Effect.Effect<Supervisor> =>
  Effect.gen(function*() {
    const r: Running = {
      config,
      observer: yield* CurrentFlowObserver,
      mailbox: yield* Queue.unbounded<SessionMessage, Cause.Done>(),
      backgroundScope: yield* Scope.fork(config.scope),
      closedSignal: yield* Deferred.make<void>(),
      work: Work.make(),
      background: Work.make(),
      state: Floor.makeState(),
      sessionDeliveries: [],
      closed: false,
      shuttingDown: false,
      userSpeaking: false,
      userTurns: 0,
      speakingOn: undefined,
      history: config.history ?? ChatContext.empty
    }
    const pool = config.realtimeModel
      ? yield* RealtimePool.make({
        model: config.realtimeModel,
        parent: config.scope,
        now: config.now,
        ended: (connectionId) => {
          if (r.speakingOn === connectionId) setUserSpeaking(r, false)
        },
        // A closing session's connections close with it: no event after `close`.
        report: (agent, connectionId, action) =>
          void (r.closed || EventLog.emit(config.events, { type: "realtime_connection", agent, connectionId, action }))
      })
      : undefined
    const core = makeCore(r, pool)
    return {
      core,
      state: r.state,
      closed: () => r.closed,
      loop: loop(r, core),
      shutdown: shutdown(r),
      close: close(r),
      idleWithBackground: idleWithBackground(r),
      closedSignal: r.closedSignal
    }
  })

/** What the floor and the actors share. */
const makeCore = (r: Running, realtimePool: RealtimePool.Pool | undefined): SessionCore => {
  const { config } = r
  const core: SessionCore = {
    id: config.id ?? nextId("session"),
    work: r.work,
    background: r.background,
    userSpeaking: () => r.userSpeaking,
    setUserSpeaking: (speaking, connectionId) => setUserSpeaking(r, speaking, connectionId),
    userTurns: () => r.userTurns,
    realtimePool,
    sessionTools: config.tools,
    sessionOwner: {
      kind: "session",
      scope: r.backgroundScope,
      running: new Map(),
      report: (delivery) => send(r, { _tag: "Background", delivery })
    },
    sessionDeliveries: r.sessionDeliveries,
    scope: config.scope,
    userdata: config.userdata,
    textOutput: config.textOutput,
    defaultModel: config.defaultModel,
    observer: r.observer,
    session: config.session,
    send: (msg) => send(r, msg),
    handleNow: () => wakeTakerNow(r.mailbox),
    // A closing session has no holder: nothing starts a reply or a model call any more.
    holder: () => (r.closed ? undefined : r.state.holder),
    closed: () => r.closed,
    emit: (input) => EventLog.emit(config.events, input),
    record: (item, agent, followedBy) => record(r, item, agent, followedBy),
    history: () => r.history,
    now: config.now
  }
  return core
}

/** Records an item in the session's history: at the end, or before the first of `followedBy`. */
const record = (r: Running, item: ChatItem, agent: string | undefined, followedBy?: ReadonlyArray<string>) => {
  const before = followedBy === undefined ? undefined : r.history.firstOf(followedBy)
  r.history = r.history.insertBefore(item, before)
  EventLog.emit(r.config.events, { type: "conversation_item_added", agent, item, ...(before !== undefined ? { before } : {}) })
}

/** Where the session records what session tools reported once no holder takes it. */
const sessionRecorder = (r: Running) => ({ name: "session", commit: (item: ChatItem) => record(r, item, undefined) })

/** A message that can no longer be handled still gets an answer. */
const rejectClosed = (r: Running, msg: SessionMessage) => {
  switch (msg._tag) {
    case "Say":
    case "Reply":
      return void Deferred.doneUnsafe(msg.reply, Effect.fail(new FloorError({ agent: "", reason: "session_closed", message: "the session is closed" })))
    case "Handoff":
    case "TakeOver":
    case "WithdrawTakeOver":
    case "HandBack":
      return void Deferred.doneUnsafe(msg.reply, Effect.succeed({ _tag: "NotApplied", reason: "the session is closed" } as const))
    case "HumanSay":
    case "Whisper":
      return void Deferred.doneUnsafe(msg.reply, Effect.fail(new FloorError({ agent: "", reason: "session_closed", message: "the session is closed" })))
    case "StartTask":
      return void Deferred.doneUnsafe(msg.result, Effect.interrupt)
    case "Background":
      return Background.flush(sessionRecorder(r), [msg.delivery])
    default:
      return
  }
}

/** To the mailbox, holding a work token until it is handled. */
const send = (r: Running, msg: SessionMessage) => {
  if (r.closed) return rejectClosed(r, msg)
  Work.acquire(r.work)
  if (!Queue.offerUnsafe(r.mailbox, msg)) {
    Work.release(r.work)
    rejectClosed(r, msg)
  }
}

const setUserSpeaking = (r: Running, speaking: boolean, connectionId?: string) => {
  r.speakingOn = speaking ? connectionId : undefined
  if (speaking === r.userSpeaking || r.closed) return
  r.userSpeaking = speaking
  if (speaking) r.userTurns++
  EventLog.emit(r.config.events, { type: "user_state_changed", state: speaking ? "speaking" : "listening" })
  send(r, { _tag: "UserSpeaking", speaking, userTurn: r.userTurns })
}

// Plain effects, not a generator: every handoff passes through here.
const loop = (r: Running, core: SessionCore): Effect.Effect<never, Cause.Done> => {
  const failed = (cause: Cause.Cause<unknown>) => {
    EventLog.emit(r.config.events, { type: "error", agent: undefined, source: "input", message: Cause.pretty(cause), recoverable: true })
    return Effect.void
  }
  // However the message's handling ends, on the step it ends on.
  const handled = () => {
    Work.release(r.work)
    return Effect.void
  }
  const step = Effect.flatMap(Queue.take(r.mailbox), (msg) => Effect.onExit(Effect.catchCause(Floor.handle(core, r.state, msg), failed), handled))
  // A durable session's previous step is in the store before this one starts.
  const next = r.config.beforeStep ? Effect.andThen(r.config.beforeStep, step) : step
  return Effect.forever(next, { disableYield: true })
}

const shutdown = (r: Running): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (r.shuttingDown) return
    r.shuttingDown = true
    r.closed = true
    // Innermost first: tasks before their callers, then the agents.
    const actors = [...r.state.live].reverse()
    for (const actor of actors) yield* Scope.close(actor.scope, Exit.void)
    // What session tools reported before the close (taken by no holder yet, or still in the
    // mailbox) is recorded before the cancelled results the close makes them report (rule 9).
    Background.flush(sessionRecorder(r), r.sessionDeliveries)
    r.state.holder = undefined
    // A take-over waiting for a task's return is answered: that task will not return now.
    const claim = r.state.claim
    r.state.claim = undefined
    if (claim) rejectClosed(r, claim)
    for (const msg of yield* Queue.clear(r.mailbox)) {
      rejectClosed(r, msg)
      Work.release(r.work)
    }
    // From here a report is recorded as it comes (rejectClosed).
    yield* Scope.close(r.backgroundScope, Exit.void)
    EventLog.emit(r.config.events, { type: "close", reason: "closed", usage: r.config.events.usage.summary() })
    yield* Scope.close(r.config.scope, Exit.void)
    yield* Deferred.succeed(r.closedSignal, undefined)
  })

/** A background call reports (acquiring a work token) before it stops counting, so this never
 * sees both counts at zero while a result is on its way. */
const idleWithBackground = (r: Running): Effect.Effect<void> =>
  Effect.gen(function*() {
    while (true) {
      yield* Work.idle(r.work)
      if (Work.count(r.background) === 0) return
      yield* Work.idle(r.background)
    }
  })

/** Closing may be asked from inside an actor (a tool that ends the call): it runs outside
 * every actor's Scope so it never waits for itself. */
const close = (r: Running): Effect.Effect<void> =>
  Effect.suspend(() => {
    r.closed = true
    return Effect.forkDetach(shutdown(r)).pipe(Effect.flatMap(Fiber.await), Effect.asVoid)
  })
