/**
 * The agent's `onUserTurnCompleted` hook, run in the reply's fiber before the reply: the user's
 * message is already recorded (whatever the hook decides), a newer turn of the user cuts the hook
 * as it cuts a reply, and a hook that fails is reported and the agent replies as without one.
 */
import { Cause, Effect } from "effect"
import type { Message } from "../../ChatContext.ts"
import { CurrentAgent } from "../../CurrentAgent.ts"
import type { Speech } from "../../Speech.ts"
import * as Turn from "../../Turn.ts"
import * as Reply from "../Reply.ts"
import type { Actor } from "./Actor.ts"

/** The reply to the user's turn `message`, through the agent's hook when it has one. */
export const reply = (actor: Actor, speech: Speech, message: Message | undefined): Effect.Effect<void, Reply.ReplyError> => {
  const hook = actor.agent.onUserTurnCompleted
  if (!hook || !message) return Reply.run(actor, speech, {})
  return Effect.suspend(() => hook({ message, context: actor.chat })).pipe(
    Effect.provideService(CurrentAgent, actor.handle),
    Effect.catchCause((cause) => {
      // Interrupts only: the cause holds no error of the hook's.
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      actor.core.emit({ type: "error", agent: actor.name, source: "hook", message: `onUserTurnCompleted of ${actor.name} failed: ${Cause.pretty(cause)}`, recoverable: true })
      return Effect.succeed(undefined)
    }),
    Effect.flatMap((decision) => {
      if (Turn.isStopResponse(decision)) return Effect.void
      // The floor may have moved while the hook ran (rule 2): nothing is added nor said then.
      if (!actor.holdsFloor()) return Effect.void
      if (!decision) return Reply.run(actor, speech, {})
      for (const item of decision.add) actor.commit(item)
      return Reply.run(actor, speech, decision.instructions !== undefined ? { instructions: decision.instructions } : {})
    })
  )
}
