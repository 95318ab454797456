import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession } from "@baton-voice/baton"
import { assertEveryCallAnswered, assertOneFloor } from "../../test/helpers.ts"
import { greeter } from "./agents.ts"
import { turns } from "./main.ts"
import { rules } from "./script.ts"

describe("example: greeter and weather (seed 001 pair)", () => {
  it.effect("seed 001: back and forth, each agent resumed, no reply from whoever passed the floor", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: greeter })
      const results = []
      for (const turn of turns) results.push(yield* session.run(turn))
      results[0]!.expect.containsAgentHandoff({ from: "greeter", to: "weather", resumed: false })
      results[1]!.expect.containsFunctionCall({ name: "lookup_weather", arguments: { city: "Paris" } })
      results[1]!.expect.containsMessage({ agent: "weather", content: "sunny" })
      results[2]!.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
      results[3]!.expect.containsAgentHandoff({ from: "greeter", to: "weather", resumed: true })
      // Resumed: no second introduction.
      results[3]!.expect.lacks("a second introduction", (e) => e.type === "message" && e.content.includes("Sunny here"))
      // ... but its onResume says it is back.
      results[3]!.expect.containsMessage({ agent: "weather", content: "Welcome back" })
      results[4]!.expect.containsFunctionCall({ name: "lookup_weather", arguments: { city: "Oslo" } })
      results[5]!.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
      // Every handoff turn ends the outgoing agent's reply: it is never asked to go on after its
      // own transfer (the incoming agent does answer it).
      for (const request of model.requests) {
        const own = request.agent === "greeter" ? "transfer_to_weather" : "transfer_to_greeter"
        assert.isFalse(request.last.kind === "tool" && request.last.outputs.some((o) => o.name === own))
      }
      // The greeter, back without an onResume hook, continues the turn itself.
      results[2]!.expect.containsMessage({ agent: "greeter", content: "Anything else?" })
      assertEveryCallAnswered(yield* session.history)
      assertOneFloor(yield* session.eventLog)
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))
})
