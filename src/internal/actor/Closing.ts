/**
 * A closed actor: what it still owes. A message sent after its Scope closed, or left in its
 * mailbox when it closed, gets its answer here (a floor error, the next holder's activation, the
 * session taking the input), so that closing an actor never loses a request or a user's turn.
 */
import { Deferred, Effect, Exit, Queue } from "effect"
import { FloorError } from "../../Errors.ts"
import * as Background from "../Background.ts"
import * as Speeches from "../Speeches.ts"
import * as Tasks from "../Tasks.ts"
import * as Work from "../Work.ts"
import type { Actor, ActorMessage } from "./Actor.ts"
import * as Handlers from "./Handlers.ts"
import * as Lifecycle from "./Lifecycle.ts"

/** A message for an actor whose Scope is closed still gets its answer. */
export const rejectLate = (actor: Actor, msg: ActorMessage) => {
  const core = actor.core
  switch (msg._tag) {
    case "UserInput":
      return core.send({ _tag: "Input", text: msg.text, itemId: msg.itemId })
    case "Say":
    case "Reply":
      return void Deferred.doneUnsafe(msg.reply, Exit.fail(new FloorError({ agent: actor.name, reason: "agent_closed", message: `${actor.name} is closed` })))
    case "Deactivate":
      return msg.then()
    case "Release":
      return core.send({ _tag: "Handoff", from: undefined, target: msg.target, options: msg.options, reply: msg.reply })
    case "Yield":
      return core.send(msg.passes)
    case "Return":
      return Tasks.wake(core.work, msg.role.handover, msg.role.result, msg.result)
    case "Complete":
      return core.send({ _tag: "CompleteTask", actor, result: msg.result })
    case "Background":
      // Recorded after what the actor had pending (at close, in the finalizer's flush).
      actor.inner.pending.push(msg.delivery)
      return actor.lifecycle._tag === "Terminated" && actor.lifecycle.flushed ? Background.flush(actor, actor.inner.pending) : undefined
    default:
      return
  }
}

/** The Scope closed: what was queued or pending gets its answer, and held input moves on. */
export const finalizer = (actor: Actor) =>
  Effect.gen(function*() {
    Lifecycle.terminate(actor)
    Speeches.dropQueued(actor.speeches, `${actor.name} is closed`, { force: true })
    for (const msg of yield* Queue.clear(actor.inner.mailbox)) {
      rejectLate(actor, msg)
      Work.release(actor.core.work)
    }
    Background.flush(actor, actor.inner.pending)
    Lifecycle.flushed(actor)
    Handlers.forwardHeld(actor)
  })
