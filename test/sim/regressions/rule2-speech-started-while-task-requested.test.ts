/**
 * Found by the simulation (seed 865, shrunk).
 *
 * `AgentTask.run` waits for the caller's speeches to settle, then asks the session to lend the
 * floor (`StartTask`). Until the session handles that message the caller still holds the floor,
 * so a speech that reaches its mailbox in between (here the application's `generateReply`
 * arriving while `onEnter` starts a task) starts generating. The session then lends the floor
 * without ending it (`Lend` in Actor.ts only forwards held input; Floor.startTask does not wait
 * for the caller's speech): the caller's reply runs on after it passed the floor and ends, cut,
 * while the task holds it (rule 2). "What the caller was saying is said before the task takes
 * the floor" (Tasks.ts) does not hold for a speech that starts in that window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../../src/index.ts"
import { eventsOfAgentAfter, handoffSeq } from "../../helpers.ts"

const survey: AgentTask.AgentTask<string> = AgentTask.make<string>({
  name: "survey",
  instructions: "Ask one question.",
  tools: [Tool.make("answered", { description: "the user answered", handler: () => AgentTask.complete(survey, "ok") })],
  onEnter: Agent.reply({ instructions: "ask the question" }).pipe(Effect.asVoid)
})
const host: Agent.Agent = Agent.make({
  name: "host",
  instructions: "You host.",
  onEnter: AgentTask.run(survey).pipe(Effect.asVoid)
})

describe("rule 2: silence after handoff (simulation regression)", () => {
  it.effect("rule 2: a reply that starts while the caller's task request is in flight ends before the task takes the floor", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: host })
      // The application asks the host to greet right away, while onEnter starts the survey.
      yield* session.generateReply()
      yield* drive(session.idle)
      const events = yield* session.eventLog
      assert.strictEqual((yield* session.currentAgent)?.name, "survey")
      assert.deepStrictEqual(eventsOfAgentAfter(events, "host", handoffSeq(events, "survey")), [])
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { instructions: "ask the question" }, reply: { text: "Question?" } },
      { when: { agent: "host" }, reply: { text: "Welcome!", delay: "500 millis" } }
    ]))))
})
