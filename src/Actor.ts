/**
 * An actor: the running instance of an agent in a session. One fiber, one Scope, one mailbox.
 * It owns the agent's chat context, its speeches and its tool calls, and processes its mailbox
 * one message at a time. Whether it may speak is not its own state: it asks the session who
 * holds the floor, right before every model call and every delivery (rule 2).
 */
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Queue, Scope } from "effect"
import { LanguageModel, type Toolkit } from "effect/ai"
import type { Agent } from "./Agent.ts"
import * as Diagnostics from "./Diagnostics.ts"
import { type ChatContext, type ChatItem, message } from "./ChatContext.ts"
import { type AgentHandle, CurrentAgent, type ReplyOptions, type SayOptions, type TaskResult } from "./CurrentAgent.ts"
import { FloorError, TaskError } from "./Errors.ts"
import type { AgentState } from "./Events.ts"
import * as Reply from "./Reply.ts"
import type { HandoffOptions } from "./Handoff.ts"
import type { HandoffOutcome, Handover, SessionCore } from "./SessionCore.ts"
import * as Speech from "./Speech.ts"
import * as Tasks from "./Tasks.ts"
import type { Tool } from "./Tool.ts"

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

export type ActorMessage =
  | { readonly _tag: "UserInput"; readonly text: string }
  | { readonly _tag: "Kick" }
  | { readonly _tag: "Say"; readonly text: string; readonly options: SayOptions; readonly reply: Deferred.Deferred<Speech.SpeechHandle, FloorError> }
  | { readonly _tag: "Reply"; readonly options: ReplyOptions; readonly reply: Deferred.Deferred<Speech.SpeechHandle, FloorError> }
  | { readonly _tag: "Interrupt"; readonly speech?: Speech.Speech | undefined }
  | { readonly _tag: "Activate"; readonly mode: "enter" | "resume"; readonly merge?: ChatContext | undefined }
  | {
    readonly _tag: "Deactivate"
    readonly final: boolean
    /** Runs once this actor's onExit has finished: the next holder's activation. */
    readonly then: () => void
  }
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

export interface Queued {
  readonly speech: Speech.Speech
  readonly body: (actor: Actor, speech: Speech.Speech) => Effect.Effect<void, unknown>
}

export interface Actor {
  readonly agent: Agent
  readonly name: string
  readonly core: SessionCore
  readonly scope: Scope.Closeable
  readonly handle: AgentHandle
  readonly task: TaskRole | undefined
  readonly tools: ReadonlyMap<string, Tool>
  readonly toolkit: Toolkit.WithHandler<any>
  status: ActorStatus
  chat: ChatContext
  /** A batch decided to pass the floor: nothing new starts until the session has answered. */
  passing: boolean
  /** Task completions requested by tool calls of the running batch, by call id. */
  readonly completions: Map<string, TaskResult>
  readonly send: (message: ActorMessage) => void
  readonly holdsFloor: () => boolean
  readonly commit: (item: ChatItem) => void
  readonly setState: (state: AgentState) => void
  readonly model: () => LanguageModel.LanguageModel | undefined
  /**
   * Completes once the actor's speeches have played out: none queued and none being
   * generated (a speech in its tool phase counts as played: that is where tasks start from).
   */
  readonly speechesSettled: Effect.Effect<void>
  /** Ends a speech's life as seen from outside (event, outcome, token) before its fiber ends. */
  readonly finish: (speech: Speech.Speech, outcome: Speech.SpeechOutcome) => void
  /** Creates a speech and queues it (its work token is held until it ends). */
  readonly enqueue: (
    source: Speech.SpeechSource,
    options: { readonly allowInterruptions?: boolean | undefined },
    body: Queued["body"]
  ) => Speech.SpeechHandle
}

/** Marks fibers that hold a work token of their own (hooks, tool calls of a batch). */
export const HoldsWorkToken = Context.Reference<boolean>("baton/HoldsWorkToken", { defaultValue: () => false })

/** The tool call a fiber runs for, if any. */
export const CurrentCall = Context.Reference<{ readonly actor: Actor; readonly callId: string } | undefined>(
  "baton/CurrentCall",
  { defaultValue: () => undefined }
)

export const make = Effect.fnUntraced(function*(
  core: SessionCore,
  agent: Agent,
  initial: ChatContext,
  task?: TaskRole,
  extraTools: ReadonlyArray<Tool> = []
) {
  const scope = yield* Diagnostics.forkScope(core.scope, "actors")
  const mailbox = yield* Queue.unbounded<ActorMessage, Cause.Done>()
  const work = core.work
  const queue: Array<Queued> = []
  const heldInputs: Array<string> = []
  let current: { readonly queued: Queued; fiber: Fiber.Fiber<void> | undefined } | undefined
  let inputHoldingHooks = 0
  let state: AgentState = "initializing"
  let model: LanguageModel.LanguageModel | undefined = core.defaultModel

  const allTools = [...agent.tools, ...extraTools.filter((extra) => !agent.tools.some((tool) => tool.name === extra.name))]
  const tools = new Map(allTools.map((tool) => [tool.name, tool] as const))
  const toolkit: Toolkit.WithHandler<any> = {
    tools: Object.fromEntries(allTools.map((tool) => [tool.name, tool.definition])),
    handle: () => Effect.die(new Error("baton runs tool calls itself"))
  }

  let terminated = false
  const send = (msg: ActorMessage) => {
    if (terminated) return rejectLate(msg)
    work.acquire()
    if (!Queue.offerUnsafe(mailbox, msg)) work.release()
  }

  /** A message for an actor whose Scope is closed still gets its answer. */
  const rejectLate = (msg: ActorMessage) => {
    switch (msg._tag) {
      case "UserInput":
        return core.send({ _tag: "Input", text: msg.text })
      case "Say":
      case "Reply":
        return void Deferred.doneUnsafe(
          msg.reply,
          Exit.fail(new FloorError({ agent: agent.name, message: `${agent.name} is closed` }))
        )
      case "Deactivate":
        return msg.then()
      case "Release":
        return core.send({ _tag: "Handoff", from: undefined, target: msg.target, options: msg.options, reply: msg.reply })
      case "Return":
        return Tasks.wake(work, msg.role.handover, msg.role.result, msg.result)
      default:
        return
    }
  }

  const holdsFloor = () => core.holder() === actor

  const setState = (next: AgentState) => {
    if (next === state) return
    const previous = state
    state = next
    if (holdsFloor()) core.emit({ type: "agent_state_changed", agent: agent.name, state: next, previous })
  }

  const enqueue: Actor["enqueue"] = (source, options, body) => {
    const speech = Speech.make({
      agent: agent.name,
      source,
      allowInterruptions: options.allowInterruptions ?? true,
      interrupt: (s) => Effect.sync(() => send({ _tag: "Interrupt", speech: s }))
    })
    work.acquire()
    core.emit({ type: "speech_created", agent: agent.name, speechId: speech.handle.id, source })
    if (actor.status === "closed" || terminated) {
      finishSpeech(speech, { _tag: "Dropped", reason: `${agent.name} is closed` })
      return speech.handle
    }
    queue.push({ speech, body })
    send({ _tag: "Kick" })
    return speech.handle
  }

  const finishSpeech = (speech: Speech.Speech, outcome: Speech.SpeechOutcome) => {
    if (speech.phase === "done") return
    speech.phase = "done"
    Deferred.doneUnsafe(speech.done, Exit.succeed(outcome))
    const holdsToken = speech.holdsToken
    speech.holdsToken = false
    if (outcome._tag !== "Dropped") {
      core.emit({
        type: "speech_finished",
        agent: agent.name,
        speechId: speech.handle.id,
        interrupted: outcome._tag === "Interrupted"
      })
    }
    if (holdsToken) work.release()
  }

  const dropQueued = (reason: string, onlyInterruptible: boolean) => {
    for (let i = queue.length - 1; i >= 0; i--) {
      const queued = queue[i]!
      if (onlyInterruptible && !queued.speech.allowInterruptions) continue
      queue.splice(i, 1)
      finishSpeech(queued.speech, { _tag: "Dropped", reason })
    }
  }

  let settledWaiters: Array<Deferred.Deferred<void>> = []
  const isSettled = () =>
    current ? current.queued.speech.phase === "tools" : queue.length === 0 || !holdsFloor() || actor.status !== "active"
  const notifySettled = () => {
    if (settledWaiters.length === 0 || !isSettled()) return
    for (const waiter of settledWaiters) Deferred.doneUnsafe(waiter, Effect.void)
    settledWaiters = []
  }
  const speechesSettled: Effect.Effect<void> = Effect.suspend(() => {
    if (isSettled()) return Effect.void
    const waiter = Deferred.makeUnsafe<void>()
    settledWaiters.push(waiter)
    return Deferred.await(waiter)
  })

  const busyForInput = () =>
    actor.status !== "active" || inputHoldingHooks > 0 || actor.passing || current?.queued.speech.phase === "tools"

  /**
   * Stops the current speech. While it generates, its fiber is interrupted (and records what it
   * delivered before this returns); once its tool calls run, only its follow-up is cancelled.
   */
  const interruptCurrent = (force: boolean): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (!current) return Effect.void
      const speech = current.queued.speech
      if (!force && !speech.allowInterruptions) return Effect.void
      if (speech.phase === "tools") {
        if (!force) speech.skipFollowUp = true
        return Effect.void
      }
      const entry = current
      const fiber = entry.fiber
      return (fiber ? Fiber.interrupt(fiber) : Effect.void).pipe(
        // A fiber interrupted before it ran never reaches its own handlers: settle it here.
        Effect.andThen(Effect.sync(() => {
          if (current === entry) current = undefined
          finishSpeech(speech, { _tag: "Interrupted" })
        }))
      )
    })

  const startNext = (): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (current || actor.status !== "active" || actor.passing || !holdsFloor()) return Effect.void
      const next = queue.shift()
      if (!next) {
        if (inputHoldingHooks === 0) setState("listening")
        return Effect.void
      }
      const entry: { readonly queued: Queued; fiber: Fiber.Fiber<void> | undefined } = { queued: next, fiber: undefined }
      current = entry
      next.speech.phase = "generating"
      return next.body(actor, next.speech).pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          Effect.sync(() => {
            const outcome: Speech.SpeechOutcome = Exit.isSuccess(exit)
              ? { _tag: "Finished" }
              : Cause.hasInterruptsOnly(exit.cause)
              ? { _tag: "Interrupted" }
              : { _tag: "Failed", message: Cause.pretty(exit.cause) }
            if (outcome._tag === "Failed") {
              core.emit({ type: "error", agent: agent.name, source: "model", message: outcome.message, recoverable: true })
            }
            send({ _tag: "SpeechEnded", speech: next.speech })
            finishSpeech(next.speech, outcome)
          })
        ),
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            send({ _tag: "SpeechEnded", speech: next.speech })
            finishSpeech(next.speech, { _tag: "Interrupted" })
          })
        ),
        Diagnostics.fiber,
        Effect.forkIn(scope, { startImmediately: true }),
        Effect.tap((fiber) =>
          Effect.sync(() => {
            entry.fiber = fiber
          })
        ),
        Effect.asVoid
      )
    })

  /** Held user input goes on once nothing holds it: here, or to whoever holds the floor now. */
  const releaseHeld = (): Effect.Effect<void> =>
    Effect.gen(function*() {
      while (heldInputs.length > 0 && (!holdsFloor() || !busyForInput())) {
        const text = heldInputs.shift()!
        yield* handleUserInput(text)
        work.release()
      }
    })

  const forwardHeld = () => {
    for (const text of heldInputs.splice(0)) {
      core.send({ _tag: "Input", text })
      work.release()
    }
  }

  const handleUserInput = (text: string): Effect.Effect<void> =>
    Effect.gen(function*() {
      if (!holdsFloor()) {
        core.send({ _tag: "Input", text })
        return
      }
      if (busyForInput() || actor.status !== "active") {
        work.acquire()
        heldInputs.push(text)
        if (current?.queued.speech.phase === "tools") current.queued.speech.skipFollowUp = true
        return
      }
      yield* interruptCurrent(false)
      dropQueued("interrupted by the user", true)
      actor.commit(message("user", text, { agent: agent.name }))
      actor.enqueue("user_turn", {}, (a, s) => Reply.run(a, s, {}))
    })

  const runHook = (
    hook: Agent["onEnter"],
    name: string,
    holdsInput: boolean,
    after: Effect.Effect<void> = Effect.void
  ): Effect.Effect<void> => {
    if (!hook) return after
    if (holdsInput) inputHoldingHooks++
    work.acquire()
    return (hook as Effect.Effect<void, unknown>).pipe(
        Effect.provideService(CurrentAgent, actor.handle),
        Effect.provideService(HoldsWorkToken, true),
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.sync(() => {
            core.emit({
              type: "error",
              agent: agent.name,
              source: "hook",
              message: `${name} of ${agent.name} failed: ${Cause.pretty(cause)}`,
              recoverable: true
            })
          })
        ),
        Effect.ensuring(
          Effect.sync(() => send({ _tag: "HookEnded", holdsInput })).pipe(
            Effect.andThen(after),
            Effect.ensuring(Effect.sync(() => work.release()))
          )
        ),
        Diagnostics.fiber,
        Effect.forkIn(scope, { startImmediately: true }),
        Effect.asVoid
      )
  }

  const handle = (msg: ActorMessage): Effect.Effect<void> =>
    Effect.gen(function*() {
      switch (msg._tag) {
        case "UserInput":
          return yield* handleUserInput(msg.text)
        case "Kick":
          return
        case "Say":
        case "Reply": {
          if (!holdsFloor()) {
            yield* Deferred.fail(msg.reply, new FloorError({ agent: agent.name, message: `${agent.name} does not hold the floor` }))
            return
          }
          const speech = msg._tag === "Say"
            ? actor.enqueue("say", msg.options, Reply.sayBody(msg.text, msg.options))
            : actor.enqueue("generate_reply", msg.options, Reply.replyBody(msg.options))
          yield* Deferred.succeed(msg.reply, speech)
          return
        }
        case "Interrupt": {
          const target = msg.speech
          if (target) {
            const index = queue.findIndex((queued) => queued.speech === target)
            if (index >= 0) {
              queue.splice(index, 1)
              finishSpeech(target, { _tag: "Dropped", reason: "interrupted before it started" })
            }
            if (current?.queued.speech === target) yield* interruptCurrent(true)
            return
          }
          dropQueued("interrupted", true)
          return yield* interruptCurrent(false)
        }
        case "Activate": {
          actor.status = "active"
          if (msg.merge) actor.chat = actor.chat.merge(msg.merge)
          return yield* msg.mode === "enter"
            ? runHook(agent.onEnter, "onEnter", true)
            : runHook(agent.onResume, "onResume", true)
        }
        case "Deactivate": {
          actor.status = msg.final ? "closed" : "paused"
          actor.passing = false
          yield* interruptCurrent(true)
          dropQueued(`${agent.name} passed the floor`, false)
          forwardHeld()
          const then = Effect.sync(msg.then)
          return yield* runHook(agent.onExit, "onExit", false, msg.final ? Effect.andThen(then, closeSelf) : then)
        }
        case "Lend": {
          forwardHeld()
          return
        }
        case "Release": {
          // A handoff asked from outside: what this actor is saying ends (and is recorded)
          // before the floor moves.
          actor.passing = true
          yield* interruptCurrent(true)
          if (current?.queued.speech.phase === "tools") current.queued.speech.skipFollowUp = true
          core.send({ _tag: "Handoff", from: actor, target: msg.target, options: msg.options, reply: msg.reply })
          return
        }
        case "Return": {
          actor.chat = actor.chat.merge(msg.merge)
          Tasks.wake(work, msg.role.handover, msg.role.result, msg.result)
          return
        }
        case "SpeechEnded": {
          if (current?.queued.speech === msg.speech) current = undefined
          return
        }
        case "HookEnded": {
          if (msg.holdsInput) inputHoldingHooks--
          return
        }
      }
    })

  /** A finished task's actor closes its own Scope, from outside it (a fiber of the session). */
  const closeSelf: Effect.Effect<void> = Scope.close(scope, Exit.void).pipe(Effect.forkIn(core.scope), Effect.asVoid)

  const loadModel = agent.model
    ? Layer.buildWithScope(agent.model, scope).pipe(
      Effect.map((context) => Context.get(context, LanguageModel.LanguageModel)),
      Effect.tap((service) => Effect.sync(() => {
        model = service
      })),
      Effect.catchCause((cause) =>
        Effect.sync(() => {
          model = undefined
          core.emit({
            type: "error",
            agent: agent.name,
            source: "model",
            message: `the model of ${agent.name} could not be built: ${Cause.pretty(cause)}`,
            recoverable: true
          })
        })
      ),
      Effect.asVoid
    )
    : Effect.void

  const loop = Effect.gen(function*() {
    yield* loadModel
    while (true) {
      const msg = yield* Queue.take(mailbox)
      yield* handle(msg).pipe(
        Effect.andThen(releaseHeld()),
        Effect.andThen(startNext()),
        Effect.andThen(Effect.sync(notifySettled)),
        Effect.ensuring(Effect.sync(() => work.release()))
      )
    }
  })

  const actor: Actor = {
    agent,
    name: agent.name,
    core,
    scope,
    task,
    tools,
    toolkit,
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
    finish: finishSpeech,
    speechesSettled,
    enqueue,
    handle: undefined as unknown as AgentHandle
  }

  ;(actor as { handle: AgentHandle }).handle = {
    agent,
    name: agent.name,
    session: core.session(),
    userdata: core.userdata,
    holdsFloor: Effect.sync(holdsFloor),
    chatContext: Effect.sync(() => actor.chat),
    updateChatContext: (f) => Effect.sync(() => {
      actor.chat = f(actor.chat)
    }),
    say: (text, options = {}) =>
      Effect.suspend(() =>
        holdsFloor()
          ? Effect.succeed(actor.enqueue("say", options, Reply.sayBody(text, options)))
          : Effect.fail(new FloorError({ agent: agent.name, message: `${agent.name} does not hold the floor` }))
      ),
    generateReply: (options = {}) =>
      Effect.suspend(() =>
        holdsFloor()
          ? Effect.succeed(actor.enqueue("generate_reply", options, Reply.replyBody(options)))
          : Effect.fail(new FloorError({ agent: agent.name, message: `${agent.name} does not hold the floor` }))
      ),
    runTask: (target, options) => Tasks.run(actor, target, options),
    completeTask: (result) => Tasks.complete(actor, result)
  }

  yield* Scope.addFinalizer(
    scope,
    Effect.gen(function*() {
      terminated = true
      actor.status = "closed"
      dropQueued(`${agent.name} is closed`, false)
      for (const msg of yield* Queue.clear(mailbox)) {
        rejectLate(msg)
        work.release()
      }
      forwardHeld()
    })
  )
  yield* loop.pipe(Diagnostics.fiber, Effect.forkIn(scope))
  return actor
})

export const notATask = (agent: Agent) =>
  new TaskError({ task: agent.name, reason: "invalid", message: `${agent.name} is not an AgentTask` })
