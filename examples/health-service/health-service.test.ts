import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession } from "@baton-voice/baton"
import { assertEveryCallAnswered } from "../../test/helpers.ts"
import { frontDesk } from "./agents.ts"
import { turns } from "./main.ts"
import { rules } from "./script.ts"

describe("example: health service (seed 004)", () => {
  it.effect("seed 004: three turns, every handoff of each cascade in its run result", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: frontDesk })

      const first = yield* session.run(turns[0]!)
      first.expect.nextEvent().isMessage({ role: "user", agent: "verify_intent" })
      first.expect.nextEvent().isFunctionCall({ name: "confirm_intent", arguments: { intent: "schedule" } })
      first.expect.nextEvent().isFunctionCallOutput({ name: "confirm_intent" })
      first.expect.nextEvent().isAgentHandoff({ from: "verify_intent", to: "intake", kind: "return" })
      first.expect.nextEvent().isAgentHandoff({ from: "intake", to: "identify_patient", kind: "task" })
      first.expect.nextEvent().isMessage({ role: "assistant", agent: "identify_patient", content: "date of birth" })
      first.expect.noMoreEvents()
      // Start-up (front desk -> intake -> verify_intent and its greeting) is not in the first result.
      assert.isFalse(first.events.some((e) => e.type === "message" && e.content.includes("How can I help")))

      const second = yield* session.run(turns[1]!)
      second.expect.containsFunctionCall({ name: "record_patient", arguments: { name: "Jane Doe", date_of_birth: "1990-04-02" } })
      second.expect.containsAgentHandoff({ from: "identify_patient", to: "intake" })
      second.expect.containsAgentHandoff({ from: "intake", to: "schedule_visit" })
      second.expect.containsMessage({ role: "assistant", agent: "schedule_visit" })

      const third = yield* session.run(turns[2]!)
      third.expect.skipNext(1)
      third.expect.nextEvent().isFunctionCall({ name: "book_visit", arguments: { day: "Tuesday", time: "10am" } })
      third.expect.nextEvent().isFunctionCallOutput({ name: "book_visit" })
      third.expect.nextEvent().isAgentHandoff({ from: "schedule_visit", to: "intake", kind: "return" })
      third.expect.nextEvent().isAgentHandoff({ from: "intake", to: "front_desk", kind: "return" })
      third.expect.nextEvent().isMessage({ role: "assistant", agent: "front_desk", content: "Jane Doe on Tuesday at 10am" })
      third.expect.noMoreEvents()

      assert.strictEqual((yield* session.currentAgent)?.name, "front_desk")
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("seed 004: a bad date of birth is an answer the task's model acts on", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: frontDesk })
      yield* session.run(turns[0]!)
      const result = yield* session.run("Jane Doe, born in April")
      result.expect.containsFunctionCallOutput({ name: "record_patient", isError: true, output: "Invalid arguments" })
      result.expect.containsMessage({ role: "assistant", agent: "identify_patient", content: "year, month and day" })
      assert.strictEqual((yield* session.currentAgent)?.name, "identify_patient")
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))
})
