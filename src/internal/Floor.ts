/**
 * The floor: which actor receives the user's input and may speak. The session supervisor owns
 * it and changes it only here, one message at a time. This module is the handoff protocol:
 *
 * - handoff A -> B: only the holder can hand off; the floor, the history record and the
 *   `agent_handoff` event change in one synchronous step (rule 1); A is deactivated (`onExit`),
 *   B is activated (`onEnter` on its first activation, `onResume` when its paused actor is
 *   resumed with its state: rules 5 and 6);
 * - task start: the caller lends the floor to a new task actor (no hooks of the caller run); a
 *   request from an actor that does not hold the floor waits until it does, so tasks started by
 *   parallel tools run one after another;
 * - task completion: the floor returns to the caller with the task's messages merged in, the
 *   task actor closes, and the caller's waiting flow wakes up with the result (rule 6).
 */
import { Deferred, Effect, Exit } from "effect"
import { constVoid } from "effect/Function"
import * as Actor from "./actor/Actor.ts"
import type { Agent } from "../Agent.ts"
import { agentHandoff, ChatContext, type HandoffKind } from "../ChatContext.ts"
import type { TaskResult } from "../CurrentAgent.ts"
import { FloorError, TaskError } from "../Errors.ts"
import { applyContextPolicy } from "../Handoff.ts"
import * as HandoffRules from "./HandoffRules.ts"
import * as HumanFloor from "./HumanFloor.ts"
import * as RealtimeBinding from "./realtime/Binding.ts"
import * as Tasks from "./Tasks.ts"
import type { Handover, HandoffOutcome, SessionCore, SessionMessage } from "./SessionCore.ts"
import * as Lifecycle from "./actor/Lifecycle.ts"

type StartTask = Extract<SessionMessage, { readonly _tag: "StartTask" }>

export interface FloorState {
  holder: Actor.Actor | undefined
  /** The actors of agents (not tasks), by agent value: an agent has one actor per session. */
  readonly actors: Map<Agent, Actor.Actor>
  /** Every live actor, tasks included. */
  readonly live: Set<Actor.Actor>
  /** Task requests waiting for their caller to hold the floor. */
  readonly pending: Map<Actor.Actor, Array<StartTask>>
  /** The onExits of actors that passed the floor, not finished yet: every activation waits for
   * them, so hooks run in the floor's order even when it passes on at once (a task returns and
   * its caller starts the next one, seed 381752). */
  readonly exiting: Set<Deferred.Deferred<void>>
  /** A person holding the floor (then `holder` is undefined: no actor holds it). */
  human: HumanFloor.Seat | undefined
  /** A take-over waiting for the task holding the floor to return (`afterTask`). */
  claim: HumanFloor.Claim | undefined
}

export const makeState = (): FloorState => ({
  holder: undefined,
  actors: new Map(),
  live: new Set(),
  pending: new Map(),
  exiting: new Set(),
  human: undefined,
  claim: undefined
})

/** `actor` passes the floor: its onExit (if it has one) is waited for by later activations.
 * The Deactivate's `then` calls the returned function once the onExit has run. */
const exitOf = (state: FloorState, actor: Actor.Actor): () => void => {
  if (!actor.agent.onExit) return constVoid
  const exited = Deferred.makeUnsafe<void>()
  state.exiting.add(exited)
  return () => {
    state.exiting.delete(exited)
    Deferred.doneUnsafe(exited, Effect.void)
  }
}

/** What a new holder's onEnter/onResume waits for: the onExits still running. */
const pendingExits = (state: FloorState): ReadonlyArray<Deferred.Deferred<void>> | undefined =>
  state.exiting.size === 0 ? undefined : [...state.exiting]

export const handle = (core: SessionCore, state: FloorState, msg: SessionMessage): Effect.Effect<void> =>
  Effect.suspend((): Effect.Effect<void> => {
    switch (msg._tag) {
      case "Start":
        return Effect.map(spawn(core, state, msg.agent, ChatContext.empty), (actor) => {
          state.actors.set(msg.agent, actor)
          pass(core, state, { to: actor, kind: "start" })
          actor.send({ _tag: "Activate", mode: "enter" })
        })
      case "Input": {
        if (state.human) return Effect.sync(() => HumanFloor.input(core, state.human!, msg))
        if (!state.holder) {
          core.emit({ type: "error", agent: undefined, source: "input", message: "no agent holds the floor", recoverable: true })
          return Effect.void
        }
        state.holder.send(msg.itemId === undefined ? { _tag: "UserInput", text: msg.text } : { _tag: "UserInput", text: msg.text, itemId: msg.itemId })
        return Effect.void
      }
      case "Say":
      case "Reply": {
        if (!state.holder) return Deferred.fail(msg.reply, new FloorError({ agent: "", reason: "no_holder", message: "no agent holds the floor" }))
        state.holder.send(msg)
        return Effect.void
      }
      case "Interrupt": {
        state.holder?.send({ _tag: "Interrupt" })
        return Effect.void
      }
      case "Handoff":
        return handoff(core, state, msg)
      case "StartTask": {
        if (Lifecycle.isClosed(msg.caller)) {
          Tasks.wake(core.work, msg.handover, msg.result, {
            _tag: "Failure",
            error: cancelled(msg.task, `${msg.caller.name} is closed`)
          })
          return Effect.void
        }
        if (state.holder !== msg.caller) {
          const queue = state.pending.get(msg.caller) ?? []
          queue.push(msg)
          state.pending.set(msg.caller, queue)
          return Effect.void
        }
        return startTask(core, state, msg)
      }
      case "CompleteTask":
        return completeTask(core, state, msg.actor, msg.result)
      case "Background": {
        core.sessionDeliveries.push(msg.delivery)
        if (state.human) HumanFloor.recordSessionReports(core, state.human)
        state.holder?.send({ _tag: "Kick" })
        return Effect.void
      }
      case "SessionCallAnswered": {
        if (state.human) HumanFloor.recordSessionReports(core, state.human)
        state.holder?.send({ _tag: "Kick" })
        return Effect.void
      }
      case "TakeOver":
        return HumanFloor.takeOver(core, state, floorOps, msg)
      case "WithdrawTakeOver":
        return HumanFloor.withdraw(state, msg)
      case "HandBack":
        return HumanFloor.handBack(core, state, floorOps, msg)
      case "HumanSay":
        return HumanFloor.say(core, state, msg)
      case "Whisper":
        return HumanFloor.whisper(core, state, msg)
      case "UserSpeaking": {
        // Barge-in: the user starting to speak cuts what the agent is saying.
        // The message may arrive after a reply to this very turn began: that one is not cut.
        state.holder?.send(msg.speaking ? { _tag: "Interrupt", userTurn: msg.userTurn } : { _tag: "Kick" })
        return Effect.void
      }
    }
  })

/**
 * The atomic part of every floor change: holder, history record and event together. The old
 * holder's realtime connection is released in the same step, so the new holder can take it
 * and the old one can no longer use it (rule 7). A caller the floor returns to is told to take
 * one now, not after the task's onExit (the user may be speaking; its flow resumes after the
 * onExit). Other new holders take it in their `Activate`, once their context is merged.
 */
interface Pass {
  /** The holder giving the floor up; none at the session's start. */
  readonly from?: Actor.Actor | undefined
  readonly to: Actor.Actor
  readonly kind: HandoffKind
  /** `to` is a paused actor resumed with its state (default false). */
  readonly resumed?: boolean | undefined
  /** Why, as the handoff or the abandoned task's record says. */
  readonly reason?: string | undefined
}

const pass = (core: SessionCore, state: FloorState, { from, kind, reason, resumed = false, to }: Pass) => {
  state.holder = to
  if (from?.realtime) RealtimeBinding.release(from.realtime)
  if (kind === "return") to.send({ _tag: "TakeConnection" })
  core.record(agentHandoff({ from: from?.name, to: to.name, kind, resumed, reason }), undefined)
  core.emit({ type: "agent_handoff", from: from?.name, to: to.name, kind, resumed, reason })
}

const spawn = (
  core: SessionCore,
  state: FloorState,
  agent: Agent,
  initial: ChatContext,
  options?: Actor.MakeOptions
): Effect.Effect<Actor.Actor> =>
  Effect.map(Actor.make(core, agent, initial, options), (actor) => {
    state.live.add(actor)
    return actor
  })

/** Called on the step that handles the message (`handle`'s). */
const handoff = (
  core: SessionCore,
  state: FloorState,
  msg: Extract<SessionMessage, { readonly _tag: "Handoff" }>
): Effect.Effect<void> => {
  const holder = state.holder
  const refused = HandoffRules.refusal({ from: msg.from, holder, target: msg.target })
  // (`holder` undefined is always refused, `NoHolder`: said again for the type checker.)
  if (refused !== undefined || holder === undefined) {
    const reason = HandoffRules.reason(refused ?? { _tag: "NoHolder" })
    if (msg.from) {
      Lifecycle.stopPassing(msg.from)
      msg.from.send({ _tag: "Kick" })
    }
    core.emit({ type: "handoff_not_applied", agent: msg.from?.name ?? holder?.name ?? "", to: msg.target.name, reason })
    Deferred.doneUnsafe(msg.reply, Exit.succeed<HandoffOutcome>({ _tag: "NotApplied", reason }))
    return Effect.void
  }
  if (!msg.from) {
    // Asked from outside: the holder first ends what it is saying, then asks itself.
    holder.send({ _tag: "Release", target: msg.target, options: msg.options, reply: msg.reply })
    return Effect.void
  }
  const selected = applyContextPolicy(msg.options.context ?? "full", holder.chat)
  const existing = state.actors.get(msg.target)
  const resumed = existing !== undefined && !Lifecycle.isClosed(existing)
  // (`spawn` without its step: the new actor is counted live here.)
  const target = resumed ? Effect.succeed(existing) : Actor.make(core, msg.target, selected, { startLater: true })
  return Effect.flatMap(target, (actor) => {
    if (!resumed) state.live.add(actor)
    state.actors.set(msg.target, actor)
    pass(core, state, { from: holder, to: actor, kind: "handoff", resumed, reason: msg.options.reason })
    // No reply when a task of the new holder is waiting to start: it takes the floor at once.
    const reply = !state.pending.get(actor)?.length &&
      (msg.options.reply ?? !(resumed ? msg.target.onResume : msg.target.onEnter))
    // The new holder's onEnter/onResume waits for the old holder's onExit, and any earlier one
    // still running (hooks in order). (With no onExit there is nothing to wait for.)
    holder.send({ _tag: "Deactivate", final: false, then: exitOf(state, holder) })
    const after = pendingExits(state)
    actor.send({ _tag: "Activate", mode: resumed ? "resume" : "enter", merge: resumed ? selected : undefined, reply, after })
    Deferred.doneUnsafe(msg.reply, Exit.succeed<HandoffOutcome>({ _tag: "Applied", to: actor.name }))
    // A new actor's loop runs now, on this turn, with its Activate already in its mailbox.
    if (state.pending.has(actor)) return Effect.andThen(startPending(core, state, actor), actor.start)
    return resumed ? actor.start : Actor.startLoop(actor)
  })
}

const startTask = (core: SessionCore, state: FloorState, msg: StartTask): Effect.Effect<void> =>
  Effect.gen(function*() {
    const spec = msg.task.task!
    const selected = applyContextPolicy(spec.context, msg.caller.chat)
    const actor = yield* spawn(core, state, msg.task, selected, {
      task: {
        caller: msg.caller,
        result: msg.result,
        handover: msg.handover,
        baseline: new Set(selected.items.map((item) => item.id)),
        callId: msg.callId
      },
      extraTools: msg.extraTools
    })
    pass(core, state, { from: msg.caller, to: actor, kind: "task" })
    msg.caller.send({ _tag: "Lend" })
    actor.send({ _tag: "Activate", mode: "enter", reply: !msg.task.onEnter, after: pendingExits(state) })
  })

const startPending = (core: SessionCore, state: FloorState, actor: Actor.Actor): Effect.Effect<void> =>
  Effect.suspend(() => {
    const queue = state.pending.get(actor)
    const next = queue?.shift()
    if (queue && queue.length === 0) state.pending.delete(actor)
    return next && state.holder === actor ? startTask(core, state, next) : Effect.void
  })

const completeTask = (
  core: SessionCore,
  state: FloorState,
  actor: Actor.Actor,
  result: TaskResult
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const role = actor.task
    if (!role || Lifecycle.isClosed(actor) || !state.live.has(actor)) return
    // Tasks this task is itself waiting for are cancelled first, innermost first.
    let top = state.holder
    while (top && top !== actor && top.task) {
      const inner = top
      top = inner.task!.caller
      yield* abandon(core, state, inner, top, `${actor.name} completed while ${inner.name} was running`)
    }
    if (top !== actor) return
    const caller = role.caller
    const merge = ChatContext.make(actor.chat.items.filter((item) => !role.baseline.has(item.id))).copy({
      excludeInstructions: true,
      excludeHandoffs: true,
      excludeFunctionCalls: !actor.agent.task?.includeFunctionCalls
    })
    state.live.delete(actor)
    // Requests of flows that die with the task (its scope closes) are dropped with it.
    state.pending.delete(actor)
    pass(core, state, { from: actor, to: caller, kind: "return", resumed: true })
    returnTo(core, state, actor, caller, merge, result)
    // A person waiting for this return takes the floor in this step: the caller gets the task's
    // result but never holds the floor to reply to it.
    const claim = state.claim
    if (claim && !caller.task) {
      state.claim = undefined
      yield* HumanFloor.takeOver(core, state, floorOps, { ...claim, cutBy: caller })
      // Refused (the person took another session's floor meanwhile): the caller keeps the floor,
      // and its next task request starts as without a claim (it waits for a hand back otherwise).
      if (state.holder !== caller) return
    }
    yield* startPending(core, state, caller)
  })

/** Closes a task whose parent task completed under it; its waiter gets a cancelled error. */
const abandon = (
  core: SessionCore,
  state: FloorState,
  task: Actor.Actor,
  caller: Actor.Actor,
  reason: string
): Effect.Effect<void> => Effect.sync(() => abandonNow(core, state, task, caller, reason))

const abandonNow = (core: SessionCore, state: FloorState, task: Actor.Actor, caller: Actor.Actor, reason: string) => {
  state.live.delete(task)
  pass(core, state, { from: task, to: caller, kind: "return", resumed: true, reason })
  returnTo(core, state, task, caller, ChatContext.empty, { _tag: "Failure", error: cancelled(task.agent, reason) })
  // A caller that is a task is cancelled in this same step (a take-over, or a task completed
  // under it): it closes once this result reached its flow (`returnTo`).
  if (caller.task) returning.set(caller, task.task!.handover)
}

/** A task cancelled with the task it awaits: that task's handover, whose flow gets the result
 * before this one closes (its Scope would interrupt the flow first: rule 6). */
const returning = new WeakMap<Actor.Actor, Handover>()

/** A task that passed the floor back closes: its onExit runs (waited for by later
 * activations), then its caller's flow gets `result`. */
const returnTo = (core: SessionCore, state: FloorState, task: Actor.Actor, caller: Actor.Actor, merge: ChatContext, result: TaskResult) => {
  const exited = exitOf(state, task)
  const close = () =>
    task.send({
      _tag: "Deactivate",
      final: true,
      then: () => {
        exited()
        caller.send({ _tag: "Return", merge, role: task.task!, result })
      }
    })
  const under = returning.get(task)
  if (!under) return close()
  returning.delete(task)
  Tasks.whenTaken(core.work, under, close)
}

/** What HumanFloor.ts needs of this module. */
const floorOps: HumanFloor.FloorOps = {
  exitOf,
  pendingExits,
  abandon: abandonNow,
  startPending
}

const cancelled = (task: Agent, message: string) => new TaskError({ task: task.name, reason: "cancelled", message })
