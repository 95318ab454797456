/**
 * An actor: the running instance of an agent in a session. One fiber, one Scope, one mailbox.
 * It owns the agent's chat context, its speeches, its tool calls and its background calls, and
 * processes its mailbox one message at a time. Whether it may speak is not its own state: it
 * asks the session who holds the floor, right before every model call and every delivery
 * (rule 2).
 */
import { HookLane, WorkToken } from "./FlowContext.ts"
import { Cause, Context, Deferred, Effect, Exit, Layer, Queue, Scope } from "effect"
import { LanguageModel, type Tool as AiTool, type Toolkit } from "effect/ai"
import { make as makeAgentHandle } from "./AgentHandle.ts"
import type { Agent } from "../Agent.ts"
import * as Background from "./Background.ts"
import { type ChatContext, type ChatItem, message } from "../ChatContext.ts"
import { type AgentHandle, CurrentAgent, type ReplyOptions, type SayOptions, type TaskResult } from "../CurrentAgent.ts"
import * as Diagnostics from "../Diagnostics.ts"
import { FloorError, type TaskError } from "../Errors.ts"
import type { AgentState } from "../Events.ts"
import type { HandoffOptions } from "../Handoff.ts"
import * as RealtimeBinding from "./realtime/Binding.ts"
import * as RealtimeReply from "./realtime/Reply.ts"
import * as Reply from "./Reply.ts"
import type { HandoffOutcome, Handover, SessionCore } from "./SessionCore.ts"
import type * as Speech from "../Speech.ts"
import * as Speeches from "./Speeches.ts"
import * as Tasks from "./Tasks.ts"
import type { Tool } from "../Tool.ts"

export type ActorStatus = "starting" | "active" | "paused" | "closed"

/** Present on the actor of an `AgentTask`: who awaits it and how to wake them. */
export interface TaskRole {
  readonly caller: Actor
  readonly result: Deferred.Deferred<unknown, TaskError>
  /** The token the waiting flow gave up; whoever wakes it returns it first. */
  readonly handover: Handover
  /** Ids of the items the task started with: the rest merge back into the caller. */
  readonly baseline: ReadonlySet<string>
}

/**
 * What the actor's realtime model heard from the user, in the server's order: through the
 * mailbox so that a barge-in's cut (and the partial reply it records) lands before the
 * transcript of that turn, and the transcript before the server's answer to it.
 */
export type Heard =
  /** The model's turn detection heard the user start: speeches older than turn `userTurn` end. */
  | { readonly _tag: "SpeechStarted"; readonly userTurn: number }
  | { readonly _tag: "Transcript"; readonly itemId: string; readonly text: string }
  /** A response the server started by itself (its turn detection); `cancel` stops it unheard. */
  | {
    readonly _tag: "ServerReply"
    readonly started: RealtimeReply.Started
    readonly cancel: Effect.Effect<void>
  }

/**
 * A turn of the user that came while the actor could not take it (a hook holding input, a tool
 * step, the floor moving): typed text, or a spoken turn the server already holds (its words, once
 * transcribed, in case the turn must follow the floor to another agent).
 */
type HeldInput =
  | { readonly _tag: "Typed"; readonly text: string; readonly itemId?: string | undefined }
  | { readonly _tag: "Spoken"; words: { readonly text: string; readonly itemId: string } | undefined }

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
    /** Completes when the previous holder's onExit has run: this onEnter/onResume waits for it. */
    readonly after?: Deferred.Deferred<void> | undefined
  }
  | {
    readonly _tag: "Deactivate"
    readonly final: boolean
    /** Runs once this actor's onExit has finished: the next holder's activation. */
    readonly then: () => void
  }
  /** The floor came back to this actor (a task returned): its connection comes with it. */
  | { readonly _tag: "TakeConnection" }
  | { readonly _tag: "Lend" }
  | {
    readonly _tag: "Release"
    readonly target: Agent
    readonly options: HandoffOptions
    readonly reply: Deferred.Deferred<HandoffOutcome>
  }
  | { readonly _tag: "Return"; readonly merge: ChatContext; readonly role: TaskRole; readonly result: TaskResult }
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
  readonly tools: ReadonlyMap<string, Tool>
  readonly toolkit: Toolkit.WithHandler<any>
  /** The toolkit's definitions, in order (what a model request lists). */
  readonly definitions: ReadonlyArray<AiTool.Any>
  status: ActorStatus
  chat: ChatContext
  /** The floor is being passed on: nothing new starts until the session has answered. */
  passing: boolean
  /** Task completions requested by tool calls of the running batch, by call id. */
  readonly completions: Map<string, TaskResult>
  readonly send: (message: ActorMessage) => void
  readonly holdsFloor: () => boolean
  readonly commit: (item: ChatItem) => void
  readonly setState: (state: AgentState) => void
  readonly model: () => LanguageModel.LanguageModel | undefined
  readonly speeches: Speeches.Speeches
  /** Present when the agent talks through a realtime model (see realtime/Binding.ts). */
  readonly realtime: RealtimeBinding.RealtimeBinding | undefined
  /** Where a call of `tool` runs once it reports progress (this actor, or the session). */
  readonly ownerOf: (tool: Tool) => Background.Owner
  /** Starts the loop of an actor made with `startLater`, on the caller's turn (once). */
  readonly start: Effect.Effect<void>
}

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
    Effect.zip(Diagnostics.forkScope(core.scope, "actors"), Queue.unbounded<ActorMessage, Cause.Done>()),
    ([scope, mailbox]) =>
      build(core, agent, initial, options.task, options.extraTools ?? [], scope, mailbox, options.startLater ?? false)
  )

/** The actor's state and behaviour: plain closures over its Scope and mailbox. */
const build = (
  core: SessionCore,
  agent: Agent,
  initial: ChatContext,
  task: TaskRole | undefined,
  extraTools: ReadonlyArray<Tool>,
  scope: Scope.Closeable,
  mailbox: Queue.Queue<ActorMessage, Cause.Done>,
  startLater: boolean
): Effect.Effect<Actor> => {
  const work = core.work
  const heldInputs: Array<HeldInput> = []
  /** The user's last transcribed turn on this actor's connection that no answer has taken yet. */
  let lastTranscript: { readonly text: string; readonly itemId: string } | undefined
  const pending: Array<Background.Delivery> = []
  const owner: Background.Owner = {
    kind: "agent",
    scope,
    running: new Map(),
    report: (delivery) => send({ _tag: "Background", delivery })
  }
  let inputHoldingHooks = 0
  let state: AgentState = "initializing"
  let model: LanguageModel.LanguageModel | undefined = core.defaultModel
  let terminated = false
  let flushed = false
  /** The loop is handling a message: it will call `startNext` before it takes the next one. */
  let startsNext = false

  const named = new Map<string, Tool>()
  for (const tool of [...agent.tools, ...extraTools, ...core.sessionTools]) if (!named.has(tool.name)) named.set(tool.name, tool)
  const sessionTools = new Set(core.sessionTools.filter((tool) => named.get(tool.name) === tool))
  if ([...named.values()].some((tool) => tool.options.cancellable)) {
    const running = () => [...owner.running.values(), ...core.sessionOwner.running.values()]
    for (const tool of Background.controlTools(running, core.now)) if (!named.has(tool.name)) named.set(tool.name, tool)
  }
  const toolkit: Toolkit.WithHandler<any> = {
    tools: Object.fromEntries([...named.values()].map((tool) => [tool.name, tool.definition])),
    handle: () => Effect.die(new Error("baton runs tool calls itself"))
  }

  const send = (msg: ActorMessage) => {
    if (terminated) return rejectLate(msg)
    work.acquire()
    if (!Queue.offerUnsafe(mailbox, msg)) work.release()
  }

  /** A message for an actor whose Scope is closed still gets its answer. */
  const rejectLate = (msg: ActorMessage) => {
    switch (msg._tag) {
      case "UserInput":
        return core.send({ _tag: "Input", text: msg.text, itemId: msg.itemId })
      case "Say":
      case "Reply":
        return void Deferred.doneUnsafe(msg.reply, Exit.fail(new FloorError({ agent: agent.name, reason: "agent_closed", message: `${agent.name} is closed` })))
      case "Deactivate":
        return msg.then()
      case "Release":
        return core.send({ _tag: "Handoff", from: undefined, target: msg.target, options: msg.options, reply: msg.reply })
      case "Return":
        return Tasks.wake(work, msg.role.handover, msg.role.result, msg.result)
      case "Background":
        // Recorded after what the actor had pending (at close, in the finalizer's flush).
        pending.push(msg.delivery)
        return flushed ? Background.flush(actor, pending) : undefined
      default:
        return
    }
  }

  const holdsFloor = () => core.holder() === actor
  /**
   * The connection follows the floor the moment it arrives (a handoff, a resume, a task's
   * return, before the task's onExit has run), not at the first reply: the user may be speaking
   * into it, and only a lease hears the end of their turn (a reply waits for it) and makes the
   * server answer with this agent's configuration.
   */
  const takeConnection = () =>
    actor.realtime && holdsFloor()
      // Part of the handoff for rule 10: the take holds a work token (taken as the fiber starts,
      // while the message that asked for it still holds its own), so a run resolves only once
      // the connection has moved.
      ? RealtimeBinding.take(actor).pipe(work.track, Effect.forkIn(actor.scope, { startImmediately: true }))
      : Effect.void

  const setState = (next: AgentState) => {
    if (next === state) return
    const previous = state
    state = next
    if (holdsFloor()) core.emit({ type: "agent_state_changed", agent: agent.name, state: next, previous })
  }

  const speeches = Speeches.make({
    name: agent.name,
    core,
    scope,
    mayStart: () => actor.status === "active" && !actor.passing && holdsFloor() && !core.userSpeaking(),
    closed: () => actor.status === "closed" || terminated,
    ended: (speech) => send({ _tag: "SpeechEnded", speech }),
    // Within a message, the loop starts the next speech itself once the message is handled.
    kick: () => {
      if (!startsNext) send({ _tag: "Kick" })
    },
    interrupt: (speech) => send({ _tag: "Interrupt", speech })
  })

  const inToolPhase = () => speeches.current()?.phase === "tools"
  const busyForInput = () => actor.status !== "active" || inputHoldingHooks > 0 || actor.passing || inToolPhase()

  /** Held user input goes on once nothing holds it: here, or to whoever holds the floor now. */
  const releaseHeld = (): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (heldInputs.length === 0 || (holdsFloor() && busyForInput())) return Effect.void
      const held = heldInputs.shift()!
      const next = held._tag === "Typed"
        ? handleUserInput(held.text, held.itemId)
        : holdsFloor()
        ? takeTurn(Effect.void)
        : Effect.sync(() => forwardOne(held))
      return next.pipe(
        Effect.andThen(Effect.sync(() => work.release())),
        Effect.andThen(releaseHeld())
      )
    })

  /** A held turn goes to whoever holds the floor now: a spoken one as its words (the server
   * that heard it was this actor's). */
  const forwardOne = (held: HeldInput) => {
    if (held._tag === "Typed") return core.send({ _tag: "Input", text: held.text, itemId: held.itemId })
    if (held.words) return core.send({ _tag: "Input", text: held.words.text, itemId: held.words.itemId })
    core.emit({ type: "error", agent: agent.name, source: "input", message: `a spoken turn held by ${agent.name} was never transcribed: it is not passed on`, recoverable: true })
  }

  const forwardHeld = () => {
    for (const held of heldInputs.splice(0)) {
      forwardOne(held)
      work.release()
    }
  }

  /**
   * The user's last words in this actor's context if nothing answered them yet: the transcript
   * of a turn heard by the connection before it came to this actor (a handoff's merge).
   */
  const unansweredUserTurn = (): { readonly text: string; readonly itemId: string } | undefined => {
    const items = actor.chat.items
    for (let i = items.length - 1; i >= 0; i--) {
      const item = items[i]!
      if (item._tag === "Message" && item.role === "user") return { text: item.text, itemId: item.id }
      if ((item._tag === "Message" && item.role === "assistant") || item._tag === "FunctionCall") return undefined
    }
    return undefined
  }

  /** Holds a turn of the user until the actor can take it (the work token keeps the session busy). */
  const hold = (held: HeldInput) => {
    work.acquire()
    heldInputs.push(held)
    const current = speeches.current()
    if (current?.phase === "tools") current.skipFollowUp = true
  }

  /** A new turn of the user: older speeches end, then `commit` records it and a reply answers it. */
  const takeTurn = (commit: Effect.Effect<void>, body: (speech: Speech.Speech) => Effect.Effect<void, unknown> = (speech) => Reply.run(actor, speech, {})) =>
    Effect.andThen(
      speeches.interruptCurrent(false),
      Effect.andThen(commit, Effect.sync(() => {
        speeches.dropQueued("interrupted by the user", true)
        speeches.enqueue("user_turn", {}, body)
      }))
    )

  const handleUserInput = (text: string, itemId?: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (!holdsFloor()) {
        core.send({ _tag: "Input", text, itemId })
        return Effect.void
      }
      if (busyForInput()) {
        hold({ _tag: "Typed", text, itemId })
        return Effect.void
      }
      return takeTurn(Effect.sync(() => {
        if (itemId === undefined || !actor.chat.has(itemId)) {
          actor.commit(message("user", text, { agent: agent.name, ...(itemId !== undefined ? { id: itemId } : {}) }))
        }
      }))
    })

  /**
   * Hooks run one after the other, in the order their messages came (the hook lane): an onExit
   * never starts before the onEnter it follows has ended, or has started waiting for a task (it
   * may wait for the floor to come back: the onExit must not wait for that).
   */
  let lane = Deferred.makeUnsafe<void>()
  Deferred.doneUnsafe(lane, Effect.void)

  const runHook = (
    hook: Agent["onEnter"],
    name: string,
    holdsInput: boolean,
    options: { readonly after?: Effect.Effect<void>; readonly waitFor?: Deferred.Deferred<void> | undefined } = {}
  ) => {
    const previous = lane
    const done = Deferred.makeUnsafe<void>()
    lane = done
    if (holdsInput) inputHoldingHooks++
    work.acquire()
    const run = Deferred.await(previous).pipe(
      Effect.andThen(options.waitFor ? Deferred.await(options.waitFor) : Effect.void),
      Effect.andThen(((hook ?? Effect.void) as Effect.Effect<void, unknown>).pipe(
        Effect.provideService(HookLane, () => Deferred.doneUnsafe(done, Effect.void))
      ))
    )
    return run.pipe(
      Effect.provideService(CurrentAgent, actor.handle),
      Effect.provideService(WorkToken, { held: true }),
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.sync(() => {
          core.emit({ type: "error", agent: agent.name, source: "hook", message: `${name} of ${agent.name} failed: ${Cause.pretty(cause)}`, recoverable: true })
        })
      ),
      Effect.ensuring(
        Effect.sync(() => send({ _tag: "HookEnded", holdsInput })).pipe(
          Effect.andThen(options.after ?? Effect.void),
          Effect.ensuring(Effect.sync(() => {
            Deferred.doneUnsafe(done, Effect.void)
            work.release()
          }))
        )
      ),
      Diagnostics.fiber,
      Effect.forkIn(scope, { startImmediately: true }),
      Effect.asVoid
    )
  }

  /** A finished task's actor closes its own Scope, from outside it (a fiber of the session). */
  const closeSelf: Effect.Effect<void> = Scope.close(scope, Exit.void).pipe(Effect.forkIn(core.scope), Effect.asVoid)

  const deliveryHost: Background.DeliveryHost = {
    name: agent.name,
    isTask: task !== undefined,
    self: agent,
    holdsFloor,
    readyForHandoff: () => actor.status === "active" && !actor.passing && !speeches.current() && inputHoldingHooks === 0,
    readyToTell: () =>
      deliveryHost.readyForHandoff() && speeches.queued() === 0 && heldInputs.length === 0 && !core.userSpeaking(),
    commit: (item) => actor.commit(item),
    executed: (calls, handoffTo) =>
      core.emit({ type: "function_tools_executed", agent: agent.name, calls, hasHandoff: handoffTo !== undefined, handoffTo, deferred: true }),
    notApplied: (to, reason) => core.emit({ type: "handoff_not_applied", agent: agent.name, to, reason }),
    requestHandoff: (target, options) => {
      actor.passing = true
      core.send({ _tag: "Handoff", from: actor, target, options, reply: Deferred.makeUnsafe() })
    },
    reply: () => void speeches.enqueue("tool_reply", {}, (speech) => Reply.run(actor, speech, {}))
  }

  const heard = (event: Heard): Effect.Effect<void> =>
    Effect.suspend(() => {
      switch (event._tag) {
        case "SpeechStarted":
          speeches.dropQueued("interrupted by the user", true, event.userTurn)
          return speeches.interruptCurrent(false, event.userTurn)
        case "Transcript": {
          if (!actor.chat.has(event.itemId)) actor.commit(message("user", event.text, { id: event.itemId, agent: agent.name }))
          // The words of a held spoken turn, in case it must follow the floor.
          const waiting = heldInputs.find((held) => held._tag === "Spoken" && held.words === undefined)
          if (waiting?._tag === "Spoken") waiting.words = { text: event.text, itemId: event.itemId }
          else lastTranscript = { text: event.text, itemId: event.itemId }
          return Effect.void
        }
        case "ServerReply": {
          // Not for an actor that has passed the floor since: its connection left with it.
          if (!holdsFloor()) return Effect.void
          if (busyForInput()) {
            // Held as typed input is (a coordinator between its steps, a tool step): the server's
            // own answer is cancelled unheard, and the turn answered once nothing holds it, here
            // or by the next holder. Its words are the transcript heard last, or the next one.
            hold({ _tag: "Spoken", words: lastTranscript ?? unansweredUserTurn() })
            lastTranscript = undefined
            return event.cancel
          }
          lastTranscript = undefined
          // The server answers a newer turn of the user by itself (its turn detection): older
          // replies are superseded, as typed input supersedes them. A model that sends no speech
          // events (Gemini) gives no other sign of the new turn (seed 219730).
          return takeTurn(Effect.void, (speech) => RealtimeReply.run(actor, speech, {}, event.started))
        }
      }
    })

  const deliverPending = () => {
    Background.deliver(deliveryHost, pending)
    // A session tool's reports stay the session's until a holder takes them.
    if (holdsFloor()) Background.deliver(deliveryHost, core.sessionDeliveries)
  }

  // A message is mostly bookkeeping: plain code, with an effect only where one is needed.
  const handle = (msg: ActorMessage): Effect.Effect<void> =>
    Effect.suspend((): Effect.Effect<void> => {
      switch (msg._tag) {
        case "UserInput":
          return handleUserInput(msg.text, msg.itemId)
        case "Kick":
          return Effect.void
        case "SpeechEnded":
          speeches.ended(msg.speech)
          return Effect.void
        case "Say":
        case "Reply": {
          if (!holdsFloor()) {
            return Deferred.fail(msg.reply, new FloorError({ agent: agent.name, reason: "not_holder", message: `${agent.name} does not hold the floor` }))
          }
          const handle = msg._tag === "Say"
            ? speeches.enqueue("say", msg.options, (speech) => Reply.say(actor, speech, msg.text, msg.options))
            : speeches.enqueue("generate_reply", msg.options, (speech) => Reply.reply(actor, speech, msg.options))
          return Deferred.succeed(msg.reply, handle)
        }
        case "Heard":
          return heard(msg.event)
        case "Interrupt": {
          if (msg.speech) return speeches.interruptOne(msg.speech)
          speeches.dropQueued("interrupted", true, msg.userTurn)
          return speeches.interruptCurrent(false, msg.userTurn)
        }
        case "Activate": {
          actor.status = "active"
          if (msg.merge) actor.chat = actor.chat.merge(msg.merge)
          return Effect.andThen(
            takeConnection(),
            Effect.suspend(() => {
              if (msg.reply && holdsFloor()) speeches.enqueue("generate_reply", {}, (speech) => Reply.run(actor, speech, {}))
              return msg.mode === "enter"
                ? runHook(agent.onEnter, "onEnter", true, { waitFor: msg.after })
                : runHook(agent.onResume, "onResume", true, { waitFor: msg.after })
            })
          )
        }
        case "Deactivate": {
          actor.status = msg.final ? "closed" : "paused"
          actor.passing = false
          return Effect.andThen(
            speeches.interruptCurrent(true),
            Effect.suspend(() => {
              // The connection goes back to the pool: this actor can neither use it nor hear it now.
              if (actor.realtime) RealtimeBinding.release(actor.realtime)
              speeches.dropQueued(`${agent.name} passed the floor`, false)
              forwardHeld()
              const then = Effect.sync(msg.then)
              return runHook(agent.onExit, "onExit", false, { after: msg.final ? Effect.andThen(then, closeSelf) : then })
            })
          )
        }
        case "Lend": {
          actor.passing = false
          if (actor.realtime) RealtimeBinding.release(actor.realtime)
          forwardHeld()
          return Effect.void
        }
        case "Release": {
          // A handoff asked from outside: what this actor is saying ends (and is recorded)
          // before the floor moves.
          actor.passing = true
          return Effect.andThen(
            speeches.interruptCurrent(true),
            Effect.sync(() => {
              const current = speeches.current()
              if (current?.phase === "tools") current.skipFollowUp = true
              core.send({ _tag: "Handoff", from: actor, target: msg.target, options: msg.options, reply: msg.reply })
            })
          )
        }
        case "Return": {
          actor.chat = actor.chat.merge(msg.merge)
          Tasks.wake(work, msg.role.handover, msg.role.result, msg.result)
          return Effect.void
        }
        case "TakeConnection":
          return takeConnection()
        case "HookEnded": {
          if (msg.holdsInput) inputHoldingHooks--
          return Effect.void
        }
        case "Background": {
          pending.push(msg.delivery)
          return Effect.void
        }
      }
    })

  // The model layer's own requirements come from the session's context (the loop is forked
  // from the session's fiber); `Agent.model` leaves them open.
  const loadModel: Effect.Effect<void> = agent.model
    ? (Layer.buildWithScope(agent.model, scope) as Effect.Effect<Context.Context<LanguageModel.LanguageModel>, unknown>).pipe(
      Effect.map((context) => Context.get(context, LanguageModel.LanguageModel)),
      Effect.tap((service) => Effect.sync(() => {
        model = service
      })),
      Effect.catchCause((cause) =>
        Effect.sync(() => {
          model = undefined
          core.emit({ type: "error", agent: agent.name, source: "model", message: `the model of ${agent.name} could not be built: ${Cause.pretty(cause)}`, recoverable: true })
        })
      ),
      Effect.asVoid
    )
    : Effect.void

  const afterEach = Effect.andThen(
    Effect.suspend(releaseHeld),
    Effect.suspend(() => {
      deliverPending()
      speeches.reconcile(holdsFloor())
      startsNext = false
      return speeches.startNext
    })
  ).pipe(Effect.andThen(Effect.sync(() => {
    if (holdsFloor() && !speeches.current() && inputHoldingHooks === 0 && actor.status === "active") setState("listening")
    speeches.notifySettled()
  })))

  const loop = Effect.gen(function*() {
    yield* loadModel
    while (true) {
      const msg = yield* Queue.take(mailbox)
      startsNext = true
      yield* handle(msg).pipe(
        Effect.andThen(afterEach),
        Effect.ensuring(Effect.sync(() => {
          startsNext = false
          work.release()
        }))
      )
    }
  })

  const actor: Actor = {
    agent,
    name: agent.name,
    core,
    scope,
    task,
    tools: named,
    toolkit,
    definitions: Object.values(toolkit.tools),
    status: "starting",
    chat: initial,
    passing: false,
    completions: new Map(),
    send,
    holdsFloor,
    commit: (item) => {
      actor.chat = actor.chat.append(item)
      core.record(item, agent.name)
    },
    setState,
    model: () => model,
    speeches,
    realtime: core.realtimePool && !agent.model ? RealtimeBinding.bind(core.realtimePool) : undefined,
    ownerOf: (tool) => (sessionTools.has(tool) ? core.sessionOwner : owner),
    handle: undefined as unknown as AgentHandle,
    start: Effect.suspend(() => {
      if (started || terminated) return Effect.void
      started = true
      return Effect.asVoid(loop.pipe(Diagnostics.fiber, Effect.forkIn(scope, { startImmediately: true })))
    })
  }
  let started = false
  ;(actor as { handle: AgentHandle }).handle = makeAgentHandle(actor)

  const finalizer = Effect.gen(function*() {
    terminated = true
    actor.status = "closed"
    speeches.dropQueued(`${agent.name} is closed`, false)
    for (const msg of yield* Queue.clear(mailbox)) {
      rejectLate(msg)
      work.release()
    }
    Background.flush(actor, pending)
    flushed = true
    forwardHeld()
  })
  if (startLater) return Effect.as(Scope.addFinalizer(scope, finalizer), actor)
  started = true
  return Scope.addFinalizer(scope, finalizer).pipe(
    Effect.andThen(loop.pipe(Diagnostics.fiber, Effect.forkIn(scope))),
    Effect.as(actor)
  )
}
