import { Effect, Schema } from "effect"
import { Agent, Tool } from "@baton-voice/baton"

const lookupWeather = Tool.make("lookup_weather", {
  description: "Weather for a city",
  parameters: Schema.Struct({ city: Schema.String }),
  handler: ({ city }) => Effect.succeed(`Sunny in ${city}, 21°C`)
})

export const greeter: Agent.Agent = Agent.make({
  name: "greeter",
  instructions: "Greet the caller; transfer weather questions.",
  tools: [Tool.handoff("transfer_to_weather", () => weather, { context: "full" })],
  onEnter: Agent.reply({ instructions: "greet the user" }).pipe(Effect.asVoid)
})
export const weather: Agent.Agent = Agent.make({
  name: "weather",
  instructions: "Answer weather questions; hand back when done.",
  tools: [lookupWeather, Tool.handoff("transfer_to_greeter", () => greeter)]
})
