/**
 * Handoff values: what a tool returns to pass the floor to another agent, and the policy that
 * decides which part of the conversation the new agent sees.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import type { Agent } from "./Agent.ts"
import { ChatContext } from "./ChatContext.ts"

/**
 * What the new agent's chat context receives from the outgoing agent's:
 * - `"full"`: everything but the outgoing agent's instructions (the default);
 * - `"none"`: nothing (the new agent starts from its own instructions);
 * - `{ lastTurns: n }`: the last n turns (a turn starts at a user message);
 * - a function of the outgoing agent's context.
 *
 * On a first activation it seeds the new actor; on a return to a paused actor the selected
 * items it does not have yet are merged into its own context.
 *
 * @since 0.1.0
 * @category models
 */
export type ContextPolicy =
  | "full"
  | "none"
  | { readonly lastTurns: number; readonly excludeFunctionCalls?: boolean }
  | ((context: ChatContext) => ChatContext)

/**
 * The context the new agent starts from: the outgoing agent's context without its instructions,
 * filtered by `policy` (all of it, none, the last turns, or a function of it).
 *
 * @since 0.1.0
 * @category combinators
 */
export const applyContextPolicy = (policy: ContextPolicy, context: ChatContext): ChatContext => {
  const base = context.copy({ excludeInstructions: true })
  if (policy === "full") return base
  if (policy === "none") return ChatContext.empty
  if (typeof policy === "function") return policy(base)
  const truncated = base.truncate(policy.lastTurns)
  return policy.excludeFunctionCalls ? truncated.copy({ excludeFunctionCalls: true }) : truncated
}

/**
 * An agent needing `R`, or a thunk returning one (so agents can refer to each other before both
 * exist). `AgentRef<unknown>` is any of them.
 *
 * @since 0.1.0
 * @category models
 */
export type AgentRef<R = never> = Agent<R> | (() => Agent<R>)

/**
 * The agent `ref` names (calls the thunk when it is one), as the session runs it: whatever it
 * needs was in the requirements of the tool that returned it, hence in `AgentSession.start`'s.
 *
 * @since 0.1.0
 * @category utils
 */
export const resolveAgent = (ref: AgentRef<unknown>): Agent => (typeof ref === "function" ? ref() : ref) as Agent

/**
 * Options of a handoff: the output the outgoing model sees for the call, what the new agent sees
 * of the conversation, and why (for events and logs).
 *
 * @since 0.1.0
 * @category models
 */
export interface HandoffOptions {
  /** The output the outgoing agent's model sees for the call (default: "Transferred to <name>."). */
  readonly message?: string
  /** What the new agent sees of the conversation (default: "full"). */
  readonly context?: ContextPolicy
  /** Why, for events and logs. */
  readonly reason?: string
  /**
   * Whether the new agent replies at once, continuing the user's turn (default: when it has no
   * hook of its own to run: `onEnter` on a first activation, `onResume` on a return).
   */
  readonly reply?: boolean
}

/**
 * A tool result that passes the floor to `target` once the whole batch has settled. `R` is what
 * the target needs (type only): a tool whose handler returns it needs the same.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Handoff, Tool } from "@baton-voice/baton"
 *
 * // a handler that decides at run time whether to pass the floor
 * const checkout = Tool.make("checkout", {
 *   description: "Check out the cart",
 *   parameters: Schema.Struct({ total: Schema.Number }),
 *   handler: ({ total }) =>
 *     Effect.succeed(total > 1000 ? Handoff.to(() => supervisor, { reason: "large order" }) : "Done.")
 * })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Handoff<out R = never> {
  readonly _tag: "Handoff"
  /** The target; its `R` is what a tool returning this handoff needs for it. */
  readonly target: AgentRef<R>
  readonly options: HandoffOptions
}

/**
 * A tool result that passes the floor to `target` once the whole batch of tool calls has settled.
 * Return it from a handler when the handoff depends on the call (`Tool.handoff` makes a tool that
 * always hands off).
 *
 * @since 0.1.0
 * @category constructors
 */
export const to = <R = never>(target: AgentRef<R>, options: HandoffOptions = {}): Handoff<R> => ({
  _tag: "Handoff",
  target,
  options
})

/**
 * What a tool handler's result hands the floor to needs: the target of a `Handoff`, or an agent
 * returned as it is (nothing for results of type `any`, which say nothing, or `unknown`).
 *
 * @since 0.1.0
 * @category utils
 */
export type TargetRequirements<A> = 0 extends (1 & A) ? never
  : A extends Handoff<infer R> ? R
  : A extends Agent<infer R> ? R
  : never

/**
 * Whether `u` is a handoff result made by `to`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isHandoff = (u: unknown): u is Handoff =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "Handoff" && "target" in u
