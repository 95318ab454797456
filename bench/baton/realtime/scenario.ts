/**
 * The realtime benchmark's scenario (shared with bench/agents-js/realtime.mjs: keep the texts in
 * step): the agents' instructions and the mock model's script.
 */
import { Plan, type ScriptContext } from "../../../test/mocks/openai-realtime/index.ts"

/** Marker of the greeter's onEnter reply. */
export const GREET = "greet the user and ask how you can help"
/** Marker of the weather agent's onEnter reply. */
export const INTRO = "introduce yourself as the weather specialist and ask what city"
export const WEATHER_QUESTION = "What's the weather like today?"
export const greeterInstructions = (tag: string) =>
  `You are Kelly, a friendly greeter. Keep responses concise. When the user asks about weather, use the transfer_to_weather tool. [${tag}]`
export const weatherInstructions = (tag: string) =>
  `You are Sunny, a weather specialist. Keep responses concise. Help the user with weather questions. [${tag}]`

/** The mock's model: stateless, decided by the instructions, the tools and the last item. */
export const scenarioScript = (ctx: ScriptContext) => {
  if (ctx.instructions.includes(INTRO)) return Plan.say("Hi, I'm Sunny, the weather specialist. Which city?", { audioMs: 500 })
  if (ctx.instructions.includes(GREET)) return Plan.say("Hello, I'm Kelly. How can I help?", { audioMs: 500 })
  const last = ctx.lastItem
  const asksWeather = last?.type === "message" && last.role === "user" && (ctx.lastUserText ?? "").toLowerCase().includes("weather")
  if (asksWeather && ctx.tools.some((t) => t.name === "transfer_to_weather")) return Plan.call("transfer_to_weather", {})
  return Plan.say("Sure, noted.", { audioMs: 300 })
}
