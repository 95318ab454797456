/**
 * What an actor's loop does with each message of its mailbox: one handler per kind. A message is
 * mostly bookkeeping: plain code, with an effect only where one is needed. After each message,
 * `afterEach` lets go what the message made possible: held input, background reports, the next
 * speech.
 */
import { Deferred, Effect, Exit, Queue, Scope } from "effect"
import * as Diagnostics from "../../Diagnostics.ts"
import { FloorError } from "../../Errors.ts"
import * as Background from "../Background.ts"
import * as RealtimeBinding from "../realtime/Binding.ts"
import * as Reply from "../Reply.ts"
import * as Speeches from "../Speeches.ts"
import * as Tasks from "../Tasks.ts"
import type { SessionMessage } from "../SessionCore.ts"
import type { Actor, ActorMessage } from "./Actor.ts"
import * as Journal from "../Journal.ts"
import * as Hooks from "./Hooks.ts"
import * as Input from "./Input.ts"
import * as Speech from "../../Speech.ts"
import * as Lifecycle from "./Lifecycle.ts"
import * as Work from "../Work.ts"

export { forwardHeld } from "./Input.ts"

type Handler<K extends ActorMessage["_tag"]> = (actor: Actor, msg: Extract<ActorMessage, { readonly _tag: K }>) => Effect.Effect<void>

/**
 * The connection follows the floor the moment it arrives (a handoff, a resume, a task's return,
 * before the task's onExit has run), not at the first reply: the user may be speaking into it,
 * and only a lease hears the end of their turn (a reply waits for it) and makes the server answer
 * with this agent's configuration.
 */
const takesConnection = (actor: Actor): boolean => actor.realtime !== undefined && actor.holdsFloor()

const takeConnection = (actor: Actor): Effect.Effect<void> =>
  takesConnection(actor)
    // Part of the handoff for rule 10: the take holds a work token (taken as the fiber starts,
    // while the message that asked for it still holds its own), so a run resolves only once
    // the connection has moved.
    ? RealtimeBinding.take(actor).pipe(Work.track(actor.core.work), Diagnostics.startIn(actor.scope, { startImmediately: true }))
    : Effect.void

/** A finished task's actor closes its own Scope, from outside it (a fiber of the session). */
const closeSelf = (actor: Actor): Effect.Effect<void> =>
  Scope.close(actor.scope, Exit.void).pipe(Effect.forkIn(actor.core.scope), Effect.asVoid)

const sayOrReply: Handler<"Say" | "Reply"> = (actor, msg) => {
  if (actor.core.closed()) {
    return Deferred.fail(msg.reply, new FloorError({ agent: actor.name, reason: "session_closed", message: "the session is closed" }))
  }
  if (!actor.holdsFloor()) {
    return Deferred.fail(msg.reply, new FloorError({ agent: actor.name, reason: "not_holder", message: `${actor.name} does not hold the floor` }))
  }
  const handle = msg._tag === "Say"
    ? Speeches.enqueue(actor.speeches, "say", msg.options, (speech) => Reply.say(actor, speech, msg.text, msg.options))
    : Speeches.enqueue(actor.speeches, "generate_reply", msg.options, (speech) => Reply.reply(actor, speech, msg.options))
  return Deferred.succeed(msg.reply, handle).pipe(Effect.asVoid)
}

const activate: Handler<"Activate"> = (actor, msg) => {
  Lifecycle.activate(actor)
  // Until its hook starts, a durable session journals it as not activated (Journal.activated).
  if (Journal.journaled(actor.core.id)) actor.inner.activation = msg.mode
  if (msg.merge) actor.chat = actor.chat.merge(msg.merge)
  // Without a connection to take (a text or cascaded agent), the hook starts on this step.
  if (!takesConnection(actor)) return enterOrResume(actor, msg)
  return Effect.andThen(takeConnection(actor), Effect.suspend(() => enterOrResume(actor, msg)))
}

const enterOrResume = (actor: Actor, msg: Extract<ActorMessage, { readonly _tag: "Activate" }>): Effect.Effect<void> => {
  if (msg.reply && actor.holdsFloor()) Speeches.enqueue(actor.speeches, "generate_reply", {}, (speech) => Reply.run(actor, speech, {}))
  const agent = actor.agent
  return msg.mode === "enter"
    ? Hooks.run(actor, agent.onEnter, "onEnter", { holdsInput: true, waitFor: msg.after, activation: true })
    : Hooks.run(actor, agent.onResume, "onResume", { holdsInput: true, waitFor: msg.after, activation: true })
}

const deactivate: Handler<"Deactivate"> = (actor, msg) => {
  Lifecycle.deactivate(actor, msg.final)
  return Effect.andThen(
    Speeches.interruptCurrent(actor.speeches, { force: true }),
    Effect.suspend(() => {
      // The connection goes back to the pool: this actor can neither use it nor hear it now.
      if (actor.realtime) RealtimeBinding.release(actor.realtime)
      Speeches.dropQueued(actor.speeches, `${actor.name} passed the floor`, { force: true })
      Input.forwardHeld(actor)
      const then = Effect.sync(msg.then)
      // Until its onExit starts, a durable session journals it as exiting (Journal.exited).
      if (actor.agent.onExit) Journal.exitQueued(actor)
      return Hooks.run(actor, actor.agent.onExit, "onExit", { after: msg.final ? Effect.andThen(then, closeSelf(actor)) : then, exit: true })
    })
  )
}

/** The floor was lent to a task: the caller waits, active, without its connection. */
const lend: Handler<"Lend"> = (actor) => {
  Lifecycle.stopPassing(actor)
  if (actor.realtime) RealtimeBinding.release(actor.realtime)
  Input.forwardHeld(actor)
  return Effect.void
}

/**
 * The floor leaves this actor at its own flow's request, from outside a tool batch (a handoff
 * asked from outside, a task completed by its hook): what it is saying ends (and is recorded)
 * before `passes` asks the session to move the floor.
 */
const passFloor = (actor: Actor, passes: SessionMessage): Effect.Effect<void> => {
  Lifecycle.startPassing(actor)
  return Effect.andThen(
    Speeches.interruptCurrent(actor.speeches, { force: true }),
    Effect.sync(() => {
      const current = Speeches.current(actor.speeches)
      if (current && Speech.inToolPhase(current)) Speech.cutFollowUp(current)
      actor.core.send(passes)
    })
  )
}

const handlers: { readonly [K in ActorMessage["_tag"]]: Handler<K> } = {
  UserInput: (actor, msg) => Input.userInput(actor, msg.text, msg.itemId),
  Kick: () => Effect.void,
  SpeechEnded: (actor, msg) => Effect.sync(() => Speeches.ended(actor.speeches, msg.speech)),
  Say: (actor, msg) => sayOrReply(actor, msg),
  Reply: (actor, msg) => sayOrReply(actor, msg),
  Heard: (actor, msg) => Input.heard(actor, msg.event),
  Interrupt: (actor, msg) => {
    if (msg.speech) return Speeches.interruptOne(actor.speeches, msg.speech)
    Speeches.dropQueued(actor.speeches, "interrupted", { beforeTurn: msg.userTurn })
    return Speeches.interruptCurrent(actor.speeches, { beforeTurn: msg.userTurn })
  },
  Activate: activate,
  Deactivate: deactivate,
  Lend: lend,
  Release: (actor, msg) => passFloor(actor, { _tag: "Handoff", from: actor, target: msg.target, options: msg.options, reply: msg.reply }),
  Complete: (actor, msg) => passFloor(actor, { _tag: "CompleteTask", actor, result: msg.result }),
  Yield: (actor, msg) => passFloor(actor, msg.passes),
  Return: (actor, msg) =>
    Effect.sync(() => {
      actor.chat = actor.chat.merge(msg.merge)
      Tasks.wake(actor.core.work, msg.role.handover, msg.role.result, msg.result)
    }),
  TakeConnection: takeConnection,
  UserAway: (actor, msg) =>
    actor.holdsFloor() && actor.agent.onUserAway
      ? Hooks.run(actor, actor.agent.onUserAway({ times: msg.times }), "onUserAway")
      : Effect.void,
  HookEnded: (actor, msg) =>
    Effect.sync(() => {
      if (msg.holdsInput) actor.inner.inputHoldingHooks--
    }),
  Background: (actor, msg) => Effect.sync(() => void actor.inner.pending.push(msg.delivery))
}

export const handle = (actor: Actor, msg: ActorMessage): Effect.Effect<void> =>
  Effect.suspend(() => (handlers[msg._tag] as Handler<typeof msg._tag>)(actor, msg as never))

/** Background reports the actor can tell now; a session tool's stay the session's until a
 * holder takes them. */
const deliverPending = (actor: Actor) => {
  const inner = actor.inner
  // Nothing pending after most messages: then no host is made (it is made once, when needed).
  if (inner.pending.length > 0) Background.deliver(inner.deliveryHost ??= deliveryHost(actor), inner.pending)
  const session = actor.core.sessionDeliveries
  if (session.length > 0 && actor.holdsFloor()) Background.deliver(inner.deliveryHost ??= deliveryHost(actor), session)
}

export const afterEach = (actor: Actor): Effect.Effect<void> => {
  const settled = Effect.sync(() => {
    // Listening once nothing is left to do here: a message already waiting (a reply asked right
    // after an interrupt) decides the next state itself, so the state changes once per step.
    if (
      actor.holdsFloor() && !Speeches.current(actor.speeches) && actor.inner.inputHoldingHooks === 0 &&
      (Lifecycle.isActive(actor) || Lifecycle.isPassing(actor)) && Queue.sizeUnsafe(actor.inner.mailbox) === 0
    ) {
      actor.setState("listening")
    }
    Speeches.notifySettled(actor.speeches)
  })
  const rest = () => {
    deliverPending(actor)
    Speeches.reconcile(actor.speeches, actor.holdsFloor())
    actor.inner.loop = "waiting"
    return Effect.andThen(Speeches.startNext(actor.speeches), settled)
  }
  const afterHeld = Effect.suspend(rest)
  // Most messages leave no input held: then the rest goes on this step.
  return Effect.suspend(() => (Input.mayReleaseHeld(actor) ? Effect.andThen(Input.releaseHeld(actor), afterHeld) : rest()))
}

/** How background calls' reports reach this actor (Background.ts). */
const deliveryHost = (actor: Actor): Background.DeliveryHost => {
  const host: Background.DeliveryHost = {
    name: actor.name,
    isTask: actor.task !== undefined,
    self: actor.agent,
    holdsFloor: actor.holdsFloor,
    readyForHandoff: () => Lifecycle.isActive(actor) && !Speeches.current(actor.speeches) && actor.inner.inputHoldingHooks === 0,
    readyToTell: () =>
      host.readyForHandoff() && Speeches.queued(actor.speeches) === 0 && actor.inner.held.length === 0 && !actor.core.userSpeaking(),
    commit: (item) => actor.commit(item),
    executed: (calls, handoffTo) =>
      actor.core.emit({ type: "function_tools_executed", agent: actor.name, calls, hasHandoff: handoffTo !== undefined, handoffTo, deferred: true }),
    notApplied: (to, reason) => actor.core.emit({ type: "handoff_not_applied", agent: actor.name, to, reason }),
    requestHandoff: (target, options) => {
      Lifecycle.startPassing(actor)
      actor.core.send({ _tag: "Handoff", from: actor, target, options, reply: Deferred.makeUnsafe() })
    },
    reply: () => void Speeches.enqueue(actor.speeches, "tool_reply", {}, (speech) => Reply.run(actor, speech, {}))
  }
  return host
}
