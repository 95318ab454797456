/**
 * The floor held by a person (`Human`): taking it over from the agent holding it, the caller's
 * words going to the human and the human's to the caller (both recorded in the history), and
 * handing it back to an agent with a note. Called by the supervisor (`Floor.handle`), one
 * message at a time; every floor change here is one synchronous step, as in Floor.ts (rule 1).
 *
 * While a human holds the floor no actor does (`state.holder` is undefined): no agent starts a
 * reply or a model call (rule 2), and the actor the floor was taken from is deactivated as on a
 * handoff (its speech cut at once, its running tool calls answered: rules 2 and 4).
 */
import { Deferred, type Duration, Effect, Exit, Queue } from "effect"
import * as Actor from "./actor/Actor.ts"
import type { Agent } from "../Agent.ts"
import { agentHandoff, type ChatItem, ChatContext, message, nextId } from "../ChatContext.ts"
import { FloorError } from "../Errors.ts"
import { applyContextPolicy, type ContextPolicy } from "../Handoff.ts"
import type { Human } from "../Human.ts"
import type { FloorState } from "./Floor.ts"
import * as Lifecycle from "./actor/Lifecycle.ts"
import * as Background from "./Background.ts"
import * as RealtimeBinding from "./realtime/Binding.ts"
import type { HandoffOutcome, SessionCore, SessionMessage } from "./SessionCore.ts"
import * as Whispers from "./Whispers.ts"

/**
 * What the caller said to a human holding the floor.
 *
 * @since 0.1.0
 * @category models
 */
export interface HumanWords {
  readonly sessionId: string
  readonly text: string
  /** The id of the user's message in the session's history. */
  readonly itemId: string
}

/** A human's side of the sessions: where the caller's words go, and the floor it holds. */
export interface HumanInner {
  readonly outbox: Queue.Queue<HumanWords>
  seat: Seat | undefined
}

/** A human holding a session's floor. */
export interface Seat {
  readonly human: Human
  readonly core: SessionCore
  /** When it took the floor (the session's clock). */
  readonly since: number
  /** The agent the floor was taken from: a hand back to another agent starts from its context. */
  readonly from: Actor.Actor
  /** What was said while the human held the floor, both ways, in order. */
  readonly items: Array<ChatItem>
}

/**
 * Options of `session.takeOver`.
 *
 * @since 0.1.0
 * @category models
 */
export interface TakeOverOptions {
  /** Why, as the history's record says. */
  readonly reason?: string | undefined
  /**
   * A task holding the floor (a transfer the human answered) is not cancelled: the human takes
   * the floor in the very step it returns to an agent.
   */
  readonly afterTask?: boolean | undefined
  /**
   * With `afterTask`: how long the take-over waits for the task to return (default 30 seconds).
   * Then it is withdrawn, `NotApplied` saying so, and the agent keeps the floor when the task
   * returns. Interrupting the take-over withdraws it the same way.
   */
  readonly timeout?: Duration.Input | undefined
}

/** How long a take-over waits for a task's return unless told (`TakeOverOptions.timeout`). */
export const TAKE_OVER_TIMEOUT: Duration.Input = "30 seconds"

/**
 * Options of `session.handBack`.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandBackOptions {
  /** Instructions for the agent's next reply (only the agent sees them). */
  readonly note?: string | undefined
  /** Why, as the history's record says. */
  readonly reason?: string | undefined
  /** What a new actor of the agent starts with, from the agent taken over (default "full"). */
  readonly context?: ContextPolicy | undefined
  /** Reply at once (default: when the agent has no onEnter/onResume to run instead). */
  readonly reply?: boolean | undefined
}

/** What this module needs of Floor.ts (passed in: Floor.ts imports this module). */
export interface FloorOps {
  /** `actor` passes the floor: the function its Deactivate calls once its onExit has run. */
  readonly exitOf: (state: FloorState, actor: Actor.Actor) => () => void
  /** The onExits a new holder's onEnter/onResume waits for. */
  readonly pendingExits: (state: FloorState) => ReadonlyArray<Deferred.Deferred<void>> | undefined
  /** Closes a task, its floor back to its caller and its waiter told it was cancelled. */
  readonly abandon: (core: SessionCore, state: FloorState, task: Actor.Actor, caller: Actor.Actor, reason: string) => void
  /** Starts the next task request of `actor` waiting for it to hold the floor. */
  readonly startPending: (core: SessionCore, state: FloorState, actor: Actor.Actor) => Effect.Effect<void>
}

type Msg<K extends SessionMessage["_tag"]> = Extract<SessionMessage, { readonly _tag: K }>

const refuse = (reply: Deferred.Deferred<HandoffOutcome>, reason: string): Effect.Effect<void> => {
  Deferred.doneUnsafe(reply, Exit.succeed<HandoffOutcome>({ _tag: "NotApplied", reason }))
  return Effect.void
}

const moved = (core: SessionCore, fields: { readonly from: string; readonly to: string; readonly kind: "take_over" | "hand_back"; readonly resumed: boolean; readonly reason: string | undefined }) => {
  core.record(agentHandoff(fields), undefined)
  core.emit({ type: "agent_handoff", ...fields })
}

/** A take-over waiting for a task to return. */
export type Claim = Msg<"TakeOver">

/** The human takes the floor from the agent holding it (tasks running give it back first). */
export const takeOver = (core: SessionCore, state: FloorState, floor: FloorOps, msg: Msg<"TakeOver">): Effect.Effect<void> => {
  const { human } = msg
  // Withdrawn while its holder was cutting its words (`WithdrawTakeOver` answered it).
  if (Deferred.isDoneUnsafe(msg.reply)) return Effect.void
  if (state.human) return refuse(msg.reply, `${state.human.human.name} already holds the floor`)
  const elsewhere = human.inner.seat
  if (elsewhere && !elsewhere.core.closed()) return refuse(msg.reply, `${human.name} holds the floor of session ${elsewhere.core.id}`)
  let holder = state.holder
  if (!holder) return refuse(msg.reply, "no agent holds the floor")
  if (msg.afterTask && holder.task && msg.cutBy !== holder) {
    // Floor.completeTask applies it when the task returns to an agent.
    if (state.claim) return refuse(msg.reply, `${state.claim.human.name} takes the floor when ${holder.name} returns`)
    state.claim = { ...msg, cutBy: undefined }
    return Effect.void
  }
  if (msg.cutBy !== holder) {
    // First the holder stops at once, as on a barge-in (its words so far recorded as its own),
    // then the floor moves. Asked again if the floor moved to another agent meanwhile (a
    // handoff applied between the two steps): that one has not cut its words.
    holder.send({ _tag: "Yield", passes: { ...msg, cutBy: holder } })
    return Effect.void
  }
  // A task running is cancelled (innermost first): the floor is taken from the agent under it.
  while (holder.task) {
    const caller: Actor.Actor = holder.task.caller
    floor.abandon(core, state, holder, caller, `${human.name} took over`)
    holder = caller
  }
  // A take-over waiting for a task's return is overtaken by this one.
  if (state.claim && state.claim !== msg && state.claim.reply !== msg.reply) {
    refuse(state.claim.reply, `${human.name} took over first`)
    state.claim = undefined
  }
  const seat: Seat = { human, core, since: core.now(), from: holder, items: [] }
  state.holder = undefined
  state.human = seat
  human.inner.seat = seat
  recordSessionReports(core, seat)
  if (holder.realtime) RealtimeBinding.release(holder.realtime)
  moved(core, { from: holder.name, to: human.name, kind: "take_over", resumed: false, reason: msg.reason })
  // As on a handoff: its speech is cut at once, its onExit runs, it says nothing more.
  holder.send({ _tag: "Deactivate", final: false, then: floor.exitOf(state, holder) })
  Deferred.doneUnsafe(msg.reply, Exit.succeed<HandoffOutcome>({ _tag: "Applied", to: human.name }))
  return Effect.void
}

/** A take-over waiting for a task's return is withdrawn (timed out, or its asker interrupted):
 * the agent under the task keeps the floor when it returns (it may reply). One that was applied
 * first stands (its reply is done); one still with a holder cutting its words is dropped there. */
export const withdraw = (state: FloorState, msg: Msg<"WithdrawTakeOver">): Effect.Effect<void> => {
  if (state.claim?.reply === msg.reply) state.claim = undefined
  return refuse(msg.reply, msg.reason)
}

/** Session tools' reports while a human holds the floor: recorded as the session's (no agent is
 * there to tell them), and given to the agent the floor is handed back to. A handoff one returns
 * is not applied, and said why (rule 9). */
export const recordSessionReports = (core: SessionCore, seat: Seat): void => {
  const commit = (item: ChatItem) => {
    core.record(item, undefined)
    seat.items.push(item)
  }
  const pending = core.sessionDeliveries
  // A call whose own output is not in history yet (its batch still running) keeps its reports
  // until it is (a "SessionCallAnswered" message then), or until an agent holds the floor again.
  const ready = pending.filter((delivery) => delivery.call.answered)
  if (ready.length === 0) return
  const waiting = pending.filter((delivery) => !delivery.call.answered)
  pending.splice(0, pending.length, ...waiting)
  for (const delivery of ready) {
    const target = delivery._tag === "Final" && delivery.result._tag === "Handoff" ? delivery.result.target.name : undefined
    const reason = `${seat.human.name} holds the floor`
    const recorded = target === undefined
      ? Background.pair("session", delivery)
      : Background.pair("session", delivery, { output: `Not transferred to ${target}: ${reason}.`, isError: true, status: "error" })
    commit(recorded.call)
    commit(recorded.output)
    if (target !== undefined) core.emit({ type: "handoff_not_applied", agent: "session", to: target, reason })
  }
}

/** The caller's words while a human holds the floor: recorded, and to the human. */
export const input = (core: SessionCore, seat: Seat, msg: Msg<"Input">): void => {
  const name = seat.human.name
  const item = message("user", msg.text, { agent: name, ...(msg.itemId !== undefined ? { id: msg.itemId } : {}) })
  if (msg.itemId === undefined || !core.history().has(msg.itemId)) {
    core.record(item, name)
    seat.items.push(item)
  }
  Queue.offerUnsafe(seat.human.inner.outbox, { sessionId: core.id, text: msg.text, itemId: item.id })
}

/** The human's words: recorded as theirs, and to the caller's output (unless the caller heard
 * them in the human's voice already: then recorded only). */
export const say = (core: SessionCore, state: FloorState, msg: Msg<"HumanSay">): Effect.Effect<void> => {
  const seat = state.human
  if (seat?.human !== msg.human) {
    return Deferred.fail(msg.reply, new FloorError({ agent: msg.human.name, reason: "not_holder", message: `${msg.human.name} does not hold the floor` }))
  }
  const item = message("assistant", msg.text, { agent: msg.human.name })
  core.record(item, msg.human.name)
  seat.items.push(item)
  if (msg.voiced) return Effect.asVoid(Deferred.succeed(msg.reply, undefined))
  const out = core.textOutput
  const info = { speechId: nextId("speech"), agent: msg.human.name }
  return out.start(info).pipe(
    Effect.andThen(out.write(msg.text, info)),
    Effect.andThen(out.end(info, false)),
    Effect.andThen(Deferred.succeed(msg.reply, undefined)),
    Effect.asVoid
  )
}

/** A whisper for the agent holding the floor's next reply. */
export const whisper = (core: SessionCore, state: FloorState, msg: Msg<"Whisper">): Effect.Effect<void> => {
  if (!state.holder) {
    const reason = state.human ? `${state.human.human.name} holds the floor: no agent to whisper to` : "no agent holds the floor to whisper to"
    return Deferred.fail(msg.reply, new FloorError({ agent: "", reason: "no_holder", message: reason }))
  }
  Whispers.add(state.holder, msg.text)
  core.emit({ type: "whisper", agent: state.holder.name, text: msg.text, note: false })
  return Effect.asVoid(Deferred.succeed(msg.reply, undefined))
}

/** The floor goes back from the human to `agent` (its paused actor resumed, or a new one). */
export const handBack = (core: SessionCore, state: FloorState, floor: FloorOps, msg: Msg<"HandBack">): Effect.Effect<void> => {
  const seat = state.human
  if (!seat) return refuse(msg.reply, "no human holds the floor")
  const agent: Agent = msg.agent
  if (agent.task) return refuse(msg.reply, `${agent.name} is a task: the floor is handed back to an agent`)
  const { options } = msg
  const held = ChatContext.make(seat.items)
  const existing = state.actors.get(agent)
  const resumed = existing !== undefined && !Lifecycle.isClosed(existing)
  // Another agent than the one taken over starts from its context, with what the human said.
  const selected = applyContextPolicy(options.context ?? "full", seat.from.chat.merge(held))
  const target = resumed ? Effect.succeed(existing) : Actor.make(core, agent, selected, { startLater: true })
  return Effect.flatMap(target, (actor) => {
    if (!resumed) state.live.add(actor)
    state.actors.set(agent, actor)
    seat.human.inner.seat = undefined
    state.human = undefined
    state.holder = actor
    moved(core, { from: seat.human.name, to: actor.name, kind: "hand_back", resumed, reason: options.reason })
    if (options.note) {
      Whispers.add(actor, options.note)
      core.emit({ type: "whisper", agent: actor.name, text: options.note, note: true })
    }
    const reply = !state.pending.get(actor)?.length && (options.reply ?? !(resumed ? agent.onResume : agent.onEnter))
    const merge = resumed ? (actor === seat.from ? held : selected) : undefined
    actor.send({ _tag: "Activate", mode: resumed ? "resume" : "enter", merge, reply, after: floor.pendingExits(state) })
    Deferred.doneUnsafe(msg.reply, Exit.succeed<HandoffOutcome>({ _tag: "Applied", to: actor.name }))
    if (state.pending.has(actor)) return Effect.andThen(floor.startPending(core, state, actor), actor.start)
    return resumed ? actor.start : Actor.startLoop(actor)
  })
}
