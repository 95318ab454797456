/**
 * Found by the simulation (seed 381752, shrunk; fails at e1363a9).
 *
 * A model asks for the same AgentTask twice in one response (two parallel tool calls). The
 * tasks run one after the other: when the first completes, the floor returns to the caller
 * and the second task starts at once, on the same step. The second task's onEnter waited only
 * for its predecessor's onExit, and its predecessor was the caller, which runs no hook when it
 * lends the floor; the first task's onExit was still waiting for its onEnter to end, so the task agent's hooks ran as
 * enter, enter, exit, exit. Every activation now waits for every onExit still running.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../../src/index.ts"

describe("rule 5: hooks exactly once (simulation regression)", () => {
  it.effect("rule 5: a task's onExit runs before the onEnter of the next task its caller starts", () => {
    const log: Array<string> = []
    const note = (line: string) => Effect.sync(() => void log.push(line))
    let runs = 0
    const check: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "check",
      instructions: "You are check.",
      // The onEnter is still busy when a tool completes the task: its onExit waits for it in
      // the task's hook lane.
      onEnter: note("enter").pipe(Effect.andThen(Agent.reply()), Effect.andThen(Effect.sleep("1 second"))),
      onExit: note("exit"),
      tools: [
        Tool.make("done", {
          description: "the check is done",
          handler: () => Effect.sleep("100 millis").pipe(Effect.andThen(AgentTask.complete(check, `check ${++runs}`)))
        })
      ]
    })
    const ask = (name: string) =>
      Tool.make(name, { description: "run the check", handler: () => AgentTask.run(check).pipe(Effect.orDie) })
    const desk = Agent.make({ name: "desk", instructions: "You are desk.", tools: [ask("check_a"), ask("check_b")] })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: desk })
      yield* drive(session.run("check twice"))
      assert.deepStrictEqual(log, ["enter", "exit", "enter", "exit"])
      assert.strictEqual((yield* session.currentAgent)?.name, "desk")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "check twice", agent: "desk" }, reply: { toolCalls: [{ name: "check_a" }, { name: "check_b" }] } },
      { when: { agent: "check" }, reply: { toolCalls: [{ name: "done" }] } },
      { when: { agent: "desk" }, reply: { text: "Both checks are done." } }
    ])))
  })
})
