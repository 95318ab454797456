/**
 * Agents are values: instructions, tools, hooks and optional per-agent models. An agent value
 * has identity: handing off to the same value twice means the same agent (and the same actor,
 * resumed with its state). Refer to each other through thunks to build cycles:
 *
 * ```ts
 * const greeter: Agent = Agent.make({ name: "greeter", tools: [Tool.handoff("to_weather", () => weather)], ... })
 * const weather: Agent = Agent.make({ name: "weather", tools: [Tool.handoff("to_greeter", () => greeter)], ... })
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, type Layer } from "effect"
import type { LanguageModel } from "effect/ai"
import { CurrentAgent, type ReplyOptions, type SayOptions } from "./CurrentAgent.ts"
import type { FloorError } from "./Errors.ts"
import type { ContextPolicy } from "./Handoff.ts"
import type { SpeechHandle } from "./Speech.ts"
import type { Tool } from "./Tool.ts"

/**
 * A hook is an Effect run in the agent's actor, with `CurrentAgent` available. Its other
 * services come from the Layers provided to the program that started the session.
 *
 * @since 0.1.0
 * @category models
 */
export type Hook = Effect.Effect<void, unknown, any>

/**
 * The parts of an agent given to `make`: its name (unique among the agents of a session),
 * instructions, tools, lifecycle hooks, an optional model of its own and the tool-step limit per
 * reply.
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentOptions {
  readonly name: string
  readonly instructions: string
  readonly tools?: ReadonlyArray<Tool>
  /** Runs once per activation by handoff (not when a paused actor is resumed). */
  readonly onEnter?: Hook
  /** Runs once each time the actor passes the floor by handoff. */
  readonly onExit?: Hook
  /** Runs when a handoff returns the floor to this agent's paused actor. */
  readonly onResume?: Hook
  /** This agent's language model, built in its actor's Scope (default: the session's). */
  readonly model?: Layer.Layer<LanguageModel.LanguageModel, unknown, any>
  /** Model steps with tool calls before the agent must answer in words (default 5). */
  readonly maxToolSteps?: number
}

/**
 * What makes an agent a task: whether the task's function calls are merged back into its caller's
 * context, and what it sees of that context. `AgentTask.make` sets it.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskSpec {
  /** Merge the task's function calls back into the caller's context too (default false). */
  readonly includeFunctionCalls: boolean
  /** What the task sees of its caller's context (default "full"). */
  readonly context: ContextPolicy
}

/**
 * An agent: its instructions, tools and hooks. `R` is what its tools, hooks and model need from
 * the program (type only); `AgentSession.start` with it needs the same. An agent annotated
 * `Agent.Agent` (as agents that refer to each other must be) says nothing (`any`); annotate
 * `Agent.Agent<WeatherApi>` to keep the check.
 *
 * @since 0.1.0
 * @category models
 */
export interface Agent<R = any> {
  readonly _tag: "Agent"
  /** Type only: the services its tools, hooks and model need. */
  readonly "~requirements"?: () => R
  readonly name: string
  readonly instructions: string
  readonly tools: ReadonlyArray<Tool>
  readonly onEnter?: Hook | undefined
  readonly onExit?: Hook | undefined
  readonly onResume?: Hook | undefined
  readonly model?: Layer.Layer<LanguageModel.LanguageModel, unknown, any> | undefined
  readonly maxToolSteps: number
  /** Present when the agent is an `AgentTask`. */
  readonly task?: TaskSpec | undefined
}

/**
 * The services a list of tools needs.
 *
 * @since 0.1.0
 * @category utils
 */
export type ToolRequirements<T> = T extends ReadonlyArray<infer Item> ? Item extends Tool<any, infer R> ? R : never : never

/**
 * `AgentOptions` with each part's requirements seen by the type checker.
 *
 * @since 0.1.0
 * @category models
 */
export interface TypedAgentOptions<T extends ReadonlyArray<Tool<any, any>>, E, X, S, M>
  extends Omit<AgentOptions, "tools" | "onEnter" | "onExit" | "onResume" | "model">
{
  readonly tools?: T
  readonly onEnter?: Effect.Effect<void, unknown, E>
  readonly onExit?: Effect.Effect<void, unknown, X>
  readonly onResume?: Effect.Effect<void, unknown, S>
  readonly model?: Layer.Layer<LanguageModel.LanguageModel, unknown, M>
}

/**
 * Makes an agent value from its options. Use it once per agent and refer to other agents through
 * thunks so agents can hand off to each other in a cycle; the agent's type collects what its
 * tools, hooks and model need. Throws when two tools share a name.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Agent, Tool } from "@baton-voice/baton"
 *
 * const weather: Agent.Agent = Agent.make({
 *   name: "weather",
 *   instructions: "Answer weather questions; hand back when done.",
 *   tools: [
 *     Tool.make("lookup_weather", {
 *       description: "Weather for a city",
 *       parameters: Schema.Struct({ city: Schema.String }),
 *       handler: ({ city }) => Effect.succeed(`Sunny in ${city}`)
 *     }),
 *     Tool.handoff("transfer_to_greeter", () => greeter)
 *   ]
 * })
 * const greeter: Agent.Agent = Agent.make({
 *   name: "greeter",
 *   instructions: "Greet the caller; transfer weather questions.",
 *   tools: [Tool.handoff("transfer_to_weather", () => weather)],
 *   onEnter: Agent.reply({ instructions: "greet the user" }).pipe(Effect.asVoid)
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: <const T extends ReadonlyArray<Tool<any, any>> = [], E = never, X = never, S = never, M = never>(
  options: TypedAgentOptions<T, E, X, S, M>
) => Agent<ToolRequirements<T> | Exclude<E | X | S, CurrentAgent> | M> = (options: AgentOptions): Agent => {
  const names = new Set<string>()
  for (const tool of options.tools ?? []) {
    if (names.has(tool.name)) throw new Error(`Agent "${options.name}" has two tools named "${tool.name}"`)
    names.add(tool.name)
  }
  return {
    _tag: "Agent",
    name: options.name,
    instructions: options.instructions,
    tools: options.tools ?? [],
    onEnter: options.onEnter,
    onExit: options.onExit,
    onResume: options.onResume,
    model: options.model,
    maxToolSteps: options.maxToolSteps ?? 5
  }
}

/**
 * Whether `u` is an agent value made by `make` (or `AgentTask.make`). Use it where a tool result
 * or a handoff target may be an agent.
 *
 * @since 0.1.0
 * @category guards
 */
export const isAgent = (u: unknown): u is Agent =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "Agent" && "instructions" in u

/**
 * Queues a reply of the current agent (it does not wait for it: the user can barge in).
 *
 * @since 0.1.0
 * @category combinators
 */
export const reply = (options: ReplyOptions = {}): Effect.Effect<SpeechHandle, FloorError, CurrentAgent> =>
  CurrentAgent.use((agent) => agent.generateReply(options))

/**
 * Queues a fixed utterance of the current agent.
 *
 * @since 0.1.0
 * @category combinators
 */
export const say = (text: string, options: SayOptions = {}): Effect.Effect<SpeechHandle, FloorError, CurrentAgent> =>
  CurrentAgent.use((agent) => agent.say(text, options))

export { CurrentAgent }
