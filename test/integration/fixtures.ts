/**
 * Shared fixtures of the realtime integration tests: the greeter / weather pair of seeds 000 and
 * 001 (transfer tools both ways, a `lookup_weather` tool), counters for their hooks, and helpers
 * that read a session's events.
 */
import { assert } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Agent, type AgentSession, Tool } from "../../src/index.ts"
import type { ChatContext } from "../../src/ChatContext.ts"
import type { SessionEvent } from "../../src/Events.ts"
import type { RunResult } from "../../src/RunResult.ts"

export const GREETER_INSTRUCTIONS = "You are Kelly, the greeter. Transfer weather questions."
export const WEATHER_INSTRUCTIONS = "You are Sunny, the weather specialist. Hand back when done."
export const INTRODUCE = "introduce yourself as the weather specialist"

export interface Counts {
  greeterEnter: number
  greeterResume: number
  greeterExit: number
  weatherEnter: number
  weatherExit: number
  lookups: number
}

export interface Pair {
  readonly greeter: Agent.Agent
  readonly weather: Agent.Agent
  readonly counts: Counts
  /** The greeter's chat context as its onResume hook saw it, once per resumption. */
  readonly resumedWith: Array<ChatContext>
}

/**
 * The greeter and the weather agent. The weather agent introduces itself in its onEnter (a
 * reply with extra instructions); the greeter has an onResume hook, so a transfer back makes no
 * reply by itself (the user speaks next).
 */
export const pair = (options: { readonly sameConfig?: boolean } = {}): Pair => {
  const counts: Counts = { greeterEnter: 0, greeterResume: 0, greeterExit: 0, weatherEnter: 0, weatherExit: 0, lookups: 0 }
  const resumedWith: Array<ChatContext> = []
  const lookupWeather = Tool.make("lookup_weather", {
    description: "Weather for a city",
    parameters: Schema.Struct({ city: Schema.String }),
    handler: ({ city }) => Effect.sync(() => {
      counts.lookups++
      return `sunny in ${city}, 21 degrees`
    })
  })
  const toWeather = Tool.handoff("transfer_to_weather", () => weather, { description: "Transfer weather questions." })
  const toGreeter = Tool.handoff("transfer_to_greeter", () => greeter, { description: "Hand back to the greeter." })
  // With `sameConfig`, both agents have the same instructions and the same tools (in the same
  // order), so nothing differs but the chat context.
  const shared = options.sameConfig === true
  const greeter: Agent.Agent = Agent.make({
    name: "greeter",
    instructions: shared ? WEATHER_INSTRUCTIONS : GREETER_INSTRUCTIONS,
    tools: shared ? [lookupWeather, toWeather, toGreeter] : [toWeather],
    onEnter: Effect.sync(() => void counts.greeterEnter++),
    onExit: Effect.sync(() => void counts.greeterExit++),
    onResume: Agent.CurrentAgent.use((self) => self.chatContext).pipe(
      Effect.tap((chat) => Effect.sync(() => {
        counts.greeterResume++
        resumedWith.push(chat)
      })),
      Effect.asVoid
    )
  })
  const weather: Agent.Agent = Agent.make({
    name: "weather",
    instructions: WEATHER_INSTRUCTIONS,
    tools: [lookupWeather, toWeather, toGreeter].filter((t) => shared || t !== toWeather),
    onEnter: Effect.sync(() => void counts.weatherEnter++).pipe(Effect.andThen(Agent.reply({ instructions: INTRODUCE }))),
    onExit: Effect.sync(() => void counts.weatherExit++)
  })
  return { greeter, weather, counts, resumedWith }
}

/** Events of `agent` (items, speech, state) strictly between two sequence numbers. */
export const eventsOfAgentBetween = (events: ReadonlyArray<SessionEvent>, agent: string, from: number, to: number) =>
  events.filter((e) =>
    e.seq > from && e.seq < to &&
    (((e.type === "speech_created" || e.type === "speech_finished" || e.type === "agent_state_changed" ||
      e.type === "function_tools_executed" || e.type === "handoff_not_applied") && e.agent === agent) ||
      (e.type === "conversation_item_added" && e.agent === agent) ||
      (e.type === "error" && e.agent === agent))
  )

/** Sequence numbers of the handoff events, in order, as `from>to`. */
export const handoffs = (events: ReadonlyArray<SessionEvent>) =>
  events.flatMap((e) => (e.type === "agent_handoff" ? [{ seq: e.seq, from: e.from, to: e.to, resumed: e.resumed }] : []))

export const errorsOf = (events: ReadonlyArray<SessionEvent>) =>
  events.flatMap((e) => (e.type === "error" ? [`${e.source}/${e.agent ?? "-"}: ${e.message}`] : []))

export const assertNoErrors = (events: ReadonlyArray<SessionEvent>) =>
  assert.deepStrictEqual(errorsOf(events), [], "the session reported errors")

/** Texts of the assistant messages of `agent` in a history, in order. */
export const saidBy = (history: ChatContext, agent: string) =>
  history.items.flatMap((i) => (i._tag === "Message" && i.role === "assistant" && i.agent === agent ? [i.text] : []))

/** `session.run(text)` that fails (instead of hanging the test) when the session does not settle. */
export const run = (session: AgentSession.AgentSession, text: string, seconds = 15): Effect.Effect<RunResult, Error> =>
  session.run(text).pipe(
    Effect.timeoutOrElse({
      duration: `${seconds} seconds`,
      orElse: () => Effect.fail(new Error(`session.run(${JSON.stringify(text)}) did not settle within ${seconds} s`))
    })
  )
