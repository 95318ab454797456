/**
 * Agents are values: instructions, tools, hooks and optional per-agent models. An agent value
 * has identity: handing off to the same value twice means the same agent (and the same actor,
 * resumed with its state). Refer to each other through thunks to build cycles; TypeScript
 * cannot infer a type through a cycle, so one agent of it is annotated with what it needs (the
 * annotation is checked: `Agent.Agent` alone means it needs nothing):
 *
 * ```ts
 * const greeter: Agent.Agent<WeatherApi> = Agent.make({ name: "greeter", tools: [Tool.handoff("to_weather", () => weather)], ... })
 * const weather = Agent.make({ name: "weather", tools: [lookup, Tool.handoff("to_greeter", () => greeter)], ... })
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, type Layer, type Types } from "effect"
import type { LanguageModel } from "effect/ai"
import { CurrentAgent, type ReplyOptions, type SayOptions } from "./CurrentAgent.ts"
import type { FloorError } from "./Errors.ts"
import type { ContextPolicy } from "./Handoff.ts"
import type { SpeechHandle } from "./Speech.ts"
import type * as Guardrail from "./Guardrail.ts"
import type * as Tool from "./Tool.ts"
import * as Toolset from "./Toolset.ts"
import type * as Turn from "./Turn.ts"

/**
 * A hook is an Effect run in the agent's actor, with `CurrentAgent` available. `R` is what else
 * it needs: those services come from the Layers provided to the program that started the session.
 *
 * @since 0.1.0
 * @category models
 */
export type Hook<R = never> = Effect.Effect<void, unknown, R | CurrentAgent>

/**
 * `onUserTurnCompleted`: runs on the user's turn, once it is recorded and before the agent
 * replies (in the reply's fiber: a newer turn cuts it). Returns how the reply goes on
 * (`Turn.reply`, `Turn.stopResponse`; nothing: a plain reply). A hook that fails is reported
 * and the agent replies as if there were none.
 *
 * @since 0.1.0
 * @category models
 */
export type TurnHook<R = never> = (turn: Turn.UserTurn) => Effect.Effect<Turn.Decision | void, unknown, R | CurrentAgent>

/**
 * What `onUserAway` is told: how many times in a row it has run without the user coming back
 * (1 the first time; again each time the agent has spoken and the user stays silent).
 *
 * @since 0.1.0
 * @category models
 */
export interface UserAway {
  readonly times: number
}

/**
 * `onUserAway`: runs in the hook lane of the agent holding the floor when the user has said
 * nothing for the session's `userAwayTimeout` (ask whether they are still there, end the call).
 *
 * @since 0.1.0
 * @category models
 */
export type AwayHook<R = never> = (away: UserAway) => Effect.Effect<void, unknown, R | CurrentAgent>

/**
 * Tags agents; under it, `Variance` carries what an agent needs for the type checker.
 *
 * @since 0.1.0
 * @category type ids
 */
export const TypeId = "~baton/Agent" as const

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * The variance of `Agent<R>`: an agent needing `R` is an agent needing `R | R2`, and not one
 * needing less.
 *
 * @since 0.1.0
 * @category models
 */
export interface Variance<out R> {
  readonly [TypeId]: { readonly _R: Types.Covariant<R> }
}

/**
 * The parts of an agent given to `make`: its name (unique among the agents of a session),
 * instructions, tools, lifecycle hooks, an optional model of its own and the tool-step limit per
 * reply.
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentOptions<R = never> {
  readonly name: string
  readonly instructions: string
  /** Its tools, and toolsets (an MCP server's) each actor of the agent opens when it starts. */
  readonly tools?: ReadonlyArray<Tool.Tool<unknown, R> | Toolset.Toolset<R>>
  /** Runs once per activation by handoff (not when a paused actor is resumed). */
  readonly onEnter?: Hook<R>
  /** Runs once each time the actor passes the floor by handoff. */
  readonly onExit?: Hook<R>
  /** Runs when a handoff returns the floor to this agent's paused actor. */
  readonly onResume?: Hook<R>
  /**
   * Runs once on the holder of a resumed durable session whose process died while this agent's
   * `onEnter` (or `onResume`) ran: that hook's work is gone with the process and never runs
   * again, so this one picks it up (a task may `AgentTask.complete` from it, as from `onEnter`).
   * Its start is journaled: a later resume does not run it again.
   */
  readonly onRestore?: Hook<R>
  /** Sees each user turn before the reply: may add to the context or stop the reply (see `Turn`). */
  readonly onUserTurnCompleted?: TurnHook<R>
  /** Runs when the user has been away `userAwayTimeout` (a session option) while this agent held the floor. */
  readonly onUserAway?: AwayHook<R>
  /** This agent's language model, built in its actor's Scope (default: the session's). */
  readonly model?: Layer.Layer<LanguageModel.LanguageModel, unknown, R>
  /** Model steps with tool calls before the agent must answer in words (default 5). */
  readonly maxToolSteps?: number
  /** Checks on what it says and on its tool calls, each with a policy for when it trips (see `Guardrail`). */
  readonly guardrails?: ReadonlyArray<Guardrail.Guardrail<R>>
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
 * An agent: its instructions, tools and hooks. `R` is what its tools, hooks, model and handoff
 * targets need from the program (besides `CurrentAgent`); `AgentSession.start` with it needs the
 * same, so a missing Layer is a compile error. `Agent.Agent` alone is an agent that needs
 * nothing, and an annotation (as one agent of a cycle needs) is checked against what the agent
 * needs. `Agent<unknown>` is any agent, whatever it needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface Agent<out R = never> extends Variance<R> {
  readonly _tag: "Agent"
  readonly name: string
  readonly instructions: string
  readonly tools: ReadonlyArray<Tool.Tool<unknown, R>>
  /** Opened by each actor of the agent when it starts, in its Scope (see `Toolset`). */
  readonly toolsets?: ReadonlyArray<Toolset.Toolset<R>> | undefined
  readonly onEnter?: Hook<R> | undefined
  readonly onExit?: Hook<R> | undefined
  readonly onResume?: Hook<R> | undefined
  readonly onRestore?: Hook<R> | undefined
  readonly onUserTurnCompleted?: TurnHook<R> | undefined
  readonly onUserAway?: AwayHook<R> | undefined
  readonly model?: Layer.Layer<LanguageModel.LanguageModel, unknown, R> | undefined
  readonly maxToolSteps: number
  readonly guardrails?: ReadonlyArray<Guardrail.Guardrail<R>> | undefined
  /** Present when the agent is an `AgentTask`. */
  readonly task?: TaskSpec | undefined
}

/**
 * The services a list of tools needs.
 *
 * @since 0.1.0
 * @category utils
 */
export type ToolRequirements<T> = T extends ReadonlyArray<infer Item> ? Tool.Requirements<Item> : never

/**
 * `AgentOptions` with each part's requirements seen by the type checker.
 *
 * @since 0.1.0
 * @category models
 */
export interface TypedAgentOptions<T extends ReadonlyArray<Tool.Any | Toolset.Any>, E, X, S, M, H = never, G = never, Rs = never>
  extends Omit<AgentOptions, "tools" | "onEnter" | "onExit" | "onResume" | "onRestore" | "onUserTurnCompleted" | "onUserAway" | "model" | "guardrails">
{
  readonly tools?: T
  readonly onEnter?: Effect.Effect<void, unknown, E>
  readonly onExit?: Effect.Effect<void, unknown, X>
  readonly onResume?: Effect.Effect<void, unknown, S>
  /** `Rs`: what `onRestore` needs. */
  readonly onRestore?: Effect.Effect<void, unknown, Rs>
  /** `H`: what the turn and away hooks need. */
  readonly onUserTurnCompleted?: (turn: Turn.UserTurn) => Effect.Effect<Turn.Decision | void, unknown, H>
  readonly onUserAway?: (away: UserAway) => Effect.Effect<void, unknown, H>
  readonly model?: Layer.Layer<LanguageModel.LanguageModel, unknown, M>
  /** `G`: what the agents its guardrails' policies hand the floor to need. */
  readonly guardrails?: ReadonlyArray<Guardrail.Guardrail<G>>
}

/**
 * The tools an agent was made with, in its type only (nothing of it exists at run time):
 * `MockTools` checks a mock's name, parameters and result against them.
 *
 * @since 0.1.0
 * @category models
 */
export interface WithTools<out T> {
  readonly "~baton/AgentTools"?: T
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
export function make<
  const T extends ReadonlyArray<Tool.Any | Toolset.Any> = [],
  E = never,
  X = never,
  S = never,
  M = never,
  H = never,
  G = never,
  Rs = never
>(
  options: TypedAgentOptions<T, E, X, S, M, H, G, Rs>
): Agent<ToolRequirements<T> | Exclude<E | X | S | H | Rs, CurrentAgent> | M | G> & WithTools<T>
export function make(options: AgentOptions<unknown>): Agent<unknown> {
  const names = new Set<string>()
  const tools: Array<Tool.Tool<unknown, unknown>> = []
  const toolsets: Array<Toolset.Toolset<unknown>> = []
  for (const tool of options.tools ?? []) {
    if (Toolset.isToolset(tool)) {
      toolsets.push(tool)
      continue
    }
    if (names.has(tool.name)) throw new Error(`Agent "${options.name}" has two tools named "${tool.name}"`)
    names.add(tool.name)
    tools.push(tool)
  }
  // Every field present (undefined when not given), no spreads: every agent has one shape, so
  // the runtime's reads of an agent's fields stay monomorphic (conditional spreads gave agents
  // several shapes and made a warm handoff about 10% slower).
  return {
    [TypeId]: variance,
    _tag: "Agent",
    name: options.name,
    instructions: options.instructions,
    tools,
    toolsets: toolsets.length > 0 ? toolsets : undefined,
    onEnter: options.onEnter,
    onExit: options.onExit,
    onResume: options.onResume,
    onRestore: options.onRestore,
    onUserTurnCompleted: options.onUserTurnCompleted,
    onUserAway: options.onUserAway,
    model: options.model,
    maxToolSteps: options.maxToolSteps ?? 5,
    guardrails: options.guardrails && options.guardrails.length > 0 ? options.guardrails : undefined
  }
}

const variance: Variance<unknown>[TypeId] = { _R: (_: never) => _ }

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
