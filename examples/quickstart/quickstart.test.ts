import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { main } from "./main.ts"

describe("example: quickstart (the README's program)", () => {
  it.effect("greets, transfers the weather question, and the weather agent answers", () =>
    Effect.gen(function*() {
      const result = yield* main
      result.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
      result.expect.containsFunctionCall({ name: "lookup_weather", arguments: { city: "Paris" } })
      result.expect.containsMessage({ agent: "weather", content: "Sunny in Paris" })
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { instructions: "greet the user" }, reply: { text: "Hello! How can I help?" } },
      { when: { user: "weather", agent: "greeter" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
      // The weather agent sees the question (context "full") after the transfer output.
      { when: { toolOutput: "Transferred to weather", agent: "weather" }, reply: { toolCalls: [{ name: "lookup_weather", arguments: { city: "Paris" } }] } },
      { when: { toolOutput: "Sunny in", agent: "weather" }, reply: (r) => ({ text: r.last.kind === "tool" ? r.last.outputs[0]!.output : "" }) }
    ]))))
})
