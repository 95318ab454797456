import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "@baton-voice/baton/testing"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession } from "@baton-voice/baton"
import { assertEveryCallAnswered, assertOneFloor, eventsOfAgentAfter, handoffSeq } from "../../test/helpers.ts"
import { concierge } from "./agents.ts"
import { rules } from "./script.ts"

describe("example: long-running search then handoff (seed 003)", () => {
  it.effect("seed 003: progress is told, the work goes on, and the handoff happens when it finishes", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: concierge })
      // The run resolves once the agent said "please hold on": the search runs in the background.
      const first = yield* drive(session.run("Find me a flight to Lisbon"))
      first.expect.nextEvent().isMessage({ role: "user" })
      first.expect.nextEvent().isFunctionCall({ name: "search_flights", arguments: { destination: "Lisbon" } })
      first.expect.nextEvent().isFunctionCallOutput({ status: "progress", output: "about a minute" })
      first.expect.nextEvent().isMessage({ role: "assistant", content: "Please hold on" })
      first.expect.noMoreEvents()
      assert.strictEqual((yield* session.currentAgent)?.name, "concierge")

      yield* drive(session.idleWithBackground)
      const history = yield* session.history
      const events = yield* session.eventLog
      const deferred = events.filter((e) => e.type === "function_tools_executed" && e.deferred)
      assert.strictEqual(deferred.length, 2)
      const last = deferred[1]!
      assert.isTrue(last.type === "function_tools_executed" && last.hasHandoff && last.handoffTo === "booking")
      assert.strictEqual((yield* session.currentAgent)?.name, "booking")
      // The second progress report was told, then the handoff; the concierge made no model call after.
      assert.deepStrictEqual(model.requestsFor("concierge").map((r) => r.last.kind), ["user", "tool", "tool"])
      assert.deepStrictEqual(eventsOfAgentAfter(events, "concierge", handoffSeq(events, "booking")), [])
      const statuses = history.items.flatMap((i) => (i._tag === "FunctionCallOutput" ? [i.status] : []))
      assert.deepStrictEqual(statuses, ["progress", "progress", "handoff"])
      assert.isTrue(history.items.some((i) => i._tag === "Message" && i.agent === "booking" && i.text.includes("three flights")))
      assertEveryCallAnswered(history)
      assertOneFloor(events)
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("seed 003: run() can wait for the background work and its cascade", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: concierge })
      const result = yield* drive(session.run("Find me a flight to Lisbon", { waitForBackground: true }))
      result.expect.containsFunctionCallOutput({ status: "handoff", output: "3 flights to Lisbon found" })
      result.expect.containsAgentHandoff({ from: "concierge", to: "booking" })
      result.expect.containsMessage({ agent: "booking", content: "three flights" })
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))
})
