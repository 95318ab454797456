/**
 * Agents are values: instructions, tools, hooks and optional per-agent models. An agent value
 * has identity: handing off to the same value twice means the same agent (and the same actor,
 * resumed with its state). Refer to each other through thunks to build cycles:
 *
 * ```ts
 * const greeter: Agent = Agent.make({ name: "greeter", tools: [Tool.handoff("to_weather", () => weather)], ... })
 * const weather: Agent = Agent.make({ name: "weather", tools: [Tool.handoff("to_greeter", () => greeter)], ... })
 * ```
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
 */
export type Hook = Effect.Effect<void, unknown, any>

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

/** The services a list of tools needs. */
export type ToolRequirements<T> = T extends ReadonlyArray<infer Item> ? Item extends Tool<any, infer R> ? R : never : never

/** `AgentOptions` with each part's requirements seen by the type checker. */
export interface TypedAgentOptions<T extends ReadonlyArray<Tool<any, any>>, E, X, S, M>
  extends Omit<AgentOptions, "tools" | "onEnter" | "onExit" | "onResume" | "model">
{
  readonly tools?: T
  readonly onEnter?: Effect.Effect<void, unknown, E>
  readonly onExit?: Effect.Effect<void, unknown, X>
  readonly onResume?: Effect.Effect<void, unknown, S>
  readonly model?: Layer.Layer<LanguageModel.LanguageModel, unknown, M>
}

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

export const isAgent = (u: unknown): u is Agent =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "Agent" && "instructions" in u

/** Queues a reply of the current agent (it does not wait for it: the user can barge in). */
export const reply = (options: ReplyOptions = {}): Effect.Effect<SpeechHandle, FloorError, CurrentAgent> =>
  CurrentAgent.use((agent) => agent.generateReply(options))

/** Queues a fixed utterance of the current agent. */
export const say = (text: string, options: SayOptions = {}): Effect.Effect<SpeechHandle, FloorError, CurrentAgent> =>
  CurrentAgent.use((agent) => agent.say(text, options))

export { CurrentAgent }
