/**
 * Seed 001's pair: a greeter that transfers weather questions to a weather specialist, who
 * answers and hands back. They refer to each other through thunks.
 */
import { Effect, Schema } from "effect"
import { Agent, Tool } from "@baton-voice/baton"

export const lookupWeather = Tool.make("lookup_weather", {
  description: "Look up the weather for a city",
  parameters: Schema.Struct({ city: Schema.String.annotate({ description: "The city or region" }) }),
  handler: ({ city }) => Effect.succeed(`The weather in ${city} is sunny, 21 degrees Celsius.`)
})

export const greeter: Agent.Agent = Agent.make({
  name: "greeter",
  instructions: "You are Kelly, a friendly greeter. Keep it short. Transfer weather questions to the weather agent.",
  tools: [Tool.handoff("transfer_to_weather", () => weather, { description: "Transfer to the weather specialist" })],
  onEnter: Agent.reply({ instructions: "greet the user and ask how you can help" }).pipe(Effect.asVoid)
})

export const weather: Agent.Agent = Agent.make({
  name: "weather",
  instructions: "You are Sunny, a weather specialist. Answer weather questions; transfer back to the greeter for anything else.",
  tools: [lookupWeather, Tool.handoff("transfer_to_greeter", () => greeter, { description: "Transfer back to the greeter" })],
  onEnter: Agent.reply({ instructions: "introduce yourself as the weather specialist and ask which city" }).pipe(Effect.asVoid),
  // Transferred back to later: no second introduction, but the caller hears who they are with.
  onResume: Agent.reply({ instructions: "welcome the caller back and ask which city this time" }).pipe(Effect.asVoid)
})
