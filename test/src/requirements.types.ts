/**
 * Checked by `tsc --noEmit` (the first half of `npm test`): the services an agent needs are in
 * its type, so a program that starts a session without providing them does not compile. Each
 * `@ts-expect-error` below must be an error; if one stops being one, tsc fails on it.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { Agent, AgentSession, AgentTask, Handoff, Tool } from "../../src/index.ts"
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

// a handoff returned by a tool's own handler needs what its target needs
const deskByHandler = Agent.make({
  name: "desk",
  instructions: "Desk.",
  tools: [Tool.make("route", { description: "Route the caller", handler: () => Effect.succeed(Handoff.to(weather, { reason: "weather" })) })]
})
// @ts-expect-error the weather agent behind Handoff.to needs WeatherApi and Audit
export const handlerHandoffChecked: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: deskByHandler }).pipe(
  Effect.scoped,
  Effect.provide(model)
)
export const handlerHandoffProvided: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: deskByHandler }).pipe(
  Effect.scoped,
  Effect.provide([model, weatherApi, audit])
)
// so does an agent returned as it is
const deskByAgent = Agent.make({
  name: "desk",
  instructions: "Desk.",
  tools: [Tool.make("route", { description: "Route the caller", handler: () => Effect.succeed(weather) })]
})
// @ts-expect-error the weather agent returned by the handler needs WeatherApi and Audit
export const returnedAgentChecked: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: deskByAgent }).pipe(
  Effect.scoped,
  Effect.provide(model)
)

// a task typed by its annotation is checked against its parts, and running it needs what it needs
class Crm extends Context.Service<Crm, { readonly save: (name: string) => Effect.Effect<void> }>()("test/Crm") {}
const crm = Layer.succeed(Crm, { save: () => Effect.void })
const askName: AgentTask.AgentTask<string, Crm> = AgentTask.make({
  name: "ask_name",
  instructions: "Ask the caller's name.",
  tools: [
    Tool.make("record_name", {
      description: "Record the caller's name",
      parameters: Schema.Struct({ name: Schema.String }),
      handler: ({ name }) =>
        Effect.gen(function*() {
          const store = yield* Crm
          yield* store.save(name)
          return yield* AgentTask.complete(askName, name)
        })
    })
  ]
})
// @ts-expect-error the annotation must name what the task's tools need (Crm)
export const taskUnderstated: AgentTask.AgentTask<string, never> = AgentTask.make({
  name: "t",
  instructions: "T.",
  tools: [Tool.make("save", { description: "Save", handler: () => Effect.gen(function*() { yield* (yield* Crm).save("x") }) })]
})
const reception = Agent.make({
  name: "reception",
  instructions: "Reception.",
  tools: [Tool.make("identify", { description: "Identify the caller", handler: () => AgentTask.run(askName) })]
})
// @ts-expect-error the task run by the tool needs Crm
export const taskChecked: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: reception }).pipe(
  Effect.scoped,
  Effect.provide(model)
)
export const taskProvided: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: reception }).pipe(
  Effect.scoped,
  Effect.provide([model, crm])
)
// a task run from a hook is checked too
const greeterWithTask = Agent.make({ name: "greeter", instructions: "Greet.", onEnter: Effect.asVoid(AgentTask.run(askName)) })
// @ts-expect-error the task run by onEnter needs Crm
export const hookTaskChecked: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: greeterWithTask }).pipe(
  Effect.scoped,
  Effect.provide(model)
)
// a task made with an explicit result type says nothing (any), as before
const loose2 = AgentTask.make<string>({ name: "loose", instructions: "Loose.", tools: [lookup] })
const runsLoose = Agent.make({ name: "r", instructions: "R.", tools: [Tool.make("go", { description: "Go", handler: () => AgentTask.run(loose2) })] })
export const looseTask: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: runsLoose }).pipe(Effect.scoped, Effect.provide(model))
