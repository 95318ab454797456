/**
 * An actor: the running instance of an agent in a session. One fiber, one Scope, one mailbox.
 * It owns the agent's chat context, its speeches, its tool calls and its background calls, and
 * processes its mailbox one message at a time. Whether it may speak is not its own state: it
 * asks the session who holds the floor, right before every model call and every delivery
 * (rule 2).
 */
import { Cause, Context, Deferred, Effect, Layer, Queue, Scope } from "effect"
import { LanguageModel, type Tool as AiTool } from "effect/ai"
import type { Agent } from "../../Agent.ts"
import type { ChatContext, ChatItem } from "../../ChatContext.ts"
import type { AgentHandle, ReplyOptions, SayOptions, TaskResult } from "../../CurrentAgent.ts"
import * as Diagnostics from "../../Diagnostics.ts"
import type { FloorError, TaskError } from "../../Errors.ts"
import type { AgentState } from "../../Events.ts"
import type { HandoffOptions } from "../../Handoff.ts"
import type * as Speech from "../../Speech.ts"
import type { Tool } from "../../Tool.ts"
import { make as makeAgentHandle } from "../AgentHandle.ts"
import type * as Background from "../Background.ts"
import * as RealtimeBinding from "../realtime/Binding.ts"
import type * as RealtimeReply from "../realtime/Reply.ts"
import type { HandoffOutcome, Handover, SessionCore, SessionMessage } from "../SessionCore.ts"
import * as Speeches from "../Speeches.ts"
import * as ActorTools from "./ActorTools.ts"
import * as Closing from "./Closing.ts"
import type { ActorToolkit } from "./ActorTools.ts"
import * as Handlers from "./Handlers.ts"
import type { HeldInput } from "./Input.ts"
import * as Lifecycle from "./Lifecycle.ts"
import * as Work from "../Work.ts"

/** Present on the actor of an `AgentTask`: who awaits it and how to wake them. */
export interface TaskRole {
  readonly caller: Actor
  readonly result: Deferred.Deferred<unknown, TaskError>
  /** The token the waiting flow gave up; whoever wakes it returns it first. */
  readonly handover: Handover
  /** Ids of the items the task started with: the rest merge back into the caller. */
  readonly baseline: ReadonlySet<string>
  /** The caller's tool call that awaits the task, if one does (a resume answers it). */
  readonly callId?: string | undefined
}

/**
 * What the actor's realtime model heard from the user, in the server's order: through the
 * mailbox so that a barge-in's cut (and the partial reply it records) lands before the
 * transcript of that turn, and the transcript before the server's answer to it.
 */
export type Heard =
  /** The model's turn detection heard the user start: speeches older than turn `userTurn` end. */
  | { readonly _tag: "SpeechStarted"; readonly userTurn: number }
  /** The transcript of a turn; `failed`: the server could not transcribe it (no words).
   * `followedBy`: the items after the turn in the server's conversation (its answer, when the
   * transcript came after it), which the words are recorded before. */
  | {
    readonly _tag: "Transcript"
    readonly itemId: string
    readonly text: string
    readonly failed: boolean
    readonly followedBy?: ReadonlyArray<string> | undefined
  }
  /** A response the server started by itself (its turn detection); `cancel` stops it unheard. */
  | {
    readonly _tag: "ServerReply"
    readonly started: RealtimeReply.Started
    readonly cancel: Effect.Effect<void>
  }

export type ActorMessage =
  | { readonly _tag: "UserInput"; readonly text: string; readonly itemId?: string | undefined }
  | { readonly _tag: "Kick" }
  | { readonly _tag: "Say"; readonly text: string; readonly options: SayOptions; readonly reply: Deferred.Deferred<Speech.SpeechHandle, FloorError> }
  | { readonly _tag: "Reply"; readonly options: ReplyOptions; readonly reply: Deferred.Deferred<Speech.SpeechHandle, FloorError> }
  | {
    readonly _tag: "Interrupt"
    readonly speech?: Speech.Speech | undefined
    /** A barge-in: the user's turn of that number started; only older speeches are cut. */
    readonly userTurn?: number | undefined
  }
  | {
    readonly _tag: "Activate"
    readonly mode: "enter" | "resume"
    readonly merge?: ChatContext | undefined
    /** Reply at once (the new agent continues the user's turn). */
    readonly reply?: boolean | undefined
    /** The onExits of earlier holders still running: this onEnter/onResume waits for them. */
    readonly after?: ReadonlyArray<Deferred.Deferred<void>> | undefined
  }
  | {
    readonly _tag: "Deactivate"
    readonly final: boolean
    /** Runs once this actor's onExit has finished: the next holder's activation. */
    readonly then: () => void
  }
  /** The floor came back to this actor (a task returned): its connection comes with it. */
  | { readonly _tag: "TakeConnection" }
  /** The user has been away the session's `userAwayTimeout`: the agent's `onUserAway` runs. */
  | { readonly _tag: "UserAway"; readonly times: number }
  | { readonly _tag: "Lend" }
  | {
    readonly _tag: "Release"
    readonly target: Agent
    readonly options: HandoffOptions
    readonly reply: Deferred.Deferred<HandoffOutcome>
  }
  | { readonly _tag: "Return"; readonly merge: ChatContext; readonly role: TaskRole; readonly result: TaskResult }
  /** The floor is taken from this actor (a person takes over): what it says is cut, then `passes`. */
  | { readonly _tag: "Yield"; readonly passes: SessionMessage }
  /** This task completes from outside a tool call (its own hook, another flow). */
  | { readonly _tag: "Complete"; readonly result: TaskResult }
  | { readonly _tag: "SpeechEnded"; readonly speech: Speech.Speech }
  | { readonly _tag: "HookEnded"; readonly holdsInput: boolean }
  | { readonly _tag: "Background"; readonly delivery: Background.Delivery }
  | { readonly _tag: "Heard"; readonly event: Heard }

export interface Actor {
  readonly agent: Agent
  readonly name: string
  readonly core: SessionCore
  readonly scope: Scope.Closeable
  readonly handle: AgentHandle
  readonly task: TaskRole | undefined
  tools: ReadonlyMap<string, Tool>
  toolkit: ActorToolkit
  /** The toolkit's definitions, in order (what a model request lists). */
  definitions: ReadonlyArray<AiTool.Any>
  /** Where it is in its life; written only by the transitions in Lifecycle.ts. */
  lifecycle: Lifecycle.Lifecycle
  chat: ChatContext
  /** Task completions requested by tool calls of the running batch, by call id. */
  readonly completions: Map<string, TaskResult>
  readonly send: (message: ActorMessage) => void
  readonly holdsFloor: () => boolean
  /** Records an item: at the end, or before the first of `followedBy` the context has (a
   * user's turn whose transcript came after its answer). */
  readonly commit: (item: ChatItem, followedBy?: ReadonlyArray<string>) => void
  readonly setState: (state: AgentState) => void
  readonly model: () => LanguageModel.LanguageModel | undefined
  readonly speeches: Speeches.Speeches
  /** Present when the agent talks through a realtime model (see realtime/Binding.ts). */
  readonly realtime: RealtimeBinding.RealtimeBinding | undefined
  /** Where a call of `tool` runs once it reports progress (this actor, or the session). */
  readonly ownerOf: (tool: Tool) => Background.Owner
  /** Starts the loop of an actor made with `startLater`, on the caller's turn (once). */
  readonly start: Effect.Effect<void>
  /** What only the actor's loop and its handlers (this folder) read and write. */
  readonly inner: ActorInner
}

/** The loop's own state: one record, read and written by the handlers of this folder only. */
export interface ActorInner {
  readonly mailbox: Queue.Queue<ActorMessage, Cause.Done>
  /** The user's turns that came while the actor could not take them (Input.ts). */
  readonly held: Array<HeldInput>
  /** Background reports waiting for the actor to be able to tell them (Background.ts). */
  readonly pending: Array<Background.Delivery>
  readonly owner: Background.Owner
  /** How background reports reach this actor; made when the first one does. */
  deliveryHost: Background.DeliveryHost | undefined
  /** Hooks running that hold the user's input (onEnter, onResume). */
  inputHoldingHooks: number
  /** The hook lane's tail: the next hook starts when it completes (Hooks.ts). */
  lane: Deferred.Deferred<void>
  state: AgentState
  model: LanguageModel.LanguageModel | undefined
  /** Its tools: fixed, or rebuilt after one of its agent's toolsets changed (ActorTools.ts). */
  readonly tools: ActorTools.ToolView
  /** Where the loop is: not started yet (`startLater`), or started and handling a message (it
   * starts the next speech itself once the message is handled: no `Kick` needed), or not. */
  loop: LoopState
  /**
   * A durable session's actor activated whose `onEnter` (or `onResume`) has not started yet (it
   * waits for earlier onExits, or a connection): the journal writes it as not activated, so a
   * resume runs that hook (Journal.ts). Not kept without a store.
   */
  activation: "enter" | "resume" | undefined
  /**
   * A durable session's actor whose agent has an `onRestore`: `running` while its `onEnter` (or
   * `onResume`) runs, `owed` when a resume found it so and its onRestore has not started. The
   * journal lists it as activating, so a resume that finds it holding the floor runs onRestore.
   */
  restorable: "running" | "owed" | undefined
}

export type LoopState = "unstarted" | "handling" | "waiting"

export interface MakeOptions {
  /** The actor runs a task for this caller. */
  readonly task?: TaskRole | undefined
  /** Tools the actor has on top of its agent's (a task's `extraTools`). */
  readonly extraTools?: ReadonlyArray<Tool> | undefined
  /** The loop waits for `start` instead of being scheduled now. */
  readonly startLater?: boolean | undefined
}

export const make = (core: SessionCore, agent: Agent, initial: ChatContext, options: MakeOptions = {}): Effect.Effect<Actor> =>
  Effect.flatMap(
    Queue.unbounded<ActorMessage, Cause.Done>(),
    (mailbox) => {
      // The scope on this step (a handoff makes an actor on its path): one finalizer, the
      // actor's, then the count.
      const { scope, onClose } = Diagnostics.forkScopeUnsafe(core.scope, "actors")
      const actor = build(core, agent, initial, options, scope, mailbox)
      const started = onClose(Closing.finalizer(actor))
      if (options.startLater) return Effect.as(started, actor)
      actor.inner.loop = "waiting"
      return Effect.andThen(
        started,
        Effect.map(Effect.forkIn(loop(actor), scope), (fiber) => {
          Diagnostics.counted(fiber)
          return actor
        })
      )
    }
  )

/** The hook lane of a new actor: nothing to wait for (one done Deferred serves every actor). */
const laneDone = Deferred.makeUnsafe<void>()
Deferred.doneUnsafe(laneDone, Effect.void)

/** The actor's record, made in one step: its parts refer to it only from functions called once
 * it exists (its speeches' questions, its handle's calls). */
const build = (
  core: SessionCore,
  agent: Agent,
  initial: ChatContext,
  options: MakeOptions,
  scope: Scope.Closeable,
  mailbox: Queue.Queue<ActorMessage, Cause.Done>
): Actor => {
  const work = core.work
  const owner: Background.Owner = {
    kind: "agent",
    scope,
    running: new Map(),
    report: (delivery) => actor.send({ _tag: "Background", delivery })
  }
  const tools = ActorTools.view(core, agent, options.extraTools ?? [], owner)
  // A toolset's tools are the agent's own: the session's stay those of the first list.
  const { sessionTools } = tools.current
  const holdsFloor = () => core.holder() === actor
  const inner: ActorInner = {
    mailbox,
    held: [],
    pending: [],
    owner,
    deliveryHost: undefined,
    inputHoldingHooks: 0,
    lane: laneDone,
    state: "initializing",
    model: core.defaultModel,
    tools,
    loop: "unstarted",
    activation: undefined,
    restorable: undefined
  }
  const actor: Actor = {
    agent,
    name: agent.name,
    core,
    scope,
    task: options.task,
    // Plain fields, not getters: accessors made each actor an object of its own shape, and
    // every read of an actor's fields megamorphic (a handoff 8% slower, a warm one 30%).
    // ActorTools.refresh writes them again after a toolset changed.
    tools: tools.current.named,
    toolkit: tools.current.toolkit,
    definitions: tools.current.definitions,
    lifecycle: Lifecycle.initial,
    chat: initial,
    completions: new Map(),
    send: (msg) => {
      if (Lifecycle.isTerminated(actor)) return Closing.rejectLate(actor, msg)
      Work.acquire(work)
      if (!Queue.offerUnsafe(mailbox, msg)) Work.release(work)
    },
    holdsFloor,
    commit: (item, followedBy) => {
      actor.chat = followedBy === undefined ? actor.chat.append(item) : actor.chat.insertBefore(item, actor.chat.firstOf(followedBy))
      core.record(item, agent.name, followedBy)
    },
    setState: (next) => {
      if (next === inner.state) return
      const previous = inner.state
      inner.state = next
      if (holdsFloor()) core.emit({ type: "agent_state_changed", agent: agent.name, state: next, previous })
    },
    model: () => inner.model,
    // Its speeches start only while it is active, holds the floor and the user is not speaking.
    speeches: Speeches.make({
      name: agent.name,
      core,
      work,
      scope,
      mayStart: () => Lifecycle.isActive(actor) && holdsFloor() && !core.userSpeaking(),
      closed: () => Lifecycle.isClosed(actor),
      ended: (speech) => actor.send({ _tag: "SpeechEnded", speech }),
      // Within a message, the loop starts the next speech itself once the message is handled.
      kick: () => {
        if (inner.loop !== "handling") actor.send({ _tag: "Kick" })
      },
      interrupt: (speech) => actor.send({ _tag: "Interrupt", speech })
    }),
    realtime: core.realtimePool && !agent.model ? RealtimeBinding.bind(core.realtimePool) : undefined,
    ownerOf: (tool) => (sessionTools.has(tool) ? core.sessionOwner : owner),
    handle: makeAgentHandle(core, agent, () => actor),
    start: Effect.suspend(() => startLoop(actor)),
    inner
  }
  return actor
}

/** The model layer's own requirements come from the session's context (the loop is forked
 * from the session's fiber); `Agent.model` leaves them open. */
const loadModel = (actor: Actor): Effect.Effect<void> => {
  const layer = actor.agent.model
  if (!layer) return Effect.void
  return (Layer.buildWithScope(layer, actor.scope) as Effect.Effect<Context.Context<LanguageModel.LanguageModel>, unknown>).pipe(
    Effect.map((context) => Context.get(context, LanguageModel.LanguageModel)),
    Effect.tap((service) => Effect.sync(() => {
      actor.inner.model = service
    })),
    Effect.catchCause((cause) =>
      Effect.sync(() => {
        actor.inner.model = undefined
        actor.core.emit({ type: "error", agent: actor.name, source: "model", message: `the model of ${actor.name} could not be built: ${Cause.pretty(cause)}`, recoverable: true })
      })
    ),
    Effect.asVoid
  )
}

/** Starts the actor's loop unless it was started or the actor closed; called on a step (a
 * handoff calls it on its own). */
export const startLoop = (actor: Actor): Effect.Effect<void> => {
  const inner = actor.inner
  if (inner.loop !== "unstarted" || Lifecycle.isTerminated(actor)) return Effect.void
  inner.loop = "waiting"
  return loop(actor).pipe(Diagnostics.startIn(actor.scope, { startImmediately: true }))
}

/** One message at a time; after each, what it made possible (held input, pending reports, the
 * next speech). Plain effects, not a generator: a handoff starts a loop on its path. */
const loop = (actor: Actor): Effect.Effect<never, Cause.Done> => {
  const inner = actor.inner
  // What follows every message, built once.
  const afterEach = Handlers.afterEach(actor)
  // However the message's handling ends, on the step it ends on.
  const handled = () => {
    inner.loop = "waiting"
    Work.release(actor.core.work)
    return Effect.void
  }
  const next = Effect.flatMap(Queue.take(inner.mailbox), (msg) => {
    inner.loop = "handling"
    return Effect.onExit(Effect.andThen(Handlers.handle(actor, msg), afterEach), handled)
  })
  const messages = Effect.forever(next, { disableYield: true })
  // An agent's toolsets open before its first message, so its first model call has their tools.
  const ready = actor.agent.toolsets ? Effect.andThen(ActorTools.openToolsets(inner.tools, actor.core, actor.agent, actor.scope), messages) : messages
  return actor.agent.model ? Effect.andThen(loadModel(actor), ready) : ready
}
