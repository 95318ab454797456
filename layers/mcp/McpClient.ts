/**
 * One connection to an MCP server through `@modelcontextprotocol/sdk` (an optional peer, loaded
 * when a toolset opens): the transport (a child process over stdio, or streamable HTTP), the
 * `initialize` handshake, paged `tools/list`, and the close that ends it (stdin closed, then
 * SIGTERM, then SIGKILL for a child; DELETE of the HTTP session). Acquired in a Scope: closing
 * the Scope closes the connection, so no child process outlives the actor that started it.
 */
import { Effect, Redacted, type Scope } from "effect"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js"
import { importPeer } from "../rtc/RtcNode.ts"
import { firstLine, fromSdk, McpError } from "./McpError.ts"

/**
 * A server baton starts as a child process and talks to over its stdin and stdout.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioTransport {
  readonly stdio: {
    readonly command: string
    readonly args?: ReadonlyArray<string> | undefined
    /** Added to the SDK's safe defaults (PATH, HOME, ...); the parent's other variables are not passed. */
    readonly env?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
    readonly cwd?: string | undefined
  }
}

/**
 * A server baton reaches over streamable HTTP at `url` (with `headers` on every request, such as
 * an `Authorization` kept `Redacted`).
 *
 * @since 0.1.0
 * @category models
 */
export interface HttpTransport {
  readonly url: string | URL
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
}

/**
 * How to reach an MCP server.
 *
 * @since 0.1.0
 * @category models
 */
export type Transport = StdioTransport | HttpTransport

/** An open connection: the SDK client, the JSON Schema validator it uses, the server's name
 * and the longest a request may take (`undefined`: the SDK's 60 seconds). */
export interface Connection {
  readonly server: string
  readonly client: Client
  readonly validator: jsonSchemaValidator
  readonly timeoutMs: number | undefined
}

const requestOptions = (timeoutMs: number | undefined) => (timeoutMs === undefined ? undefined : { timeout: timeoutMs })

const loadSdk = Effect.fnUntraced(function*(server: string) {
  const [client, stdio, http, types, ajv] = yield* importPeer(
    () =>
      Promise.all([
        import("@modelcontextprotocol/sdk/client/index.js"),
        import("@modelcontextprotocol/sdk/client/stdio.js"),
        import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
        import("@modelcontextprotocol/sdk/types.js"),
        import("@modelcontextprotocol/sdk/validation/ajv")
      ]),
    `the MCP toolset "${server}"`,
    ["@modelcontextprotocol/sdk"]
  ).pipe(Effect.mapError((error) => new McpError({ server, reason: "Unavailable", message: error.message })))
  return { client, stdio, http, types, ajv }
})

const reveal = (values: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined) =>
  Object.fromEntries(Object.entries(values ?? {}).map(([key, value]) => [key, Redacted.isRedacted(value) ? Redacted.value(value) : value]))

const describeTransport = (transport: Transport) =>
  "stdio" in transport
    ? [transport.stdio.command, ...(transport.stdio.args ?? [])].join(" ")
    : String(transport.url)

/**
 * Connects to `server` in the current Scope: the handshake done, a notification handler for
 * `notifications/tools/list_changed` set first (so none is missed), and the close registered.
 * A server that cannot be started or reached fails with `Unavailable`, naming it and the fix.
 */
export const connect = (
  server: string,
  transport: Transport,
  onToolsChanged: () => void,
  timeoutMs?: number | undefined
): Effect.Effect<Connection, McpError, Scope.Scope> =>
  Effect.gen(function*() {
    const sdk = yield* loadSdk(server)
    const validator = new sdk.ajv.AjvJsonSchemaValidator()
    // The last lines the child wrote to stderr, for the message when it does not start.
    let stderr = ""
    const made = "stdio" in transport
      ? new sdk.stdio.StdioClientTransport({
        command: transport.stdio.command,
        args: [...(transport.stdio.args ?? [])],
        env: { ...sdk.stdio.getDefaultEnvironment(), ...reveal(transport.stdio.env) },
        ...(transport.stdio.cwd !== undefined ? { cwd: transport.stdio.cwd } : {}),
        stderr: "pipe"
      })
      : new sdk.http.StreamableHTTPClientTransport(new URL(transport.url), {
        requestInit: { headers: reveal(transport.headers) }
      })
    if (made instanceof sdk.stdio.StdioClientTransport) {
      made.stderr?.on("data", (chunk: Buffer) => {
        stderr = (stderr + chunk.toString("utf8")).slice(-2000)
      })
    }
    const client = new sdk.client.Client({ name: "baton", version: "0.1.0" }, { jsonSchemaValidator: validator })
    client.setNotificationHandler(sdk.types.ToolListChangedNotificationSchema, () => onToolsChanged())
    const unavailable = (error: unknown) => {
      const where = describeTransport(transport)
      const said = stderr.trim() === "" ? "" : ` (it wrote: ${stderr.trim().split("\n").slice(-3).join(" | ")})`
      const fix = "stdio" in transport
        ? `check that \`${where}\` starts an MCP server when run on its own`
        : `check that an MCP server listens at ${where}`
      return new McpError({ server, reason: "Unavailable", message: `MCP server "${server}" could not be started: ${firstLine(error)}${said}; ${fix}` })
    }
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => client.connect(made, requestOptions(timeoutMs)),
        catch: unavailable
      }).pipe(
        // A child that started but failed the handshake is ended here: nothing owns it yet
        // (cannot reject: a close that fails leaves nothing more to do).
        Effect.tapError(() => Effect.promise(() => made.close().catch(() => undefined)))
      ),
      () =>
        // Cannot reject: each step's failure is caught (a release has no one to tell).
        Effect.promise(async () => {
          if (made instanceof sdk.http.StreamableHTTPClientTransport) await made.terminateSession().catch(() => undefined)
          await client.close().catch(() => undefined)
        })
    )
    return { server, client, validator, timeoutMs }
  })

/** Every tool of the server, following `nextCursor` page by page. */
export const listTools = (connection: Connection): Effect.Effect<ReadonlyArray<McpTool>, McpError> =>
  Effect.tryPromise({
    try: async () => {
      const tools: Array<McpTool> = []
      let cursor: string | undefined
      do {
        const page = await connection.client.listTools(cursor === undefined ? undefined : { cursor }, requestOptions(connection.timeoutMs))
        tools.push(...page.tools)
        cursor = page.nextCursor
      } while (cursor !== undefined)
      return tools
    },
    catch: (error) => fromSdk(connection.server, "tools/list", error)
  })
