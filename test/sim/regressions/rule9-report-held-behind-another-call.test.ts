/**
 * Found by the simulation (seed 105851, shrunk).
 *
 * An agent's reports waited in one queue, and a report could go only when every report before it
 * could: "nothing of a call is told before the call's own output is in history". A second
 * long-running call, in a batch that waits for a task, has no output yet; its progress report
 * then held back every later report of every other call. Here the first call's result (a handoff)
 * came while the agent had lent the floor to the task: it should have been recorded at once as
 * not transferred, but it waited until the task ended (rule 9: results recorded once quiescent).
 * Each call's reports now keep their own order, and wait only for their own call.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Handoff, Tool } from "../../../src/index.ts"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 9: deferred handoffs (simulation regression)", () => {
  it.effect("rule 9: a call's result is not held back by the reports of a call whose output waits for a task", () => {
    const c = Agent.make({ name: "c", instructions: "C" })
    const confirm = AgentTask.make<string>({ name: "confirm", instructions: "Confirm." })
    const a = Agent.make({
      name: "a",
      instructions: "A",
      tools: [
        Tool.make("transfer_later", {
          description: "check, then transfer to C",
          handler: (_, { progress }) => progress("checking").pipe(Effect.andThen(Effect.sleep("2 seconds")), Effect.as(Handoff.to(c)))
        }),
        Tool.make("ask", { description: "confirm with the user", handler: () => AgentTask.run(confirm) }),
        Tool.make("watch", {
          description: "watch for a while",
          handler: (_, { progress }) =>
            progress("watching").pipe(
              Effect.andThen(Effect.sleep("100 millis")),
              Effect.andThen(progress("still watching")),
              Effect.andThen(Effect.never)
            )
        })
      ]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* session.run("check")
      // The batch [ask, watch] waits for the task, so `watch` has no output in history yet; its
      // "still watching" report (at 100 ms) waits, and `transfer_later` finishes at 2 s.
      yield* session.run("confirm it")
      yield* drive(Effect.sleep("5 seconds"))
      assert.strictEqual((yield* session.currentAgent)?.name, "confirm")
      const history = yield* session.history
      const result = history.items.find((i) => i._tag === "FunctionCallOutput" && i.name === "transfer_later" && i.callId.endsWith(":result"))
      assert.include(result?._tag === "FunctionCallOutput" ? result.output : "", "Not transferred to c")
      const events = yield* session.eventLog
      assert.isTrue(events.some((e) => e.type === "handoff_not_applied" && e.agent === "a" && e.to === "c"))
      // The held-back call's report is still waiting for its call's output.
      assert.isFalse(history.items.some((i) => i._tag === "FunctionCallOutput" && i.name === "watch" && i.callId.includes(":progress")))
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "check", agent: "a" }, reply: { toolCalls: [{ name: "transfer_later" }] } },
      { when: { user: "confirm it", agent: "a" }, reply: { toolCalls: [{ name: "ask" }, { name: "watch" }] } },
      { when: { agent: "a" }, reply: { text: "One moment." } },
      { when: { agent: "confirm" }, reply: { text: "Shall I confirm?" } }
    ])))
  })

  it.effect("rule 9: seed 105851 records a deferred handoff's result once quiescent", () =>
    Effect.gen(function*() {
      const result = yield* simulate(105851, { exclude: DEFAULT_EXCLUDE, programUses: false })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
    }), 60_000)
})
