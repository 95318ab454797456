import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { main } from "./main.ts"
import { rules } from "./script.ts"

describe("example: quickstart (the README's program)", () => {
  it.effect("greets, transfers the weather question, and the weather agent answers", () =>
    Effect.gen(function*() {
      const result = yield* main
      result.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
      result.expect.containsFunctionCall({ name: "lookup_weather", arguments: { city: "Paris" } })
      result.expect.containsMessage({ agent: "weather", content: "Sunny in Paris" })
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))
})
