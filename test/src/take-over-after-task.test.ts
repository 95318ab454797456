/**
 * `session.takeOver(human, { afterTask: true })` (issue 35, an operator accepting a transfer):
 * the task holding the floor is not cancelled; when it returns, the human takes the floor in
 * that same step, so the task's result reaches the agent's tool (rule 4) but the agent's model
 * is never asked to reply to it (rule 2), and a hand back gives the agent the floor again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { drive, until } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Human, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

const script = ScriptedModel.layer([
  { when: { user: "a person please" }, reply: { toolCalls: [{ name: "ring" }] } },
  { when: { toolOutput: "answered" }, reply: { text: "You are through now, goodbye." } },
  { when: { user: "thanks" }, reply: { text: "Desk again." } }
])

const setup = Effect.gen(function*() {
  const answered = yield* Deferred.make<void>()
  // A task that holds the floor until its outcome is known (as a transfer does).
  const ring: AgentTask.AgentTask<string> = AgentTask.make<string>({
    name: "ring",
    instructions: "Say nothing.",
    context: "none",
    onEnter: Effect.suspend(() => Effect.andThen(Deferred.await(answered), AgentTask.complete(ring, "answered by ada")))
  })
  const agent = Agent.make({
    name: "desk",
    instructions: "You are the front desk.",
    tools: [Tool.make("ring", { description: "rings a person", handler: () => AgentTask.run(ring) })]
  })
  return { answered, agent }
})

describe("take over after a task returns", () => {
  it.effect("the human takes the floor in the step the task returns: its result answers the tool, the agent never replies", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const { agent, answered } = yield* setup
      const ada = yield* Human.make({ name: "ada" })
      const session = yield* AgentSession.start({ agent })
      yield* Effect.forkChild(session.run("a person please"))
      yield* until(() => model.requestsFor("desk").length === 1)
      yield* drive(Effect.gen(function*() {
        while ((yield* session.currentAgent)?.name !== "ring") yield* Effect.yieldNow
      }))
      const taken = yield* Effect.forkChild(session.takeOver(ada, { afterTask: true }), { startImmediately: true })
      yield* Effect.yieldNow
      // Not applied yet, and the task not cancelled: it still holds the floor.
      assert.strictEqual((yield* session.currentAgent)?.name, "ring")
      yield* Deferred.succeed(answered, undefined)
      assert.deepStrictEqual(yield* drive(Fiber.join(taken)), { _tag: "Applied", to: "ada" })
      yield* drive(session.idle)
      const history = yield* session.history
      assertEveryCallAnswered(history)
      const output = history.items.find((i) => i._tag === "FunctionCallOutput" && i.name === "ring")
      assert.isTrue(output?._tag === "FunctionCallOutput" && !output.isError && JSON.stringify(output.output).includes("answered by ada"))
      // The tool's output never prompted the desk's model: no reply to it, nothing said.
      assert.strictEqual(model.requestsFor("desk").length, 1)
      assert.isFalse(history.items.some((i) => i._tag === "Message" && i.role === "assistant" && i.agent === "desk"))
      const moves = (yield* session.eventLog).flatMap((e) => e.type === "agent_handoff" ? [`${e.kind}:${e.from}>${e.to}`] : [])
      assert.deepStrictEqual(moves.slice(-2), ["return:ring>desk", "take_over:desk>ada"])
      // Handed back, the desk speaks again.
      assert.strictEqual((yield* session.handBack(agent, { reply: false }))._tag, "Applied")
      yield* drive(session.run("thanks"))
      assert.strictEqual(model.requestsFor("desk").length, 2)
    }).pipe(Effect.provide(script)))
})
