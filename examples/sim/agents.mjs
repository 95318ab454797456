import { Effect, Schema } from "effect"
import { Agent, Tool } from "@baton-voice/baton"

const weather = Agent.make({
  name: "weather",
  instructions: "Answer weather questions.",
  tools: [
    Tool.make("lookup_weather", {
      description: "Weather for a city",
      parameters: Schema.Struct({ city: Schema.String, days: Schema.optional(Schema.Int) }),
      handler: ({ city }) => Effect.succeed(`Sunny in ${city}`)
    }),
    Tool.handoff("back_to_greeter", () => agent)
  ]
})
export const agent = Agent.make({
  name: "greeter",
  instructions: "Greet the caller; transfer weather questions.",
  tools: [Tool.handoff("transfer_to_weather", () => weather)],
  onEnter: Agent.say("Hello, how can I help?").pipe(Effect.asVoid)
})
// Every agent a session may run: `baton sim` hands off to each and scripts its model.
export const agents = [agent, weather]
