/**
 * Found by the simulation on 82557cf once the scenarios got session tools (seeds 14, 1298,
 * 2059, 3602, 4386, 6705 ..., shrunk).
 *
 * A session tool's background call "reports to whoever holds the floor". Its reports wait until
 * the call's own output is in history (82557cf); meanwhile the holder moves them from the
 * session's queue into its own `pending` (Actor.ts `deliverPending`), where they stay:
 * - when the floor moves on before they can be told, the new holder never gets them (the result
 *   is not recorded while the session is quiescent);
 * - at close, the task actor holding the floor (closed first, innermost first) flushes them, and
 *   `Background.flush` drops a report whose call is not answered yet; the caller's batch, cut
 *   right after, then records the call's own output: the finished result is lost (rule 9: the
 *   result is kept in history).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Handoff, Tool } from "../../../src/index.ts"
import type { ChatContext } from "../../../src/ChatContext.ts"

const job = Tool.make("job", {
  description: "a job that belongs to the session",
  handler: (_, { progress }) => progress("job started").pipe(Effect.andThen(Effect.sleep("50 millis")), Effect.as("job finished"))
})

const results = (history: ChatContext) =>
  history.items.filter((i) => i._tag === "FunctionCallOutput" && i.name === "job" && i.callId.endsWith(":result"))

describe("rule 9: deferred handoffs (simulation regression)", () => {
  it.effect("rule 9: a session tool's result is kept when the session closes while its caller's batch waits for a task", () => {
    const confirm: AgentTask.AgentTask<string> = AgentTask.make<string>({ name: "confirm", instructions: "Confirm." })
    const a: Agent.Agent = Agent.make({
      name: "a",
      instructions: "A",
      tools: [Tool.make("ask", { description: "ask to confirm", handler: () => AgentTask.run(confirm) })]
    })
    const transferLater = Tool.make("job", {
      description: "check, then transfer back to A",
      handler: (_, { progress }) => progress("job started").pipe(Effect.andThen(Effect.sleep("60 millis")), Effect.as(Handoff.to(a)))
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a, tools: [transferLater] })
      // The job finishes while the confirmation task holds the floor; then the session closes.
      yield* drive(session.run("go").pipe(Effect.andThen(Effect.sleep("20 seconds")), Effect.andThen(session.close)))
      const history = yield* session.history
      assert.isTrue(history.items.some((i) => i._tag === "FunctionCallOutput" && i.name === "job" && i.status === "progress"))
      assert.strictEqual(results(history).length, 1)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "go", agent: "a" }, reply: { toolCalls: [{ name: "ask" }, { name: "job" }] } },
      { when: { agent: "confirm" }, reply: {} }
    ])))
  })

  it.effect("rule 9: a session tool's result reaches the holder after the floor moved on", () => {
    const c: Agent.Agent = Agent.make({ name: "c", instructions: "C" })
    const b: Agent.Agent = Agent.make({
      name: "b",
      instructions: "B",
      onEnter: Effect.void,
      tools: [
        Tool.make("slow_check", { description: "slow", handler: () => Effect.sleep("3 seconds").pipe(Effect.as("checked")) }),
        Tool.handoff("to_c", () => c)
      ]
    })
    const a: Agent.Agent = Agent.make({
      name: "a",
      instructions: "A",
      tools: [Tool.make("slow_lookup", { description: "slow", handler: () => Effect.sleep("2 seconds").pipe(Effect.as("looked up")) })]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a, tools: [job] })
      yield* session.send("go")
      // A's batch (so the job's own output) waits for the slow lookup: the job's result waits too.
      // The floor goes to B (idle, then busy with its own slow check), which passes it to C.
      yield* drive(Effect.sleep("500 millis"))
      yield* session.handoff(b)
      yield* drive(Effect.sleep("500 millis"))
      yield* session.send("hello")
      yield* drive(session.idleWithBackground)
      yield* drive(Effect.sleep("5 seconds"))
      assert.strictEqual((yield* session.currentAgent)?.name, "c")
      assert.strictEqual(results(yield* session.history).length, 1)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "go", agent: "a" }, reply: { toolCalls: [{ name: "slow_lookup" }, { name: "job" }] } },
      { when: { user: "hello", agent: "b" }, reply: { toolCalls: [{ name: "slow_check" }] } },
      { when: { toolOutput: "checked", agent: "b" }, reply: { toolCalls: [{ name: "to_c" }] } },
      { when: { agent: "c" }, reply: { text: "C here." } }
    ])))
  })
})
