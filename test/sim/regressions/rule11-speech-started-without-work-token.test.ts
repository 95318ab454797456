/**
 * Found by the simulation on 82557cf (seed 4671, shrunk).
 *
 * A queued speech holds a work token only while its actor holds the floor (Speeches.ts
 * `reconcile`, since a85a102). Here the application's `generateReply` is queued while the
 * agent's onEnter lends the floor to a TaskGroup; when the floor comes back, the actor's loop
 * starts the speech (`startNext`) before `reconcile` gives it its token back, so the reply runs
 * without a token: the session looks quiescent while it runs (rule 10), and the batch it makes
 * hands over (releases) a token it never held, so the token count goes negative (Work.ts counts a
 * token error, rule 11).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, TaskGroup, Tool } from "../../../src/index.ts"
import * as Diagnostics from "../../../src/Diagnostics.ts"

const step: AgentTask.AgentTask<string> = AgentTask.make<string>({
  name: "step",
  instructions: "One step.",
  tools: [Tool.make("done", { description: "the step is done", handler: () => AgentTask.complete(step, "ok") })]
})
const group = TaskGroup.make({ name: "steps", tasks: [{ id: "step", description: "the only step", task: step }] })
const host: Agent.Agent = Agent.make({
  name: "host",
  instructions: "Host.",
  tools: [Tool.make("lookup", { description: "look up", handler: () => Effect.succeed("found") })],
  onEnter: AgentTask.run(group).pipe(Effect.andThen(Agent.reply({ instructions: "sum up" })), Effect.asVoid)
})

describe("rule 11: nothing leaks (simulation regression)", () => {
  it.effect("rule 11: a reply queued while the floor was lent keeps its work token when it starts", () =>
    Effect.gen(function*() {
      const before = Diagnostics.snapshot().tokenErrors
      const session = yield* AgentSession.start({ agent: host })
      // At once: the application asks for a reply and the user answers the step.
      yield* Effect.forkChild(session.generateReply(), { startImmediately: true })
      const run = yield* Effect.forkChild(session.run("yes"), { startImmediately: true })
      yield* drive(Fiber.join(run))
      yield* drive(session.idle)
      yield* session.close
      assert.strictEqual(Diagnostics.snapshot().tokenErrors - before, 0)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "yes", agent: "step" }, reply: { toolCalls: [{ name: "done" }] } },
      { when: { agent: "host", toolOutput: "found" }, reply: {} },
      { when: { agent: "host" }, reply: { toolCalls: [{ name: "lookup" }] } }
    ]))))
})
