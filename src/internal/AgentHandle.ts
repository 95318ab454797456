/**
 * An actor's `AgentHandle`: what its hooks and tools can do, through the `CurrentAgent` service
 * (one name for one thing: `CurrentAgent` is the service, an `AgentHandle` its value).
 */
import { Effect } from "effect"
import type { Actor } from "./actor/Actor.ts"
import type { AgentHandle } from "../CurrentAgent.ts"
import { FloorError } from "../Errors.ts"
import { CurrentCall } from "./FlowContext.ts"
import * as Reply from "./Reply.ts"
import * as Tasks from "./Tasks.ts"

export const make = (actor: Actor): AgentHandle => {
  const notHolder = () => new FloorError({ agent: actor.name, reason: "not_holder", message: `${actor.name} does not hold the floor` })
  return {
    agent: actor.agent,
    name: actor.name,
    session: actor.core.session(),
    userdata: actor.core.userdata,
    holdsFloor: Effect.sync(actor.holdsFloor),
    chatContext: Effect.sync(() => actor.chat),
    updateChatContext: (f) =>
      Effect.sync(() => {
        actor.chat = f(actor.chat)
      }),
    say: (text, options = {}) =>
      Effect.suspend(() =>
        actor.holdsFloor()
          ? Effect.succeed(actor.speeches.enqueue("say", options, (speech) => Reply.say(actor, speech, text, options)))
          : Effect.fail(notHolder())
      ),
    generateReply: (options = {}) =>
      Effect.withFiber((fiber) => {
        if (!actor.holdsFloor()) return Effect.fail(notHolder())
        // A tool call in its batch may wait for this reply: it is said while the batch runs.
        const call = fiber.getRef(CurrentCall)
        const byTool = call !== undefined && call.actor === actor && call.foreground()
        return Effect.succeed(
          actor.speeches.enqueue("generate_reply", { ...options, byTool }, (speech) => Reply.reply(actor, speech, options))
        )
      }),
    runTask: (target, options) => Tasks.run(actor, target, options),
    completeTask: (result) => Tasks.complete(actor, result)
  }
}
