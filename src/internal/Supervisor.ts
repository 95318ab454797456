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
import type { EventLog } from "./EventLog.ts"
import * as Floor from "./Floor.ts"
import * as RealtimePool from "./realtime/Pool.ts"
import type { SessionCore, SessionMessage } from "./SessionCore.ts"
import * as Work from "./Work.ts"

export interface Config {
  /** The session's own Scope (forked from the one it was started in). */
  readonly scope: Scope.Closeable
  readonly events: EventLog
  readonly now: () => number
  readonly textOutput: TextOutputService
  readonly defaultModel: LanguageModel.LanguageModel | undefined
  readonly realtimeModel: RealtimeModel["Service"] | undefined
  readonly tools: ReadonlyArray<Tool>
  readonly userdata: unknown
  /** The public session, for tool and hook contexts (made after the supervisor). */
  readonly session: () => AgentSession<any>
}

export interface Supervisor {
  readonly core: SessionCore
  readonly state: Floor.FloorState
  readonly closed: () => boolean
  /** Handles the mailbox until the session's Scope closes. */
  readonly loop: Effect.Effect<never, Cause.Done>
  /** Closes the actors (innermost first), answers what is left, emits `close`, closes the Scope. */
  readonly shutdown: Effect.Effect<void>
  /** Waits until no message, speech, hook or tool is in flight, and no background call runs. */
  readonly idleWithBackground: Effect.Effect<void>
  readonly closedSignal: Deferred.Deferred<void>
}

export const make = (config: Config): Effect.Effect<Supervisor> =>
  Effect.gen(function*() {
    const { scope, events } = config
    const mailbox = yield* Queue.unbounded<SessionMessage, Cause.Done>()
    const backgroundScope = yield* Scope.fork(scope)
    const closedSignal = yield* Deferred.make<void>()
    const work = Work.make()
    const background = Work.make()
    const state = Floor.makeState()
    const sessionDeliveries: Array<Background.Delivery> = []
    let userSpeaking = false
    let userTurns = 0
    let history = ChatContext.empty
    let closed = false

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

    const send = (msg: SessionMessage) => {
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
      events.emit({ type: "user_state_changed", state: speaking ? "speaking" : "listening" })
      send({ _tag: "UserSpeaking", speaking, userTurn: userTurns })
    }

    const realtimePool = config.realtimeModel
      ? yield* RealtimePool.make({
        model: config.realtimeModel,
        parent: scope,
        now: config.now,
        ended: (connectionId) => {
          if (speakingOn === connectionId) setUserSpeaking(false)
        },
        // A closing session's connections close with it: no event after `close`.
        report: (agent, connectionId, action) => void (closed || events.emit({ type: "realtime_connection", agent, connectionId, action }))
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
      sessionTools: config.tools,
      sessionOwner: {
        kind: "session",
        scope: backgroundScope,
        running: new Map(),
        report: (delivery) => send({ _tag: "Background", delivery })
      },
      sessionDeliveries,
      scope,
      userdata: config.userdata,
      textOutput: config.textOutput,
      defaultModel: config.defaultModel,
      session: config.session,
      send,
      handleNow: () => Queue.flushUnsafe(mailbox),
      // A closing session has no holder: nothing starts a reply or a model call any more.
      holder: () => (closed ? undefined : state.holder),
      closed: () => closed,
      emit: events.emit,
      record: (item: ChatItem, agent: string | undefined) => {
        history = history.append(item)
        events.emit({ type: "conversation_item_added", agent, item })
      },
      history: () => history,
      now: config.now
    }

    const loop = Effect.gen(function*() {
      while (true) {
        const msg = yield* Queue.take(mailbox)
        yield* Floor.handle(core, state, msg).pipe(
          Effect.catchCause((cause) =>
            Effect.sync(() => {
              events.emit({ type: "error", agent: undefined, source: "input", message: Cause.pretty(cause), recoverable: true })
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
      events.emit({ type: "close", reason: "closed", usage: events.usage.summary() })
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.succeed(closedSignal, undefined)
    })

    // A background call reports (acquiring a work token) before it stops counting, so this
    // never sees both counts at zero while a result is on its way.
    const idleWithBackground: Effect.Effect<void> = Effect.gen(function*() {
      while (true) {
        yield* work.idle
        if (background.count() === 0) return
        yield* background.idle
      }
    })

    return { core, state, closed: () => closed, loop, shutdown, idleWithBackground, closedSignal }
  })

/** Closing may be asked from inside an actor (a tool that ends the call): it runs outside
 * every actor's Scope so it never waits for itself. */
export const close = (supervisor: Supervisor): Effect.Effect<void> =>
  Effect.forkDetach(supervisor.shutdown).pipe(Effect.flatMap(Fiber.await), Effect.asVoid)
