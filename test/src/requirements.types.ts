/**
 * Checked by `tsc --noEmit` (the first half of `npm test`): the services an agent needs are in
 * its type, so a program that starts a session without providing them does not compile. Each
 * `@ts-expect-error` below must be an error; if one stops being one, tsc fails on it.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { Agent, AgentSession, Tool } from "../../src/index.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"

class WeatherApi extends Context.Service<WeatherApi, { readonly today: (city: string) => Effect.Effect<string> }>()("test/WeatherApi") {}
class Audit extends Context.Service<Audit, { readonly log: (line: string) => Effect.Effect<void> }>()("test/Audit") {}

const lookup = Tool.make("lookup_weather", {
  description: "The weather in a city",
  parameters: Schema.Struct({ city: Schema.String }),
  handler: ({ city }) =>
    Effect.gen(function*() {
      const api = yield* WeatherApi
      return yield* api.today(city)
    })
})

const weather = Agent.make({
  name: "weather",
  instructions: "Weather.",
  tools: [lookup],
  // a hook that says something needs only what the session provides (CurrentAgent)
  onEnter: Agent.say("Sunny here.").pipe(Effect.asVoid),
  onExit: Effect.gen(function*() {
    const audit = yield* Audit
    yield* audit.log("weather left")
  })
})

const model = ScriptedModel.layer([])
const weatherApi = Layer.succeed(WeatherApi, { today: (city: string) => Effect.succeed(`sunny in ${city}`) })
const audit = Layer.succeed(Audit, { log: () => Effect.void })

const session = AgentSession.start({ agent: weather }).pipe(Effect.scoped, Effect.provide(model))

// @ts-expect-error neither WeatherApi (the tool) nor Audit (the onExit hook) is provided
export const nothingProvided: Effect.Effect<unknown, unknown, never> = session

// @ts-expect-error Audit is still missing
export const halfProvided: Effect.Effect<unknown, unknown, never> = session.pipe(Effect.provide(weatherApi))

export const allProvided: Effect.Effect<unknown, unknown, never> = session.pipe(Effect.provide([weatherApi, audit]))

// tools that need nothing, and hooks using only the current agent, need nothing from the program
const plain = Agent.make({
  name: "plain",
  instructions: "Plain.",
  tools: [Tool.make("ping", { description: "ping", handler: () => Effect.succeed("pong") })],
  onEnter: Agent.reply().pipe(Effect.asVoid)
})
export const needsNothing: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: plain }).pipe(Effect.scoped, Effect.provide(model))

// an agent reached by a handoff is checked too: the handoff tool needs what its target needs
const desk = Agent.make({ name: "desk", instructions: "Desk.", tools: [Tool.handoff("to_weather", () => weather)] })
// @ts-expect-error the weather agent behind the handoff needs WeatherApi and Audit
export const handoffTargetChecked: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: desk }).pipe(Effect.scoped, Effect.provide(model))
export const handoffTargetProvided: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: desk }).pipe(
  Effect.scoped,
  Effect.provide([model, weatherApi, audit])
)
// a target annotated `Agent.Agent` says nothing (agents that refer to each other in a cycle)
const loose: Agent.Agent = weather
const deskToLoose = Agent.make({ name: "desk", instructions: "Desk.", tools: [Tool.handoff("to_weather", () => loose)] })
export const looseTarget: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: deskToLoose }).pipe(Effect.scoped, Effect.provide(model))

// an agent annotated `Agent.Agent` (as mutually referring agents must be) says nothing: unchecked, as before
const annotated: Agent.Agent = weather
export const unchecked: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: annotated }).pipe(Effect.scoped, Effect.provide(model))

// annotated with what it needs, the check stays
const kept: Agent.Agent<WeatherApi | Audit> = weather
// @ts-expect-error WeatherApi and Audit are not provided
export const keptChecked: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: kept }).pipe(Effect.scoped, Effect.provide(model))
