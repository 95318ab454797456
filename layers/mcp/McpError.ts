/**
 * What can go wrong with an MCP server, as one error with a reason: it could not be started or
 * reached (`Unavailable`), it answered a request with a JSON-RPC error (`Protocol`), it went away
 * (`Disconnected`), or it did not answer in time (`Timeout`). A tool call that fails this way is
 * an error output the model reads and an `error` event; a tool that answers `isError` is only the
 * former (it is the tool's own answer).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Schema } from "effect"

/**
 * Why an MCP request failed.
 *
 * @since 0.1.0
 * @category models
 */
export const McpErrorReason = Schema.Literals(["Unavailable", "Protocol", "Disconnected", "Timeout"])

/**
 * @since 0.1.0
 * @category models
 */
export type McpErrorReason = typeof McpErrorReason.Type

/**
 * An MCP server's failure: which server, why, and one line saying what happened and the fix.
 *
 * @since 0.1.0
 * @category errors
 */
export class McpError extends Schema.TaggedError<McpError>()("McpError", {
  server: Schema.String,
  reason: McpErrorReason,
  message: Schema.String
}) {}

/** The JSON-RPC codes the SDK uses for a closed connection and a request that timed out. */
const CONNECTION_CLOSED = -32000
const REQUEST_TIMEOUT = -32001

/** An error the SDK raised for a request to `server`, with its reason. */
export const fromSdk = (server: string, what: string, error: unknown): McpError => {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined
  const text = firstLine(error)
  if (code === CONNECTION_CLOSED || /not connected|connection closed/i.test(text)) {
    return new McpError({ server, reason: "Disconnected", message: `MCP server "${server}" is gone (${what}: ${text}); it is reconnected when the agent starts again` })
  }
  if (code === REQUEST_TIMEOUT) {
    return new McpError({ server, reason: "Timeout", message: `MCP server "${server}" did not answer ${what} in time (${text})` })
  }
  return new McpError({ server, reason: "Protocol", message: `MCP server "${server}" refused ${what}: ${text}` })
}

/** The first line of an error's message (no stack trace in a message). */
export const firstLine = (error: unknown): string =>
  String(error instanceof Error ? error.message : error).split("\n")[0]!
