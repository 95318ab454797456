/**
 * MCP servers as toolsets: `Mcp.toolset(...)` goes in an agent's `tools`, and each actor of the
 * agent connects to the server when it starts (a child process over stdio, or streamable HTTP),
 * lists its tools and offers them to its model with the server's JSON Schemas. When the server
 * says its list changed, the list is fetched again and the next model call sees it. The
 * connection (and the child process) closes with the actor's Scope.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Deferred, Duration, Effect, Exit, Queue } from "effect"
import * as Toolset from "../../src/Toolset.ts"
import type * as Tool from "../../src/Tool.ts"
import * as McpClient from "./McpClient.ts"
import * as McpTools from "./McpTools.ts"

export { McpError, McpErrorReason } from "./McpError.ts"
export type { HttpTransport, StdioTransport, Transport } from "./McpClient.ts"

/**
 * What `toolset` takes: the server's name (in errors and logs), how to reach it, and how its
 * tools look to the model.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolsetOptions {
  readonly name: string
  readonly transport: McpClient.Transport
  /** Put before each tool's name, so two servers' tools cannot collide (default none). */
  readonly prefix?: string | undefined
  /** Longest a request may take (the handshake, a listing, a tool call, where progress reports
   * restart it); default 60 seconds, the SDK's. */
  readonly timeout?: Duration.Input | undefined
  /** Whether the model may cancel a call that went on in the background (default false). */
  readonly cancellable?: boolean | undefined
}

/**
 * An MCP server's tools, for an agent's `tools`. Opening it (when an actor of the agent starts)
 * fails with a `ToolsetError` naming the server and the fix when the server cannot be started or
 * reached; the session reports it as an `error` event and the agent goes on without those tools.
 *
 * @example
 * ```ts
 * import { Agent } from "@baton-voice/baton"
 * import { Mcp } from "@baton-voice/baton/mcp"
 *
 * const assistant = Agent.make({
 *   name: "assistant",
 *   instructions: "Help with the user's files.",
 *   tools: [Mcp.toolset({ name: "files", transport: { stdio: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"] } } })]
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolset = (options: ToolsetOptions): Toolset.Toolset =>
  Toolset.make(
    options.name,
    open(options).pipe(Effect.mapError((error) => new Toolset.ToolsetError({ toolset: options.name, message: error.message })))
  )

const open = (options: ToolsetOptions) =>
  Effect.gen(function*() {
    const state: State = { tools: [], version: 0, asked: 0, applied: 0, refreshed: Deferred.makeUnsafe<void>() }
    const toolOptions: McpTools.ToolOptions = {
      prefix: options.prefix ?? "",
      timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
      cancellable: options.cancellable ?? false,
      settled: settled(state)
    }
    // list_changed notifications, coalesced: one waiting refresh covers any number of them.
    const changed = yield* Queue.sliding<void>(1)
    const connection = yield* McpClient.connect(options.name, options.transport, () => {
      state.asked++
      Queue.offerUnsafe(changed, undefined)
    }, toolOptions.timeout === undefined ? undefined : Duration.toMillis(toolOptions.timeout))
    const refresh = Effect.suspend(() => {
      const asked = state.asked
      return Effect.gen(function*() {
        const listed = yield* McpClient.listTools(connection)
        state.tools = yield* McpTools.toTools(connection, listed, toolOptions)
        state.version++
      }).pipe(Effect.ensuring(Effect.sync(() => applied(state, asked))))
    })
    yield* refresh
    // Lives in the actor's Scope, so it ends with the connection. A failed refresh keeps the
    // last list (the next notification tries again).
    yield* Effect.forkScoped(Effect.forever(Queue.take(changed).pipe(
      Effect.andThen(refresh),
      Effect.catch((error) => Effect.logWarning(`${error.message}; keeping its earlier tools`))
    )))
    const source: Toolset.Source = { tools: () => state.tools, version: () => state.version }
    return source
  })

/** A server's tools and where their refreshes are: `asked` counts list_changed notifications,
 * `applied` how many of them the last finished refresh covered. */
interface State {
  tools: ReadonlyArray<Tool.Tool<unknown, never>>
  version: number
  asked: number
  applied: number
  /** Completed (and replaced) each time a refresh finishes. */
  refreshed: Deferred.Deferred<void>
}

const applied = (state: State, asked: number) => {
  state.applied = Math.max(state.applied, asked)
  const done = state.refreshed
  state.refreshed = Deferred.makeUnsafe<void>()
  Deferred.doneUnsafe(done, Exit.void)
}

/** Waits until the refreshes asked for so far have finished: a call during which the server
 * changed its list returns after the new list is in, so the model's next call sees it. */
const settled = (state: State): Effect.Effect<void> =>
  Effect.suspend(() => {
    const target = state.asked
    const wait: Effect.Effect<void> = Effect.suspend(() =>
      state.applied >= target ? Effect.void : Effect.andThen(Deferred.await(state.refreshed), wait)
    )
    return wait
  })
