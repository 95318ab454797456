/**
 * Checked by `tsc --noEmit` (the first half of `npm test`): the services an agent needs are in
 * its type, so a program that starts a session without providing them does not compile. Each
 * `@ts-expect-error` below must be an error; if one stops being one, tsc fails on it. No type
 * defaults to `any`: `Agent.Agent` alone is an agent that needs nothing, and is checked as such.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { Agent, AgentSession, AgentTask, Guardrail, Handoff, TaskGroup, Tool } from "../../src/index.ts"
import type { SessionStoreService } from "../../services/SessionStore.ts"
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
// an annotation is checked: `Agent.Agent` alone is an agent that needs nothing
// @ts-expect-error weather needs WeatherApi and Audit, not nothing
export const understated: Agent.Agent = weather
// @ts-expect-error Audit is missing from the annotation
export const halfStated: Agent.Agent<WeatherApi> = weather
// an agent needing R is an agent needing more (covariance), so wider annotations are fine
export const widened: Agent.Agent<WeatherApi | Audit | Crm> = weather

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
// a task made with an explicit result type needs nothing: its parts are checked against that
// @ts-expect-error lookup needs WeatherApi, and `make<string>` leaves no room for it
export const explicitTask = AgentTask.make<string>({ name: "t", instructions: "T.", tools: [lookup] })
// @ts-expect-error so does a hook
export const explicitTaskHook = AgentTask.make<string>({ name: "t", instructions: "T.", onEnter: Effect.gen(function*() { yield* Audit }) })
export const explicitTaskPlain = AgentTask.make<string>({ name: "t", instructions: "T.", onEnter: Effect.asVoid(Agent.reply()) })


// --- Issue 38: requirements checked by default ---------------------------------------------------

class Db extends Context.Service<Db, { readonly query: (sql: string) => Effect.Effect<string> }>()("test/Db") {}
class Mailer extends Context.Service<Mailer, { readonly send: (to: string) => Effect.Effect<void> }>()("test/Mailer") {}
const db = Layer.succeed(Db, { query: (sql: string) => Effect.succeed(sql) })
const mailer = Layer.succeed(Mailer, { send: () => Effect.void })
const balance = Tool.make("balance", {
  description: "The caller's balance",
  handler: () => Db.use((d) => d.query("select balance"))
})

// an agent whose tool needs Db cannot be started without a Layer providing Db
const accounts = Agent.make({ name: "accounts", instructions: "Accounts.", tools: [balance] })
export const accountsType: Agent.Agent<Db> = accounts
// @ts-expect-error Db is not provided
export const dbMissing: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: accounts }).pipe(Effect.scoped, Effect.provide(model))
export const dbProvided: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: accounts }).pipe(Effect.scoped, Effect.provide([model, db]))

// a handoff target's requirement propagates, through a thunk as through a value
const router = Agent.make({ name: "router", instructions: "Route.", tools: [Tool.handoff("to_accounts", () => accounts)] })
export const routerType: Agent.Agent<Db> = router
// @ts-expect-error the accounts agent behind the handoff needs Db
export const routerDbMissing: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: router }).pipe(Effect.scoped, Effect.provide(model))
export const routerDbProvided: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: router }).pipe(Effect.scoped, Effect.provide([model, db]))

// mutually referring agents compile: one agent of the cycle carries a checked annotation
const frontDesk: Agent.Agent<Db> = Agent.make({
  name: "front_desk",
  instructions: "Front desk.",
  tools: [Tool.handoff("to_billing", () => billing)]
})
const billing = Agent.make({
  name: "billing",
  instructions: "Billing.",
  tools: [balance, Tool.handoff("to_front_desk", () => frontDesk)]
})
export const billingType: Agent.Agent<Db> = billing
// @ts-expect-error Db, which billing needs, is not provided
export const cycleDbMissing: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: frontDesk }).pipe(Effect.scoped, Effect.provide(model))
export const cycleDbProvided: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: frontDesk }).pipe(Effect.scoped, Effect.provide([model, db]))
// a cycle's annotation that understates what the other agent needs is an error
// @ts-expect-error cashier needs Db, and the annotation says lobby (which hands off to it) needs nothing
const lobby: Agent.Agent = Agent.make({
  name: "lobby",
  instructions: "Lobby.",
  tools: [Tool.handoff("to_cashier", () => cashier)]
})
const cashier = Agent.make({ name: "cashier", instructions: "Cashier.", tools: [balance, Tool.handoff("to_lobby", () => lobby)] })

// a hook that needs a service propagates it (onEnter, onResume; onExit is above)
const notifying = Agent.make({
  name: "notifying",
  instructions: "Notify.",
  onEnter: Mailer.use((m) => m.send("ops")),
  onResume: Db.use((d) => Effect.asVoid(d.query("resume")))
})
export const notifyingType: Agent.Agent<Mailer | Db> = notifying
// @ts-expect-error Db (onResume) is still missing
export const hookDbMissing: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: notifying }).pipe(
  Effect.scoped,
  Effect.provide([model, mailer])
)
export const hooksProvided: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: notifying }).pipe(
  Effect.scoped,
  Effect.provide([model, mailer, db])
)

// a session's start needs the union of its agent's and its session tools' requirements
const mail = Tool.make("mail", { description: "Mail", handler: () => Mailer.use((m) => m.send("x")) })
const withSessionTools = AgentSession.start({ agent: accounts, tools: [mail] }).pipe(Effect.scoped)
// @ts-expect-error Mailer, which the session tool needs, is not provided
export const sessionToolMissing: Effect.Effect<unknown, unknown, never> = withSessionTools.pipe(Effect.provide([model, db]))
export const sessionToolsProvided: Effect.Effect<unknown, unknown, never> = withSessionTools.pipe(Effect.provide([model, db, mailer]))

// a handoff from outside may go only to an agent needing what the session was started with
export const outsideHandoff = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: plain })
  yield* session.handoff(plain)
  // @ts-expect-error accounts needs Db, which the session was not started with
  yield* session.handoff(accounts)
  const dbSession = yield* AgentSession.start({ agent: accounts })
  yield* dbSession.handoff(router)
}).pipe(Effect.scoped)

// a task group needs what its tasks need
const askAccount: AgentTask.AgentTask<string, Db> = AgentTask.make({
  name: "ask_account",
  instructions: "Ask for the account.",
  tools: [balance, Tool.make("done", { description: "Done", handler: () => AgentTask.complete(askAccount, "acct") })]
})
const intake = TaskGroup.make({
  name: "intake",
  tasks: [
    { id: "account", description: "the account", task: askAccount },
    { id: "name", description: "the name", task: () => askName }
  ]
})
export const intakeType: AgentTask.AgentTask<TaskGroup.TaskGroupResult, Db | Crm> = intake
// @ts-expect-error the group's tasks need Db and Crm
export const intakeUnderstated: AgentTask.AgentTask<TaskGroup.TaskGroupResult, Db> = intake

// a handler that only throws needs nothing (its R is not taken from the agent's tool list)
const throwing = Agent.make({
  name: "throwing",
  instructions: "Throw.",
  tools: [balance, Tool.make("explode", { description: "Explode", handler: () => { throw new Error("bug") } })]
})
export const throwingType: Agent.Agent<Db> = throwing

// a task completes with a value of its result type
// @ts-expect-error askName's result is a string
export const wrongResult = AgentTask.complete(askName, 42)

// a guardrail's handoff target needs what it needs, and so does the agent the guardrail is on
const escalation = Agent.make({ name: "escalation", instructions: "Escalate.", tools: [balance] })
const quiet = () => Effect.succeed(undefined)
const guarded = Agent.make({
  name: "guarded",
  instructions: "Guarded.",
  guardrails: [
    Guardrail.output("no_prices", { check: quiet, policy: Guardrail.handoff(() => escalation) }),
    Guardrail.toolInput("no_refunds", { check: quiet, policy: Guardrail.say("I can't do that.") })
  ]
})
export const guardedType: Agent.Agent<Db> = guarded
// @ts-expect-error the escalation agent the output guardrail hands the floor to needs Db
export const guardedUnderstated: Agent.Agent = guarded
// @ts-expect-error Db, which the guardrail's handoff target needs, is not provided
export const guardrailDbMissing: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: guarded }).pipe(Effect.scoped, Effect.provide(model))
export const guardrailDbProvided: Effect.Effect<unknown, unknown, never> = AgentSession.start({ agent: guarded }).pipe(
  Effect.scoped,
  Effect.provide([model, db])
)
// a tool guardrail's target too, and a policy that only speaks or ends the call needs nothing
export const toolGuardrailType: Agent.Agent<Db> = Agent.make({
  name: "tool_guarded",
  instructions: "Guarded.",
  guardrails: [Guardrail.toolOutput("no_secrets", { check: quiet, policy: Guardrail.handoff(escalation) })]
})
export const sayOnly: Agent.Agent = Agent.make({
  name: "say_only",
  instructions: "Guarded.",
  guardrails: [Guardrail.output("calm", { check: quiet, policy: Guardrail.say("Let's keep it calm.") }), Guardrail.toolInput("stop", { check: quiet, policy: Guardrail.endCall() })]
})
// a task's guardrails count for the task
// @ts-expect-error the guardrail's handoff target needs Db, and the annotation says nothing
export const guardedTask: AgentTask.AgentTask<string> = AgentTask.make({
  name: "guarded_task",
  instructions: "T.",
  guardrails: [Guardrail.output("no_prices", { check: quiet, policy: Guardrail.handoff(escalation) })]
})
// a session's own guardrails: their handoff targets' requirements are the session's
const sessionGuarded = AgentSession.start({
  agent: plain,
  guardrails: [Guardrail.output("no_prices", { check: quiet, policy: Guardrail.handoff(() => escalation) })]
}).pipe(Effect.scoped)
// @ts-expect-error Db, which the session guardrail's handoff target needs, is not provided
export const sessionGuardrailMissing: Effect.Effect<unknown, unknown, never> = sessionGuarded.pipe(Effect.provide(model))
export const sessionGuardrailProvided: Effect.Effect<unknown, unknown, never> = sessionGuarded.pipe(Effect.provide([model, db]))

// resuming needs what every agent it may find again needs
declare const store: SessionStoreService
const resumed = AgentSession.resume({ id: "s", store, agents: [plain, accounts] }).pipe(Effect.scoped)
// @ts-expect-error accounts, one of the agents the session may resume, needs Db
export const resumeDbMissing: Effect.Effect<unknown, unknown, never> = resumed.pipe(Effect.provide(model))
export const resumeDbProvided: Effect.Effect<unknown, unknown, never> = resumed.pipe(Effect.provide([model, db]))

// a durable session's userdata Schema is checked against its userdata, and needs no service
const Caller = Schema.Struct({ name: Schema.String })
export const durableTyped = AgentSession.start({ agent: plain, store, userdata: { name: "Ada" }, userdataSchema: Caller })
// @ts-expect-error the userdata is not what the Schema describes
export const durableMismatch = AgentSession.start({ agent: plain, store, userdata: { name: 42 }, userdataSchema: Caller })
declare const needsDb: Schema.Codec<{ readonly name: string }, unknown, Db>
// @ts-expect-error a Schema whose decoding needs a service cannot be journaled
export const durableServiceSchema = AgentSession.start({ agent: plain, store, userdata: { name: "Ada" }, userdataSchema: needsDb })
