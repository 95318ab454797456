/**
 * Toolsets: tools an agent gets when its actor starts rather than when the agent is written (an
 * MCP server's, see `@baton-voice/baton/mcp`). A toolset goes in an agent's `tools` beside its
 * tools; each actor of the agent opens it in its own Scope before it handles anything, so what
 * it holds (a connection, a child process) closes with the actor. Its list may change while the
 * actor runs: each model call offers the tools it has then.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Effect, Schema, type Scope } from "effect"
import * as Tool from "./Tool.ts"

/**
 * What an open toolset offers: its tools as they are now, and a count that grows each time they
 * change (so the actor rebuilds its list only then).
 *
 * @since 0.1.0
 * @category models
 */
export interface Source {
  readonly tools: () => ReadonlyArray<Tool.Tool<unknown, never>>
  readonly version: () => number
}

/**
 * A toolset that could not be opened: which one, and one line saying why and what fixes it.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolsetError extends Schema.TaggedError<ToolsetError>()("ToolsetError", {
  toolset: Schema.String,
  message: Schema.String
}) {}

/**
 * A toolset: a name (for errors) and how to open it in an actor's Scope. `R` is what opening it
 * needs, carried like a tool's, so an agent holding it needs `R` too.
 *
 * @since 0.1.0
 * @category models
 */
export interface Toolset<out R = never> extends Tool.Variance<R> {
  readonly _tag: "Toolset"
  readonly name: string
  readonly open: Effect.Effect<Source, ToolsetError, R | Scope.Scope>
}

/**
 * Any toolset, as a list of an agent's tools is constrained.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Omit<Toolset<unknown>, Tool.TypeId> {
  readonly [Tool.TypeId]: { readonly _R: unknown }
}

const variance: Tool.Variance<unknown>[Tool.TypeId] = { _R: (_: never) => _ }

/**
 * Makes a toolset from its name and the effect that opens it (in the actor's Scope).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <R = never>(
  name: string,
  open: Effect.Effect<Source, ToolsetError, R | Scope.Scope>
): Toolset<Exclude<R, Scope.Scope>> =>
  ({ [Tool.TypeId]: variance, _tag: "Toolset", name, open }) as Toolset<Exclude<R, Scope.Scope>>

/**
 * Whether `u` is a toolset made by `make`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isToolset = (u: unknown): u is Toolset<unknown> =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "Toolset"
