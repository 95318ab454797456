/**
 * Found by the simulation (seeds 13, 120, 210 ... and 642, 1236, 4020, shrunk).
 *
 * A long-running tool's handoff result that cannot apply (its agent no longer holds the floor)
 * is recorded at once: `Background.deliver`'s refusal branch takes only that delivery out of
 * `pending`. Reports the same call made before (progress told only once the agent holds the
 * floor again) stay queued and enter history after the result; and when the call's own batch
 * has not concluded yet (a sibling tool awaits an AgentTask), the result enters history before
 * the call's own output. "Everything reported so far is recorded first; the handoff is last"
 * holds only on the branch where the handoff applies. At close (seed 6851) a paused agent's
 * cancelled result reaches it (`rejectLate` flushes it at once) before the finalizer flushes the
 * progress still queued, with the same effect.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Handoff, Tool } from "../../../src/index.ts"
import type { ChatContext } from "../../../src/ChatContext.ts"

const c: Agent.Agent = Agent.make({ name: "c", instructions: "C" })
const checkThenTransfer = Tool.make("check_then_transfer", {
  description: "check for a while, then transfer to C",
  handler: (_, { progress }) =>
    progress("checking, please hold on").pipe(
      Effect.andThen(Effect.sleep("1 second")),
      Effect.andThen(progress("half way")),
      Effect.andThen(Effect.sleep("1 second")),
      Effect.as(Handoff.to(c))
    )
})

/** Where the call's own output, its "half way" report and its result are in history. */
const positions = (history: ChatContext) => {
  const call = history.items.find((i) => i._tag === "FunctionCall" && i.name === "check_then_transfer")!
  const callId = call._tag === "FunctionCall" ? call.callId : ""
  const at = (pred: (i: ChatContext["items"][number]) => boolean) => history.items.findIndex(pred)
  return {
    own: at((i) => i._tag === "FunctionCallOutput" && i.callId === callId),
    halfWay: at((i) => i._tag === "FunctionCallOutput" && i.callId.startsWith(`${callId}:progress`) && i.output === "half way"),
    result: at((i) => i._tag === "FunctionCallOutput" && i.callId === `${callId}:result`)
  }
}

describe("rule 9: deferred handoffs (simulation regression)", () => {
  it.effect("rule 9: a handoff result that cannot apply is recorded after the call's earlier progress", () => {
    const b: Agent.Agent = Agent.make({ name: "b", instructions: "B" })
    const a: Agent.Agent = Agent.make({ name: "a", instructions: "A", tools: [Tool.handoff("to_b", () => b), checkThenTransfer] })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      // A starts the check and hands the conversation to B in the same response.
      yield* drive(session.run("go", { waitForBackground: true }))
      yield* session.close
      const { own, halfWay, result } = positions(yield* session.history)
      assert.isTrue(own >= 0 && halfWay >= 0 && result >= 0, JSON.stringify({ own, halfWay, result }))
      assert.isBelow(halfWay, result, "the 'half way' report entered history after the result")
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { user: "go" }, reply: { toolCalls: [{ name: "to_b" }, { name: "check_then_transfer" }] } }])))
  })

  it.effect("rule 9: a background result does not enter history before its call's own output", () => {
    const confirm: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "confirm",
      instructions: "Confirm.",
      tools: [Tool.make("confirmed", { description: "confirmed", handler: () => AgentTask.complete(confirm, "yes") })]
    })
    const a: Agent.Agent = Agent.make({
      name: "a",
      instructions: "A",
      tools: [Tool.make("ask_confirmation", { description: "ask", handler: () => AgentTask.run(confirm) }), checkThenTransfer]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      // The confirmation task takes the floor; the check finishes meanwhile (A does not hold it).
      yield* drive(session.run("go", { waitForBackground: true }))
      yield* drive(session.run("yes"))
      const { own, result } = positions(yield* session.history)
      assert.isTrue(own >= 0 && result >= 0, JSON.stringify({ own, result }))
      assert.isBelow(own, result, "the result entered history before the call's own output")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "go" }, reply: { toolCalls: [{ name: "ask_confirmation" }, { name: "check_then_transfer" }] } },
      { when: { user: "yes", agent: "confirm" }, reply: { toolCalls: [{ name: "confirmed" }] } },
      { when: { agent: "a" }, reply: { text: "Done." } }
    ])))
  })

  it.effect("rule 9: at close, a paused agent's queued progress enters history before the cancelled result", () => {
    const b: Agent.Agent = Agent.make({ name: "b", instructions: "B" })
    const job = Tool.make("long_job", {
      description: "a long job",
      handler: (_, { progress }) =>
        progress("started").pipe(
          Effect.andThen(Effect.sleep("1 second")),
          Effect.andThen(progress("half way")),
          Effect.andThen(Effect.sleep("1 minute")),
          Effect.as("done")
        )
    })
    const a: Agent.Agent = Agent.make({ name: "a", instructions: "A", tools: [Tool.handoff("to_b", () => b), job] })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("go"))
      // "half way" is reported while A is paused: it waits for A to hold the floor again.
      yield* drive(Effect.sleep("2 seconds"))
      yield* session.close
      const history = (yield* session.history).items
      const halfWay = history.findIndex((i) => i._tag === "FunctionCallOutput" && i.output === "half way")
      const result = history.findIndex((i) => i._tag === "FunctionCallOutput" && i.name === "long_job" && i.callId.endsWith(":result"))
      assert.isTrue(halfWay >= 0 && result >= 0, JSON.stringify({ halfWay, result }))
      assert.isBelow(halfWay, result, "the 'half way' report entered history after the result")
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { user: "go" }, reply: { toolCalls: [{ name: "to_b" }, { name: "long_job" }] } }])))
  })
})
