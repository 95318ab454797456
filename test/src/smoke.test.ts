import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Tool } from "../../src/index.ts"

const greeter: Agent.Agent = Agent.make({
  name: "greeter",
  instructions: "You greet.",
  tools: [Tool.handoff("transfer_to_weather", () => weather)],
  onEnter: Agent.reply({ instructions: "greet the user" }).pipe(Effect.asVoid)
})
const weather: Agent.Agent = Agent.make({
  name: "weather",
  instructions: "You do weather.",
  tools: [
    Tool.make("lookup_weather", {
      description: "weather",
      parameters: Schema.Struct({ city: Schema.String }),
      handler: ({ city }) => Effect.succeed(`sunny in ${city}`)
    }),
    Tool.handoff("transfer_to_greeter", () => greeter)
  ],
  onEnter: Agent.reply({ instructions: "introduce yourself" }).pipe(Effect.asVoid)
})

describe("smoke", () => {
  it.effect("greeter -> weather -> greeter", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: greeter })
      const r1 = yield* session.run("weather please")
      console.log(r1.toString())
      r1.expect.containsAgentHandoff({ to: "weather" })
      const r2 = yield* session.run("in Paris")
      console.log(r2.toString())
      const r3 = yield* session.run("thanks, back")
      console.log(r3.toString())
      r3.expect.containsAgentHandoff({ to: "greeter", resumed: true })
      assert.strictEqual((yield* session.currentAgent)?.name, "greeter")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { instructions: "greet" }, reply: { text: "Hello!" } },
      { when: { instructions: "introduce" }, reply: { text: ["I am ", "weather."] } },
      { when: { user: "weather please" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
      { when: { user: "Paris" }, reply: { toolCalls: [{ name: "lookup_weather", arguments: { city: "Paris" } }] } },
      { when: { toolOutput: "sunny" }, reply: { text: "It is sunny." } },
      { when: { user: "back" }, reply: { toolCalls: [{ name: "transfer_to_greeter" }] } }
    ]))))
})
