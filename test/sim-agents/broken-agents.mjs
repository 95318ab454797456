// An agents module that breaks a rule on purpose: the weather agent's onEnter never returns, so
// a run that reaches it never becomes quiescent (rule 10). `baton sim --agents` must find it,
// shrink it and print a test that fails.
import { Effect, Schema } from "effect"
import { Agent, Tool } from "@baton-voice/baton"

const weather = Agent.make({
  name: "weather",
  instructions: "Answer weather questions.",
  tools: [Tool.make("lookup_weather", {
    description: "Weather for a city",
    parameters: Schema.Struct({ city: Schema.String }),
    handler: ({ city }) => Effect.succeed(`Sunny in ${city}`)
  })],
  onEnter: Effect.never
})
export const agent = Agent.make({
  name: "greeter",
  instructions: "Greet the caller; transfer weather questions.",
  tools: [Tool.handoff("transfer_to_weather", () => weather)]
})
export const agents = [agent, weather]
