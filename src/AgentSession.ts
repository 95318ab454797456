/**
 * A session: the supervisor of one conversation. It owns the floor, the shared history, the
 * event stream and the actors, and processes its mailbox one message at a time. It lives in
 * the Scope it was started in; closing that Scope (or `close`) closes every actor's Scope.
 */
import { Cause, Clock, Deferred, Effect, Exit, Fiber, Option, PubSub, Queue, Scope, Semaphore, Stream } from "effect"
import { LanguageModel } from "effect/ai"
import { type RealtimeError, RealtimeModel } from "../services/RealtimeModel.ts"
import { TextOutput, type TextOutputService } from "../services/TextOutput.ts"
import type { Agent } from "./Agent.ts"
import { ChatContext, type ChatItem, nextId } from "./ChatContext.ts"
import type { ReplyOptions, SayOptions } from "./CurrentAgent.ts"
import * as Diagnostics from "./Diagnostics.ts"
import { FloorError, InvalidInput, SessionClosed, TurnFailed } from "./Errors.ts"
import type { EventInput, ModelCallEvent, SessionEvent } from "./Events.ts"
import * as Floor from "./internal/Floor.ts"
import * as RealtimeBinding from "./internal/realtime/Binding.ts"
import * as RealtimePool from "./internal/realtime/Pool.ts"
import * as SessionObserver from "./SessionObserver.ts"
import * as Usage from "./observe/Usage.ts"
import type { UsageSummary } from "./observe/Usage.ts"
import type { HandoffOptions } from "./Handoff.ts"
import { RunResult } from "./RunResult.ts"
import type { HandoffOutcome, SessionCore, SessionMessage } from "./internal/SessionCore.ts"
import type { SpeechHandle } from "./Speech.ts"
import type { Tool } from "./Tool.ts"
import * as Background from "./internal/Background.ts"
import * as Work from "./internal/Work.ts"

export interface AgentSession<U = unknown> {
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
   * The user's audio (PCM16 mono at the model's input rate) for the agent holding the floor,
   * when it talks through a realtime model; the model's turn detection takes it from there.
   * Dropped when the holder has no realtime model. Fails with `SessionClosed` once closing.
   */
  readonly pushAudio: (pcm: Uint8Array) => Effect.Effect<void, RealtimeError | SessionClosed>
  readonly say: (text: string, options?: SayOptions) => Effect.Effect<SpeechHandle, FloorError>
  readonly generateReply: (options?: ReplyOptions) => Effect.Effect<SpeechHandle, FloorError>
  /** Interrupts what the agent holding the floor is saying. */
  readonly interrupt: Effect.Effect<void>
  /** Hands the floor to `agent` from outside (the holder's current reply is cut). */
  readonly handoff: (agent: Agent, options?: HandoffOptions) => Effect.Effect<HandoffOutcome>
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

/** `R`: what the entry agent (and the session's tools) need from the program; see `Agent`. */
export interface StartOptions<U, R = any> {
  readonly agent: Agent<R>
  readonly userdata?: U
  /** Where agents' words go (default: the `TextOutput` of the context). */
  readonly textOutput?: TextOutputService
  /**
   * Tools every agent of the session has. Their background calls belong to the session (they
   * outlive a handoff) and report to whoever holds the floor.
   */
  readonly tools?: ReadonlyArray<Tool>
  /** The longest user text `send` and `run` take (characters; default 32,000). */
  readonly maxInputChars?: number
}

export interface RunOptions {
  /** Also wait for background (long-running) tools to finish and be told (default false). */
  readonly waitForBackground?: boolean
}

/** How many past events a session keeps for `eventLog` and run results. */
const LOG_LIMIT = 20_000

/** What a program must provide for `R`: nothing for an agent whose type says nothing (`Agent<any>`). */
export type Requirements<R> = 0 extends 1 & R ? never : R

export const start: <U = undefined, R = any>(
  options: StartOptions<U, R>
) => Effect.Effect<AgentSession<U>, never, Scope.Scope | Requirements<R>> = <U = undefined>(
  options: StartOptions<U>
): Effect.Effect<AgentSession<U>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const parent = yield* Effect.scope
    const scope = yield* Diagnostics.forkScope(parent, "sessions")
    const clock = yield* Clock.Clock
    const textOutput = options.textOutput ?? (yield* TextOutput)
    const closedSignal = yield* Deferred.make<void>()
    const defaultModel = Option.getOrUndefined(yield* Effect.serviceOption(LanguageModel.LanguageModel))
    const realtimeModel = Option.getOrUndefined(yield* Effect.serviceOption(RealtimeModel))
    const pubsub = yield* PubSub.unbounded<SessionEvent>()
    const mailbox = yield* Queue.unbounded<SessionMessage, Cause.Done>()
    const runLock = yield* Semaphore.make(1)
    const work = Work.make()
    const background = Work.make()
    const backgroundScope = yield* Scope.fork(scope)
    const sessionDeliveries: Array<Background.Delivery> = []
    let userSpeaking = false
    let userTurns = 0
    const state = Floor.makeState()
    const usage = Usage.collector()
    const log: Array<SessionEvent> = []
    let seq = 0
    let history = ChatContext.empty
    let closed = false

    const emit = (input: EventInput): SessionEvent => {
      // Every caller passes a fresh literal: it becomes the event (no copy per event).
      const event = input as { seq: number; at: number } & EventInput
      event.seq = seq++
      event.at = clock.currentTimeMillisUnsafe()
      if (input.type === "model_call") usage.add(event as ModelCallEvent)
      log.push(event as SessionEvent)
      // Trimmed in chunks: one splice per 1,000 events, not one per event.
      if (log.length > LOG_LIMIT + 1000) log.splice(0, log.length - LOG_LIMIT)
      PubSub.publishUnsafe(pubsub, event as SessionEvent)
      return event as SessionEvent
    }

    /** A message that can no longer be handled still gets an answer. */
    const rejectClosed = (msg: SessionMessage) => {
      switch (msg._tag) {
        case "Say":
        case "Reply":
          return void Deferred.doneUnsafe(msg.reply, Effect.fail(new FloorError({ agent: "", reason: "session_closed", message: "the session is closed" })))
        case "Handoff":
          return void Deferred.doneUnsafe(msg.reply, Effect.succeed({ _tag: "NotApplied", reason: "the session is closed" } as const))
        case "StartTask":
          return void Deferred.doneUnsafe(msg.result, Effect.interrupt)
        case "Background":
          return Background.flush({ name: "session", commit: (item) => core.record(item, undefined) }, [msg.delivery])
        default:
          return
      }
    }

    /** Kept events from `from` on (sequence numbers are consecutive). */
    const since = (from: number): Array<SessionEvent> => log.slice(Math.max(0, from - (log[0]?.seq ?? 0)))

    const sendToSession = (msg: SessionMessage) => {
      if (closed) return rejectClosed(msg)
      work.acquire()
      if (!Queue.offerUnsafe(mailbox, msg)) {
        work.release()
        rejectClosed(msg)
      }
    }

    /** The realtime connection that reported the user speaking, if one did. */
    let speakingOn: string | undefined
    const setUserSpeaking = (speaking: boolean, connectionId?: string) => {
      speakingOn = speaking ? connectionId : undefined
      if (speaking === userSpeaking || closed) return
      userSpeaking = speaking
      if (speaking) userTurns++
      emit({ type: "user_state_changed", state: speaking ? "speaking" : "listening" })
      sendToSession({ _tag: "UserSpeaking", speaking, userTurn: userTurns })
    }
    const realtimePool = realtimeModel
      ? yield* RealtimePool.make({
        model: realtimeModel,
        parent: scope,
        now: () => clock.currentTimeMillisUnsafe(),
        ended: (connectionId) => {
          if (speakingOn === connectionId) setUserSpeaking(false)
        },
        // A closing session's connections close with it: no event after `close`.
        report: (agent, connectionId, action) => void (closed || emit({ type: "realtime_connection", agent, connectionId, action }))
      })
      : undefined

    const core: SessionCore = {
      id: nextId("session"),
      work,
      background,
      userSpeaking: () => userSpeaking,
      setUserSpeaking,
      userTurns: () => userTurns,
      realtimePool,
      sessionTools: options.tools ?? [],
      sessionOwner: {
        kind: "session",
        scope: backgroundScope,
        running: new Map(),
        report: (delivery) => sendToSession({ _tag: "Background", delivery })
      },
      sessionDeliveries,
      scope,
      userdata: options.userdata,
      textOutput,
      defaultModel,
      session: () => session,
      send: sendToSession,
      handleNow: () => Queue.flushUnsafe(mailbox),
      // A closing session has no holder: nothing starts a reply or a model call any more.
      holder: () => (closed ? undefined : state.holder),
      closed: () => closed,
      emit,
      record: (item: ChatItem, agent: string | undefined) => {
        history = history.append(item)
        emit({ type: "conversation_item_added", agent, item })
      },
      history: () => history,
      now: () => clock.currentTimeMillisUnsafe()
    }

    const loop = Effect.gen(function*() {
      while (true) {
        const msg = yield* Queue.take(mailbox)
        yield* Floor.handle(core, state, msg).pipe(
          Effect.catchCause((cause) =>
            Effect.sync(() => {
              emit({ type: "error", agent: undefined, source: "input", message: Cause.pretty(cause), recoverable: true })
            })
          ),
          Effect.ensuring(Effect.sync(() => work.release()))
        )
      }
    })

    const shutdown = Effect.gen(function*() {
      if (closed) return
      closed = true
      // Innermost first: tasks before their callers, then the agents.
      const actors = [...state.live].reverse()
      for (const actor of actors) yield* Scope.close(actor.scope, Exit.void)
      // What session tools reported before the close (taken by no holder yet, or still in the
      // mailbox) is recorded before the cancelled results the close makes them report (rule 9).
      Background.flush({ name: "session", commit: (item) => core.record(item, undefined) }, sessionDeliveries)
      state.holder = undefined
      for (const msg of yield* Queue.clear(mailbox)) {
        rejectClosed(msg)
        work.release()
      }
      // From here a report is recorded as it comes (rejectClosed).
      yield* Scope.close(backgroundScope, Exit.void)
      emit({ type: "close", reason: "closed", usage: usage.summary() })
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.succeed(closedSignal, undefined)
    })

    // Closing may be asked from inside an actor (a tool that ends the call): run it outside
    // every actor's Scope so it never waits for itself.
    const close = Effect.forkDetach(shutdown).pipe(Effect.flatMap(Fiber.await), Effect.asVoid)

    // A background call reports (acquiring a work token) before it stops counting, so this
    // never sees both counts at zero while a result is on its way.
    const idleWithBackground: Effect.Effect<void> = Effect.gen(function*() {
      while (true) {
        yield* work.idle
        if (background.count() === 0) return
        yield* background.idle
      }
    })

    const maxInputChars = options.maxInputChars ?? 32_000
    const tooLong = (text: string) =>
      text.length > maxInputChars
        ? Effect.fail(new InvalidInput({ message: `the user's text has ${text.length} characters, over the limit of ${maxInputChars} (maxInputChars)` }))
        : undefined
    const isClosed = (what: string) =>
      Effect.fail(new SessionClosed({ message: `${what}: session ${core.id} is closed; start a new one` }))

    const ask = <A, E>(make: (reply: Deferred.Deferred<A, E>) => SessionMessage) =>
      Effect.gen(function*() {
        const reply = yield* Deferred.make<A, E>()
        sendToSession(make(reply))
        return yield* Deferred.await(reply)
      })

    const session: AgentSession<U> = {
      id: core.id,
      userdata: options.userdata as U,
      send: (text) =>
        Effect.suspend((): Effect.Effect<void, SessionClosed | InvalidInput> =>
          closed ? isClosed("send") : tooLong(text) ?? Effect.sync(() => sendToSession({ _tag: "Input", text }))
        ),
      run: (text, runOptions = {}) =>
        runLock.withPermit(
          Effect.gen(function*() {
            if (closed) return yield* isClosed("run")
            const refused = tooLong(text)
            if (refused) return yield* refused
            yield* work.idle
            if (closed) return yield* isClosed("run")
            const from = seq
            sendToSession({ _tag: "Input", text })
            yield* runOptions.waitForBackground ? idleWithBackground : work.idle
            const result = new RunResult(since(from))
            if (result.unanswered) {
              const errors = result.errors
              return yield* new TurnFailed({ message: `the turn got no answer: ${errors.map((e) => e.message).join("; ")}`, errors, result })
            }
            return result
          })
        ),
      idle: work.idle,
      idleWithBackground,
      setUserSpeaking: (speaking) => Effect.sync(() => setUserSpeaking(speaking)),
      transcribed: (transcript, final) =>
        Effect.sync(() => void (closed || emit({ type: "user_input_transcribed", transcript, final }))),
      pushAudio: (pcm) =>
        Effect.suspend((): Effect.Effect<void, RealtimeError | SessionClosed> =>
          closed ? isClosed("pushAudio") : state.holder ? RealtimeBinding.pushAudio(state.holder, pcm) : Effect.void
        ),
      realtime: () => realtimePool?.stats(),
      say: (text, sayOptions = {}) => ask((reply) => ({ _tag: "Say", text, options: sayOptions, reply })),
      generateReply: (replyOptions = {}) => ask((reply) => ({ _tag: "Reply", options: replyOptions, reply })),
      interrupt: Effect.sync(() => sendToSession({ _tag: "Interrupt" })),
      handoff: (agent, handoffOptions = {}) =>
        ask<HandoffOutcome, never>((reply) => ({ _tag: "Handoff", from: undefined, target: agent, options: handoffOptions, reply })),
      history: Effect.sync(() => history),
      currentAgent: Effect.sync(() => state.holder?.agent),
      events: Stream.suspend(() =>
        closed ? Stream.empty : Stream.fromPubSub(pubsub).pipe(Stream.takeUntil((event) => event.type === "close"))
      ),
      eventLog: Effect.sync(() => [...log]),
      eventsSince: (from) => Effect.sync(() => since(from)),
      closed: Effect.sync(() => closed),
      usage: Effect.sync(() => usage.summary()),
      awaitClosed: Deferred.await(closedSignal),
      close
    }

    // Observers (recorder, metrics, traces) watch from before the first message; their
    // finalizers run after the session's shutdown (registered before it), so they see `close`.
    yield* SessionObserver.observeAll(session as AgentSession<unknown>).pipe(Scope.provide(parent))
    yield* loop.pipe(Diagnostics.fiber, Effect.forkIn(scope))
    // Registered after the session's Scope was forked, so it runs before that Scope closes.
    yield* Scope.addFinalizer(parent, shutdown)
    sendToSession({ _tag: "Start", agent: options.agent })
    return session
  })
