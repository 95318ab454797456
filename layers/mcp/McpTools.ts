/**
 * An MCP tool as a baton tool: the server's JSON Schema is what the model sees, the arguments are
 * checked against it before any request (bad ones are an answer to the model, not a request), the
 * call is a `tools/call` that reports the server's progress as the tool's progress and that an
 * interruption (barge-in, handoff, close) cancels with `notifications/cancelled`, and the result's
 * content becomes the text the model reads.
 */
import { Duration, Effect, Queue, Schema } from "effect"
import { Tool as AiTool } from "effect/ai"
import type { CallToolResult, Progress, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import * as ToolSchema from "../../services/ToolSchema.ts"
import * as Tool from "../../src/Tool.ts"
import type { Connection } from "./McpClient.ts"
import { fromSdk } from "./McpError.ts"

/** What shapes the tools of one server. */
export interface ToolOptions {
  /** Put before each tool's name (the names of two servers may collide). */
  readonly prefix: string
  /** Longest a call may take (the SDK's default: 60 seconds). */
  readonly timeout: Duration.Duration | undefined
  /** Whether the model may cancel a call that went on in the background. */
  readonly cancellable: boolean
  /** Waits for the list refreshes the server has asked for (run after each call). */
  readonly settled: Effect.Effect<void>
}

/** A baton tool's name for an MCP tool's: MCP allows dots and 128 characters, baton neither. */
export const batonName = (prefix: string, name: string): string =>
  `${prefix}${name}`.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64)

const Arguments = Schema.Record(Schema.String, Schema.Unknown)

/**
 * The baton tools for a server's list (the first of a name wins); a tool whose input schema no
 * model can take (not an object) is left out with a warning.
 */
export const toTools = (connection: Connection, tools: ReadonlyArray<McpTool>, options: ToolOptions): Effect.Effect<ReadonlyArray<Tool.Tool<unknown, never>>> =>
  Effect.gen(function*() {
    const made = new Map<string, Tool.Tool<unknown, never>>()
    for (const tool of tools) {
      const name = batonName(options.prefix, tool.name)
      if (made.has(name)) continue
      const converted = toTool(connection, tool, name, options)
      if (converted === undefined) {
        yield* Effect.logWarning(`MCP server "${connection.server}": tool ${tool.name} left out, its inputSchema is not an object schema`)
        continue
      }
      made.set(name, converted)
    }
    return [...made.values()]
  })

const toTool = (connection: Connection, mcp: McpTool, name: string, options: ToolOptions): Tool.Tool<unknown, never> | undefined => {
  const description = mcp.description ?? mcp.title ?? mcp.name
  const definition = AiTool.dynamic(name, { description, parameters: mcp.inputSchema as Record<string, unknown> })
  try {
    ToolSchema.parametersOf(definition)
  } catch {
    return undefined
  }
  const validate = connection.validator.getValidator<Record<string, unknown>>(mcp.inputSchema as never)
  const base = Tool.make(name, {
    description,
    parameters: Arguments,
    cancellable: options.cancellable,
    handler: (params, context) =>
      Effect.gen(function*() {
        const checked = validate(params)
        if (!checked.valid) {
          return yield* new Tool.InvalidArguments({ message: `Invalid arguments for ${name}: ${checked.errorMessage}` })
        }
        return yield* call(connection, mcp.name, checked.data, options, context.progress)
      })
  })
  // The model sees the server's own schema (the codec above only checks that it is an object).
  return { ...base, definition } as Tool.Tool<unknown, never>
}

/**
 * One `tools/call`. Progress notifications go to the tool's `progress` in order (the first one
 * answers the call and it goes on in the background); interrupting the call aborts the SDK's
 * request, which sends `notifications/cancelled` for it.
 */
const call = (
  connection: Connection,
  name: string,
  args: Record<string, unknown>,
  options: ToolOptions,
  progress: (message: string) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const reports = yield* Queue.unbounded<string>()
    // A child of the call: it ends with the call.
    yield* Effect.forkChild(Effect.forever(Effect.flatMap(Queue.take(reports), progress)))
    const result = yield* Effect.tryPromise({
      try: (signal) =>
        connection.client.callTool({ name, arguments: args }, undefined, {
          signal,
          onprogress: (report) => void Queue.offerUnsafe(reports, progressText(report)),
          resetTimeoutOnProgress: true,
          ...(options.timeout !== undefined ? { timeout: Duration.toMillis(options.timeout) } : {})
        }),
      catch: (error) => fromSdk(connection.server, `the call of ${name}`, error)
    })
    yield* options.settled
    const text = contentText(result as CallToolResult)
    if (result.isError === true) return yield* new Tool.ToolError({ message: `${name} failed: ${text}` })
    return text
  })

const progressText = (report: Progress): string =>
  report.message ?? (report.total !== undefined ? `${report.progress} of ${report.total}` : `progress ${report.progress}`)

/** The text the model reads for a result: its text items, a line for each other kind of item,
 * and the structured content when there is no text. */
export const contentText = (result: CallToolResult): string => {
  const parts: Array<string> = []
  for (const item of result.content ?? []) {
    switch (item.type) {
      case "text":
        parts.push(item.text)
        break
      case "image":
      case "audio":
        parts.push(`[${item.type} ${item.mimeType}]`)
        break
      case "resource_link":
        parts.push(`[resource ${item.name} ${item.uri}]`)
        break
      case "resource":
        parts.push("text" in item.resource && typeof item.resource.text === "string" ? item.resource.text : `[resource ${item.resource.uri}]`)
        break
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent)
  return parts.join("\n")
}
