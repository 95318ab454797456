/**
 * Mock tools for tests: replace what some of an agent's tools do without rebuilding the agent.
 * `MockTools.layer(agent, { lookup_order: (params) => Effect.succeed(...) })` is a Layer; provided
 * where the session starts, each call of a mocked tool by that agent runs the mock instead of
 * the tool's handler (looked up as the call starts). Everything else of the tool stays: its
 * name and parameters as the model sees them, decoding, duplicate policy, cancellation and
 * timeout. A mock is typed by the tool it replaces (its parameters and its result), and a name the
 * agent has no tool for is a type error, and an `Error` when the layer is made.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Effect, Layer } from "effect"
import type { Agent, WithTools } from "./Agent.ts"
import type { CurrentAgent } from "./CurrentAgent.ts"
import type * as Tool from "./Tool.ts"

/**
 * A mock of a tool with parameters `P`, result `A` and requirements `R`: called as the handler
 * would be.
 *
 * @since 0.1.0
 * @category models
 */
export type Mock<P, A, R> = (params: P, context: Tool.ToolContext<unknown>) => Effect.Effect<A, unknown, R | CurrentAgent>

/** The tools of an agent's type: those `Agent.make` saw, or any tool for an agent typed without them. */
type ToolsOf<A> = A extends WithTools<infer T>
  ? unknown extends T ? Tool.Tool<unknown, unknown> : T extends ReadonlyArray<infer I> ? Extract<I, Tool.Tool<any, any, any, any>> : never
  : Tool.Tool<unknown, unknown>

/**
 * The mocks `layer` takes for `agent`: by tool name, each typed by its tool. An agent typed
 * without its tools (`const a: Agent.Agent = ...`) takes any name, checked when the layer is made.
 *
 * @since 0.1.0
 * @category models
 */
export type Mocks<A> = {
  readonly [T in ToolsOf<A> as T["name"]]?: T extends Tool.Tool<infer P, infer R, infer Out, string> ? Mock<P, Out, R> : never
}

type AnyHandler = Mock<unknown, unknown, unknown>

/**
 * The mocks in force: by agent, by tool name. Empty unless a test provides `layer`.
 *
 * @since 0.1.0
 * @category models
 */
export type Registry = ReadonlyMap<Agent<unknown>, ReadonlyMap<string, AnyHandler>>

const none: Registry = new Map()

/**
 * The mocks a session's tool calls see (a `Context.Reference`, empty by default): `layer` adds
 * to it, and a call reads it as it starts.
 *
 * @since 0.1.0
 * @category references
 */
export const CurrentMocks = Context.Reference<Registry>("baton/MockTools", { defaultValue: () => none })

/**
 * A Layer that replaces the handlers of `agent`'s tools named in `mocks`, for sessions started
 * where it is provided. Layers for several agents nest (each adds to those around it); for the
 * same agent, the inner one's mocks win by name. Throws when a name is none of the agent's tools
 * or a mock is not a function.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { AgentSession } from "@baton-voice/baton"
 * import { MockTools } from "@baton-voice/baton/testing"
 *
 * const test = Effect.gen(function*() {
 *   const session = yield* AgentSession.start({ agent: support })
 *   const result = yield* session.run("where is order 42?")
 *   result.expect.containsFunctionCallOutput({ name: "lookup_order", output: "shipped" })
 * }).pipe(Effect.provide(MockTools.layer(support, { lookup_order: ({ id }) => Effect.succeed(`${id}: shipped`) })))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <A extends Agent<any>>(agent: A, mocks: NoInfer<Mocks<A>>): Layer.Layer<never> => {
  const names = new Set(agent.tools.map((tool) => tool.name))
  const handlers = new Map<string, AnyHandler>()
  for (const [name, mock] of Object.entries(mocks as Record<string, unknown>)) {
    if (!names.has(name)) {
      const known = [...names].join(", ") || "none"
      throw new Error(`MockTools: agent "${agent.name}" has no tool named "${name}" (its tools: ${known})`)
    }
    if (typeof mock !== "function") throw new Error(`MockTools: the mock of "${name}" for "${agent.name}" is not a function`)
    handlers.set(name, mock as AnyHandler)
  }
  // The mocks around this layer stay: layers for several agents nest.
  return Layer.effect(
    CurrentMocks,
    Effect.gen(function*() {
      const outer = yield* CurrentMocks
      const merged = new Map(outer)
      merged.set(agent, new Map([...(outer.get(agent) ?? []), ...handlers]))
      return merged as Registry
    })
  )
}

/**
 * The mock a call of the tool `name` by `agent` runs under `registry` instead of the tool's
 * handler, if there is one.
 *
 * @since 0.1.0
 * @category utils
 */
export const mockFor = (registry: Registry | undefined, agent: Agent<any>, name: string): Mock<unknown, unknown, unknown> | undefined =>
  registry === undefined || registry === none ? undefined : registry.get(agent)?.get(name)
