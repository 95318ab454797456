/**
 * Found by the simulation (seed 14, also 322, 651, 1223, 1538).
 *
 * A speech queued on an actor whose current reply is in its tool phase (here `session.say`
 * while a tool runs) keeps its work token when a tool of that reply awaits an AgentTask: the
 * caller lends the floor to the task (`Lend` only forwards held input), the queued speech can
 * not start (its actor no longer holds the floor) and nothing hands its token over, so the
 * session never looks quiescent while the task waits for the user: `session.idle` and every
 * later `session.run` hang (rule 10), although nothing can happen until the user speaks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive, until } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../../src/index.ts"

const confirm: AgentTask.AgentTask<string> = AgentTask.make<string>({
  name: "confirm",
  instructions: "Ask the caller to confirm.",
  tools: [Tool.make("confirmed", { description: "the caller confirmed", handler: () => AgentTask.complete(confirm, "yes") })],
  onEnter: Agent.reply({ instructions: "ask to confirm" }).pipe(Effect.asVoid)
})

let started = 0
const booker: Agent.Agent = Agent.make({
  name: "booker",
  instructions: "You book tables.",
  tools: [
    Tool.make("book", {
      description: "book a table after the caller confirms",
      handler: () =>
        Effect.sync(() => void started++).pipe(
          Effect.andThen(Effect.sleep("1 second")),
          Effect.andThen(AgentTask.run(confirm)),
          Effect.map((answer) => `booked: ${answer}`)
        )
    })
  ]
})

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "book a table" }, reply: { toolCalls: [{ name: "book" }] } },
  { when: { instructions: "ask to confirm" }, reply: { text: "Shall I book it?" } },
  { when: { user: "yes", agent: "confirm" }, reply: { toolCalls: [{ name: "confirmed" }] } },
  { when: { toolOutput: "booked" }, reply: { text: "Booked." } }
]

describe("rule 10: quiescent runs (simulation regression)", () => {
  it.effect("rule 10: a speech queued while a tool awaits a task does not keep the session busy", () =>
    Effect.gen(function*() {
      started = 0
      const session = yield* AgentSession.start({ agent: booker })
      yield* session.send("book a table")
      yield* until(() => started > 0)
      // The application queues a line while the tool runs.
      yield* session.say("One moment please.")
      // The task asks the user and waits: the session is quiescent until the user answers.
      yield* drive(session.idle, { limit: "1 minute" })
      assert.strictEqual((yield* session.currentAgent)?.name, "confirm")
      const result = yield* drive(session.run("yes"), { limit: "1 minute" })
      result.expect.containsAgentHandoff({ from: "confirm", to: "booker", kind: "return" })
      result.expect.containsMessage({ agent: "booker", content: "Booked." })
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))
})
