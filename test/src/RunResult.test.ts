import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, RunResult, Tool } from "../../src/index.ts"

const b = Agent.make({ name: "b", instructions: "B" })
const a = Agent.make({
  name: "a",
  instructions: "A",
  tools: [Tool.make("lookup", { description: "", handler: () => Effect.succeed("42") }), Tool.handoff("to_b", () => b)]
})
const layer = ScriptedModel.layer([
  { when: { user: "go" }, reply: { text: "Looking.", toolCalls: [{ name: "lookup", arguments: { q: "life" } }, { name: "to_b" }] } }
])

describe("RunResult", () => {
  it.effect("walks events with a cursor and matches partially", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      const result = yield* session.run("go")
      result.expect.nextEvent().isMessage({ role: "user", content: "go" })
      result.expect.nextEvent().isMessage({ role: "assistant", content: /Look/ })
      result.expect.nextEvent().isFunctionCall({ name: "lookup", arguments: { q: "life" } })
      result.expect.skipNext(1)
      result.expect.nextEvent().isFunctionCallOutput({ output: "42", isError: false })
      result.expect.nextEvent().isFunctionCallOutput({ name: "to_b", status: "handoff" })
      result.expect.nextEvent().isAgentHandoff({ from: "a", to: "b" })
      result.expect.noMoreEvents()
      assert.strictEqual(result.expect.at(-1).isAgentHandoff().to, "b")
    }).pipe(Effect.provide(layer)))

  it.effect("failures list the run's events readably, marking where it stopped", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      const result = yield* session.run("go")
      result.expect.skipNext(2)
      const error = (() => {
        try {
          result.expect.nextEvent().isFunctionCall({ name: "other" })
          return undefined
        } catch (e) {
          return e
        }
      })()
      assert.instanceOf(error, RunResult.ExpectationError)
      const text = (error as Error).message
      assert.include(text, "Expected event 2 to be a function call {\"name\":\"other\"}")
      assert.include(text, ">  2  function_call    a: lookup({\"q\":\"life\"})")
      assert.include(text, "agent_handoff    a -> b (handoff)")
      assert.throws(() => result.expect.containsAgentHandoff({ to: "c" }), /Expected the run to contain an agent handoff/)
      assert.throws(() => result.expect.noMoreEvents(), /Expected no more events/)
    }).pipe(Effect.provide(layer)))
})
