/**
 * Found by the simulation on d61b691 (seed 1423, shrunk; also 3221, 4143, 5064, 6153, 9061).
 *
 * Hooks of an actor now run one after the other in a lane (Actor.ts `runHook`), and the next
 * holder's onEnter waits for the previous holder's onExit (Floor.ts `handoff`, `exited`). An
 * onEnter that starts an AgentTask (a TaskGroup here) after its agent lost the floor waits for
 * the floor to come back (its task request is pending in the session), so it never ends: the
 * agent's onExit waits behind it in the lane, holding a work token, and the new holder's onEnter
 * waits for that onExit. `session.idle` and `run` never resolve (rule 10) and the new holder's
 * onEnter never runs (rule 5).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../../src/index.ts"

describe("rule 10: quiescent runs (simulation regression)", () => {
  it.effect("rule 10: an onEnter waiting to start a task after its agent lost the floor blocks neither the session nor the next agent", () => {
    const log: Array<string> = []
    const survey: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "survey",
      instructions: "Ask one question.",
      tools: [Tool.make("answered", { description: "answered", handler: () => AgentTask.complete(survey, "ok") })]
    })
    const host: Agent.Agent = Agent.make({
      name: "host",
      instructions: "Host.",
      onEnter: Effect.sleep("200 millis").pipe(Effect.andThen(AgentTask.run(survey)), Effect.asVoid),
      onExit: Effect.sync(() => void log.push("host.exit"))
    })
    const b: Agent.Agent = Agent.make({ name: "b", instructions: "B", onEnter: Effect.sync(() => void log.push("b.enter")) })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: host })
      // The application hands the call to B before host's onEnter starts the survey.
      assert.strictEqual((yield* session.handoff(b))._tag, "Applied")
      yield* drive(session.idle, { limit: "1 minute" })
      assert.strictEqual((yield* session.currentAgent)?.name, "b")
      assert.include(log, "b.enter")
    }).pipe(Effect.provide(ScriptedModel.layer([])))
  })
})
