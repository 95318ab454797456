/**
 * An actor's `AgentHandle`: what its hooks and tools can do, through the `CurrentAgent` service
 * (one name for one thing: `CurrentAgent` is the service, an `AgentHandle` its value).
 */
import { Effect } from "effect"
import type { Actor } from "./actor/Actor.ts"
import type { AgentHandle } from "../CurrentAgent.ts"
import type { Agent } from "../Agent.ts"
import { FloorError } from "../Errors.ts"
import { CurrentCall } from "./FlowContext.ts"
import * as Reply from "./Reply.ts"
import type { SessionCore } from "./SessionCore.ts"
import * as Speeches from "./Speeches.ts"
import * as Tasks from "./Tasks.ts"

/** Made with the actor it belongs to (`self`, read only when a call runs, once the actor
 * exists). */
export const make = (core: SessionCore, agent: Agent, self: () => Actor): AgentHandle => {
  const name = agent.name
  const notHolder = () => new FloorError({ agent: name, reason: "not_holder", message: `${name} does not hold the floor` })
  return {
    agent,
    name,
    session: core.session(),
    userdata: core.userdata,
    holdsFloor: Effect.sync(() => self().holdsFloor()),
    chatContext: Effect.sync(() => self().chat),
    updateChatContext: (f) =>
      Effect.sync(() => {
        const actor = self()
        actor.chat = f(actor.chat)
      }),
    say: (text, options = {}) =>
      Effect.suspend(() => {
        const actor = self()
        return actor.holdsFloor()
          ? Effect.succeed(Speeches.enqueue(actor.speeches, "say", options, (speech) => Reply.say(actor, speech, text, options)))
          : Effect.fail(notHolder())
      }),
    generateReply: (options = {}) =>
      Effect.withFiber((fiber) => {
        const actor = self()
        if (!actor.holdsFloor()) return Effect.fail(notHolder())
        // A tool call in its batch may wait for this reply: it is said while the batch runs.
        const call = fiber.getRef(CurrentCall)
        const byTool = call !== undefined && call.actor === actor && call.foreground()
        return Effect.succeed(
          Speeches.enqueue(actor.speeches, "generate_reply", { ...options, byTool }, (speech) => Reply.reply(actor, speech, options))
        )
      }),
    runTask: (target, options) => Tasks.run(self(), target, options),
    completeTask: (result) => Tasks.complete(self(), result)
  }
}
