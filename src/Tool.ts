/**
 * Tools: a name, a description, parameters as a Schema (the model gets the JSON Schema of it)
 * and a handler Effect. A handler ends with
 * - a value: the model sees it (strings as they are, anything else as JSON);
 * - a `ToolError` failure: the model sees its message and can act on it;
 * - a handoff (`Handoff.to(agent, ...)`, or the agent value itself): the floor passes to that
 *   agent once the whole batch has settled;
 * - `Tool.noReply(output?)`: the output is recorded but the agent does not reply to it.
 * Any other failure or defect becomes an error output too, and an `error` event.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import * as ToolSchema from "../services/ToolSchema.ts"
import { Duration, Effect, Schema, type Types } from "effect"
import { Tool as AiTool } from "effect/ai"
import type { Agent } from "./Agent.ts"
import type { AgentSession } from "./AgentSession.ts"
import type { CurrentAgent } from "./CurrentAgent.ts"
import * as Handoff from "./Handoff.ts"
import type { SpeechHandle } from "./Speech.ts"
import * as ToolOutput from "./ToolOutput.ts"

/**
 * The error a handler fails with to tell the model something went wrong, in words it can use.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  message: Schema.String
}) {}

/**
 * The call a handler runs for: its id, the tool's name and the raw arguments.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolCallInfo {
  readonly id: string
  readonly name: string
  /** The raw arguments as the model sent them. */
  readonly arguments: string
}

/**
 * What a handler gets besides its decoded parameters.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolContext<U = unknown> {
  readonly call: ToolCallInfo
  readonly agent: Agent
  readonly session: AgentSession<U>
  readonly userdata: U
  /** The reply whose model response made the call. */
  readonly speech: SpeechHandle
  /**
   * Reports progress of a long-running tool. The first report is the call's output (the agent
   * can say "please hold on") and the handler goes on in the background; later reports and the
   * final value (or handoff) are told to the agent when it holds the floor and is idle.
   */
  readonly progress: (message: string) => Effect.Effect<void>
}

/**
 * What to do when the model calls a tool that is still running from an earlier call.
 *
 * @since 0.1.0
 * @category models
 */
export type DuplicatePolicy = "allow" | "reject" | "replace"

/**
 * How a tool behaves when called again while it runs, whether the model may cancel it, and how
 * long a call may run.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolOptions {
  /** When the model calls it while an earlier call still runs in the background (default "allow"). */
  readonly onDuplicate?: DuplicatePolicy | undefined
  /** The model may cancel it while it runs (baton then offers the cancel tool). */
  readonly cancellable?: boolean | undefined
  /**
   * How long a call may run ("5 seconds", a `Duration`; default: no limit). A handler still
   * running then is interrupted, the call is answered with an error output telling the model it
   * timed out, and an `error` event (source `tool`, reason `Timeout`) says so. For a long-running
   * tool it bounds the whole run up to its final result: its first progress report answers the
   * call as usual, and a handler still running at the limit is stopped and its final result is the
   * timeout. The same limit applies to a handler replaced by `MockTools`.
   */
  readonly timeout?: Duration.Input | undefined
  /**
   * The call waits for approval before its handler runs (`true`, or a predicate over the decoded
   * arguments). It emits `tool_approval_requested`; `session.approve(callId)` runs it and
   * `session.reject(callId, { reason })` answers the model that it was not approved. While it
   * waits the session is busy (`run` does not resolve, rule 10); the user speaking over it or its
   * agent passing the floor rejects it, and a close answers it as cancelled (rule 4). A `timeout`
   * counts the wait too.
   */
  readonly needsApproval?: NeedsApproval<unknown, unknown> | undefined
}

/**
 * Whether a call needs approval: always, or as a predicate decides from its arguments.
 *
 * @since 0.1.0
 * @category models
 */
export type NeedsApproval<P, R> = boolean | ((params: P, context: ToolContext<unknown>) => Effect.Effect<boolean, unknown, R>)

/**
 * A tool: its parameters `P` and the services `R` its handler needs (besides `CurrentAgent`,
 * which the session provides) and its handoff targets need. An agent with this tool needs `R`,
 * and so does `AgentSession.start` with that agent, so a missing Layer is a compile error.
 * `A` is what its handler succeeds with and `N` its name (as `Tool.make` was given them, so a
 * mock of it in a test is checked against them). `Tool<unknown, unknown>` is any tool.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tool<out P = unknown, out R = never, out A = unknown, out N extends string = string> extends Variance<R> {
  readonly _tag: "Tool"
  readonly name: N
  readonly description: string
  readonly parameters: Schema.Codec<P, unknown, never, never>
  /** Called with what `parameters` decoded (a method, so a `Tool<P>` is a `Tool<unknown>`). */
  handler(params: P, context: ToolContext<unknown>): Effect.Effect<A, unknown, R | CurrentAgent>
  readonly options: ToolOptions
  /** The `effect/ai` definition sent to models (JSON Schema of the parameters). */
  readonly definition: AiTool.Any
}

/**
 * Tags tools; under it, `Variance` carries what a tool needs for the type checker.
 *
 * @since 0.1.0
 * @category type ids
 */
export const TypeId = "~baton/Tool" as const

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * The variance of `Tool<P, R>` in `R`: a tool needing `R` is a tool needing `R | R2`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Variance<out R> {
  readonly [TypeId]: { readonly _R: Types.Covariant<R> }
}

/**
 * What a tool needs (`never` for anything else).
 *
 * @since 0.1.0
 * @category utils
 */
export type Requirements<T> = T extends Variance<infer R> ? R : never

/**
 * Any tool, as a list of tools is constrained (`Agent.make`'s `tools`): it says nothing of what
 * the tool needs, so a `Tool.make` in the list infers its `R` from its handler alone (from
 * `Tool<unknown, unknown>`, a handler that only throws would infer `unknown`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Omit<Tool<unknown>, TypeId | "handler"> {
  readonly [TypeId]: { readonly _R: unknown }
}

const variance: Variance<unknown>[TypeId] = { _R: (_: never) => _ }

const NoParameters = Schema.Struct({})

const NAME = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * Defines a tool. The handler's services come from the Layers provided to the program that
 * started the session.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Tool } from "@baton-voice/baton"
 *
 * const lookupWeather = Tool.make("lookup_weather", {
 *   description: "Weather for a city",
 *   parameters: Schema.Struct({ city: Schema.String }),
 *   handler: ({ city }) => Effect.succeed(`Sunny in ${city}, 21°C`)
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <
  S extends Schema.Codec<unknown, unknown, never, never> = typeof NoParameters,
  U = unknown,
  A = unknown,
  R = never,
  const N extends string = string
>(
  name: N,
  options: {
    readonly description: string
    readonly parameters?: S
    readonly handler: (params: S["Type"], context: ToolContext<U>) => Effect.Effect<A, unknown, R>
    readonly needsApproval?: NeedsApproval<S["Type"], R>
  } & Omit<ToolOptions, "needsApproval">
): Tool<S["Type"], Exclude<R | Handoff.TargetRequirements<A>, CurrentAgent>, A, N> => {
  if (!NAME.test(name)) {
    throw new Error(`Tool name "${name}" must be 1-64 characters of letters, digits, _ or -`)
  }
  const timeout = options.timeout === undefined ? undefined : timeoutOf(name, options.timeout)
  const parameters = (options.parameters ?? NoParameters) as unknown as Schema.Codec<S["Type"], unknown, never, never>
  const definition = AiTool.make(name, { description: options.description, parameters: options.parameters ?? NoParameters })
  // A top-level union or primitive is no function's parameters for any provider: say so now.
  ToolSchema.parametersOf(definition)
  const tool: Tool<S["Type"], unknown, A, N> = {
    [TypeId]: variance,
    _tag: "Tool",
    name,
    description: options.description,
    parameters,
    // The handler's context is the session's (its userdata is the session's `U`).
    handler: options.handler as Tool<S["Type"], unknown, A, N>["handler"],
    // Every field present (undefined when not given): one shape for every tool's options, read
    // on each call.
    options: {
      onDuplicate: options.onDuplicate,
      cancellable: options.cancellable,
      timeout,
      needsApproval: options.needsApproval !== undefined && options.needsApproval !== false
        ? options.needsApproval as NeedsApproval<unknown, unknown>
        : undefined
    },
    definition
  }
  // What the handler needs, less the `CurrentAgent` the session provides, plus what the agents
  // it hands off to need (which TypeScript cannot see through the handler's `R` alone).
  return tool as Tool<S["Type"], Exclude<R | Handoff.TargetRequirements<A>, CurrentAgent>, A, N>
}

/** A tool's timeout as a `Duration`: a bad or non-positive one is refused when the tool is made. */
const timeoutOf = (name: string, input: Duration.Input): Duration.Duration => {
  const duration = Duration.fromInput(input)
  if (duration._tag === "None" || !Duration.isGreaterThan(duration.value, Duration.zero)) {
    throw new Error(`Tool "${name}": timeout must be a positive duration such as "5 seconds", got ${String(input)}`)
  }
  return duration.value
}

/**
 * A tool that hands off to `target` (a thunk, so agents can refer to each other in a cycle). It
 * needs what the target needs, so an agent reached by a handoff is checked too.
 *
 * @since 0.1.0
 * @category constructors
 */
export const handoff = <R = never, const N extends string = string>(
  name: N,
  target: Agent<R> | (() => Agent<R>),
  options: Handoff.HandoffOptions & { readonly description?: string } = {}
): Tool<{}, R, Handoff.Handoff<R>, N> =>
  make(name, {
    description: options.description ?? `Transfer the conversation to another agent (${name}).`,
    handler: () => Effect.succeed(Handoff.to(target, options))
  })

/**
 * A tool result recorded as the call's output without a reply from the agent. Made by `noReply`.
 *
 * @since 0.1.0
 * @category models
 */
export interface NoReply {
  readonly _tag: "NoReply"
  readonly output: unknown
}

/**
 * The call's output is recorded, but the agent does not generate a reply for it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const noReply = (output: unknown = "done"): NoReply => ({ _tag: "NoReply", output })

/**
 * Whether `u` is a result made by `noReply`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isNoReply = (u: unknown): u is NoReply =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "NoReply" && "output" in u

/** The text the model sees for a handler's value (see `ToolOutput.render`, which also says
 * when a value cannot be read).
 *
 * @since 0.1.0
 * @category utils
 */
export const render = (value: unknown): string => ToolOutput.render("the tool", value).text

/**
 * Why arguments were rejected, worded for the model.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidArguments extends Schema.TaggedError<InvalidArguments>()("InvalidArguments", {
  message: Schema.String
}) {}

/**
 * Decodes the model's arguments with the JSON codec of the tool's schema (the codec its JSON
 * Schema describes), reporting every issue.
 *
 * @since 0.1.0
 * @category utils
 */
export const decodeArguments = <P>(tool: Tool<P, unknown>, raw: string): Effect.Effect<P, InvalidArguments> => {
  const parsed = parseJson(raw)
  if (!parsed.ok) {
    return Effect.fail(
      new InvalidArguments({ message: `Arguments for ${tool.name} are not valid JSON: ${truncate(raw, 200)}` })
    )
  }
  const value = parsed.value
  // A tool without parameters takes any object (extra keys dropped, as a struct's decoder does)
  // and nothing else: its schema says `type: object` (Struct({}) alone would take any value).
  if ((tool.parameters as Schema.Top) === NoParameters) {
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? Effect.succeed({} as P)
      : Effect.fail(new InvalidArguments({ message: `Invalid arguments for ${tool.name}: expected an object, got ${truncate(String(raw), 200)}` }))
  }
  return decoderOf(tool.parameters)(value, { errors: "all" }).pipe(
    Effect.mapError((error) =>
      new InvalidArguments({ message: `Invalid arguments for ${tool.name}: ${error.message}` })
    )
  )
}

/** One decoder per schema: building the JSON codec costs far more than decoding with it
 * (about 70 µs per call before the JIT has warmed up, 6 µs after). */
const decoders = new WeakMap<Schema.Top, (input: unknown, options: { readonly errors: "all" }) => Effect.Effect<unknown, Schema.SchemaError>>()

const decoderOf = <P>(schema: Schema.Codec<P, any>) => {
  let decoder = decoders.get(schema)
  if (!decoder) {
    decoder = Schema.decodeUnknownEffect(Schema.toCodecJson(schema)) as NonNullable<typeof decoder>
    decoders.set(schema, decoder)
  }
  return decoder as (input: unknown, options: { readonly errors: "all" }) => Effect.Effect<P, Schema.SchemaError>
}

const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  // No arguments, the common case (a transfer tool), without a trip through the parser.
  if (text === "{}" || text.trim() === "") return { ok: true, value: {} }
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

const truncate = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text)
