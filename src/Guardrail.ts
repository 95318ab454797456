/**
 * Guardrails: checks on what an agent is about to say and on its tool calls, each with a policy
 * for when it trips.
 *
 * - `output` checks a reply's text as it streams: on each sentence end, and otherwise `every`
 *   so often (debounced), and once more when the reply ends. A trip cuts the speech as a barge-in
 *   does (what was heard stays in the history, nothing after it is said).
 * - `toolInput` checks a call's decoded arguments before its handler runs; a trip answers the
 *   call with an error output and the handler does not run.
 * - `toolOutput` checks a handler's result (as the model would read it) before it is recorded; a
 *   trip replaces it with an error output.
 *
 * A trip emits `guardrail_tripped` and runs the policy: `say(line)` (a fixed line, after the
 * cut), `handoff(agent)`, or `endCall` (the call's `CallControl` hangs up when the session has
 * one, else the session closes). Agent guardrails go in `Agent.make({ guardrails })`; output
 * guardrails may also be given to the whole session (`AgentSession.start({ guardrails })`).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Duration, Effect } from "effect"
import type { Agent } from "./Agent.ts"

/**
 * What to do when a guardrail trips. `R`: what the agent a `handoff` policy hands the floor to
 * needs; the agent (or session) the guardrail is given to needs it too.
 *
 * @since 0.1.0
 * @category models
 */
export type Policy<R = never> =
  | { readonly _tag: "Say"; readonly text: string }
  | { readonly _tag: "Handoff"; readonly agent: Agent<R> | (() => Agent<R>) }
  | { readonly _tag: "EndCall"; readonly reason: string }

/**
 * Say a fixed line once the speech is cut.
 *
 * @since 0.1.0
 * @category policies
 */
export const say = (text: string): Policy => ({ _tag: "Say", text })

/**
 * Hand the floor to `agent` (a thunk for agents defined later). What `agent` needs becomes a
 * requirement of the guardrail, and so of the agent or session it is given to.
 *
 * @since 0.1.0
 * @category policies
 */
export const handoff = <R = never>(agent: Agent<R> | (() => Agent<R>)): Policy<R> => ({ _tag: "Handoff", agent })

/**
 * End the call: hang up through the session's `CallControl` when it has one, else close it.
 *
 * @since 0.1.0
 * @category policies
 */
export const endCall = (reason = "a guardrail ended the call"): Policy => ({ _tag: "EndCall", reason })

/**
 * A check's verdict: `undefined` lets it pass; a string trips the guardrail and says why.
 *
 * @since 0.1.0
 * @category models
 */
export type Verdict = string | undefined

/**
 * A call as a tool guardrail sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolCallSeen {
  readonly callId: string
  readonly tool: string
  /** The decoded arguments (a tool input guardrail) or the raw ones (a tool output guardrail). */
  readonly arguments: unknown
}

/**
 * A guardrail on a reply's text.
 *
 * @since 0.1.0
 * @category models
 */
export interface OutputGuardrail<out R = never> {
  readonly _tag: "Guardrail"
  readonly kind: "output"
  readonly name: string
  readonly check: (text: string) => Effect.Effect<Verdict>
  readonly policy: Policy<R>
  /** How long new text waits for a check when no sentence ends (default 250 ms). */
  readonly every: Duration.Duration
}

/**
 * A guardrail on a tool call's arguments.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolInputGuardrail<out R = never> {
  readonly _tag: "Guardrail"
  readonly kind: "tool_input"
  readonly name: string
  readonly check: (call: ToolCallSeen) => Effect.Effect<Verdict>
  readonly policy: Policy<R>
}

/**
 * A guardrail on a tool call's result, as the model would read it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolOutputGuardrail<out R = never> {
  readonly _tag: "Guardrail"
  readonly kind: "tool_output"
  readonly name: string
  readonly check: (call: ToolCallSeen & { readonly output: unknown }) => Effect.Effect<Verdict>
  readonly policy: Policy<R>
}

/**
 * Any guardrail; `R` is what its policy's handoff target needs.
 *
 * @since 0.1.0
 * @category models
 */
export type Guardrail<R = never> = OutputGuardrail<R> | ToolInputGuardrail<R> | ToolOutputGuardrail<R>

/**
 * What a list of guardrails needs: the union of their handoff targets' requirements.
 *
 * @since 0.1.0
 * @category utils
 */
export type Requirements<G> = G extends ReadonlyArray<infer Item> ? Item extends { readonly policy: Policy<infer R> } ? R : never
  : never

/**
 * A guardrail on what the agent says.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Guardrail } from "@baton-voice/baton"
 *
 * const noPrices = Guardrail.output("no_prices", {
 *   check: (text) => Effect.succeed(/\$\d/.test(text) ? "quoted a price" : undefined),
 *   policy: Guardrail.say("I can't quote prices; a colleague will follow up.")
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const output = <R = never>(
  name: string,
  options: { readonly check: (text: string) => Effect.Effect<Verdict>; readonly policy: Policy<R>; readonly every?: Duration.Input }
): OutputGuardrail<R> => ({
  _tag: "Guardrail",
  kind: "output",
  name,
  check: options.check,
  policy: options.policy,
  every: everyOf(name, options.every ?? "250 millis")
})

/**
 * A guardrail on a tool call's arguments, before its handler runs.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolInput = <R = never>(
  name: string,
  options: { readonly check: (call: ToolCallSeen) => Effect.Effect<Verdict>; readonly policy: Policy<R> }
): ToolInputGuardrail<R> => ({ _tag: "Guardrail", kind: "tool_input", name, check: options.check, policy: options.policy })

/**
 * A guardrail on a tool call's result, before the model reads it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolOutput = <R = never>(
  name: string,
  options: { readonly check: (call: ToolCallSeen & { readonly output: unknown }) => Effect.Effect<Verdict>; readonly policy: Policy<R> }
): ToolOutputGuardrail<R> => ({ _tag: "Guardrail", kind: "tool_output", name, check: options.check, policy: options.policy })

const everyOf = (name: string, input: Duration.Input): Duration.Duration => {
  const duration = Duration.fromInput(input)
  if (duration._tag === "None" || !Duration.isGreaterThan(duration.value, Duration.zero)) {
    throw new Error(`Guardrail "${name}": every must be a positive duration such as "250 millis", got ${String(input)}`)
  }
  return duration.value
}
