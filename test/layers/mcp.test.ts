/**
 * MCP toolsets (issue 37) against a real MCP server process written with the same SDK
 * (test/fixtures/mcp-server.ts), over stdio and over streamable HTTP on 127.0.0.1. A scripted
 * model makes the agent call the server's tools in a session; the assertions are on the
 * session's events and history, and on what the server process logged (its pid, the
 * cancellations it received).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { Mcp } from "../../layers/mcp/index.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as ToolSchema from "../../services/ToolSchema.ts"
import { Agent, AgentSession, type SessionEvent, Tool, Toolset } from "../../src/index.ts"

const FIXTURE = fileURLToPath(new URL("../fixtures/mcp-server.ts", import.meta.url))

const newLog = () => join(mkdtempSync(join(tmpdir(), "baton-mcp-")), "facts.jsonl")

/** What the fixture logged: `started` with its pid, `cancelled` with the request's id. */
const facts = (log: string): ReadonlyArray<{ readonly event: string; readonly pid?: number; readonly requestId?: number | string }> =>
  existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)) : []

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const eventually = (what: string, check: () => boolean, ms = 15_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("20 millis")
    }
  })

const stdioToolset = (log: string, options: { readonly cancellable?: boolean } = {}) =>
  Mcp.toolset({ name: "fixture", transport: { stdio: { command: process.execPath, args: [FIXTURE], env: { MCP_FIXTURE_LOG: log } } }, ...options })

/** The fixture over streamable HTTP on 127.0.0.1, for the Scope's life. */
const httpServer = (log: string) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly child: ChildProcess }>((resume) => {
      const child = spawn(process.execPath, [FIXTURE, "--http"], { env: { ...process.env, MCP_FIXTURE_LOG: log }, stdio: ["ignore", "pipe", "inherit"] })
      child.stdout.on("data", (chunk: Buffer) => {
        const port = /listening (\d+)/.exec(chunk.toString())?.[1]
        if (port) resume(Effect.succeed({ url: `http://127.0.0.1:${port}/mcp`, child }))
      })
    }),
    ({ child }) => Effect.sync(() => void child.kill())
  )

const agentWith = (toolset: Toolset.Toolset) =>
  Agent.make({ name: "assistant", instructions: "Use the tools.", tools: [toolset] })

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "add 2 and 3" }, reply: { toolCalls: [{ name: "add", arguments: { a: 2, b: 3 } }] } },
  { when: { user: "add two" }, reply: { toolCalls: [{ name: "add", arguments: { a: "two", b: 3 } }] } },
  { when: { user: "fail as a tool" }, reply: { toolCalls: [{ name: "fail", arguments: { mode: "tool" } }] } },
  { when: { user: "fail the protocol" }, reply: { toolCalls: [{ name: "fail", arguments: { mode: "protocol" } }] } },
  { when: { user: "crash" }, reply: { toolCalls: [{ name: "fail", arguments: { mode: "crash" } }] } },
  { when: { user: "add it again" }, reply: { toolCalls: [{ name: "add", arguments: { a: 1, b: 1 } }] } },
  { when: { user: "change" }, reply: { toolCalls: [{ name: "change_tools", arguments: {} }] } },
  { when: { user: "multiply" }, reply: { toolCalls: [{ name: "multiply", arguments: { a: 3, b: 4 } }] } },
  { when: { user: "wait long" }, reply: { toolCalls: [{ name: "slow", arguments: { ms: 30_000 } }] } },
  { when: { user: "hold on while waiting" }, reply: { toolCalls: [{ name: "slow", arguments: { ms: 30_000, steps: 1 }, id: "slow-1" }] } },
  { when: { user: "cancel it" }, reply: { toolCalls: [{ name: "cancel_background_tool", arguments: { call_id: "slow-1" } }] } },
  { when: { user: "wait with progress" }, reply: { toolCalls: [{ name: "slow", arguments: { ms: 300, steps: 2 } }] } },
  { when: { toolOutput: /.*/ }, reply: (request) => ({ text: `Noted: ${request.last.kind === "tool" ? request.last.outputs.map((o) => o.output).join("; ") : ""}` }) },
  { when: () => true, reply: { text: "Hello." } }
]

const outputs = (events: ReadonlyArray<{ readonly type: string }>) =>
  events.flatMap((e) => (e.type === "function_call_output" ? [e as unknown as { name: string; output: string; isError: boolean }] : []))

const errors = (events: ReadonlyArray<SessionEvent>) =>
  events.flatMap((e) => (e.type === "error" ? [e] : []))

describe("MCP toolsets over stdio", () => {
  it.live("MCP: a stdio server's tools are listed when the agent starts and the model calls one like any tool", () =>
    Effect.gen(function*() {
      const log = newLog()
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: agentWith(stdioToolset(log)) })
      const result = yield* session.run("add 2 and 3")
      result.expect.nextEvent().isMessage({ role: "user" })
      result.expect.nextEvent().isFunctionCall({ name: "add", arguments: { a: 2, b: 3 } })
      result.expect.nextEvent().isFunctionCallOutput({ name: "add", output: "5", isError: false })
      result.expect.nextEvent().isMessage({ role: "assistant", content: "Noted: 5" })
      assert.deepStrictEqual([...model.requests[0]!.tools].sort(), ["add", "change_tools", "fail", "slow"])
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))

  it.live("MCP: the model is offered the server's own JSON Schema for each tool", () =>
    Effect.gen(function*() {
      const source = yield* stdioToolset(newLog()).open
      const add = source.tools().find((tool) => tool.name === "add")!
      assert.deepStrictEqual(ToolSchema.parametersOf(add.definition), {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
        additionalProperties: false
      })
      assert.strictEqual(add.description, "Adds two numbers")
    }).pipe(Effect.scoped))

  it.live("MCP: a prefix goes before each tool's name, and characters baton's names do not allow become _", () =>
    Effect.gen(function*() {
      const toolset = Mcp.toolset({ name: "calc", prefix: "calc.", transport: { stdio: { command: process.execPath, args: [FIXTURE] } } })
      const source = yield* toolset.open
      assert.deepStrictEqual(source.tools().map((tool) => tool.name).sort(), ["calc_add", "calc_change_tools", "calc_fail", "calc_slow"])
      assert.strictEqual(ToolSchema.parametersOf(source.tools()[0]!.definition)["type"], "object")
    }).pipe(Effect.scoped))

  it.live("MCP: arguments that break the server's schema are an error output the model reads, and the session goes on", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: agentWith(stdioToolset(newLog())) })
      const result = yield* session.run("add two")
      const [output] = outputs(result.events)
      assert.isTrue(output!.isError)
      assert.match(output!.output, /^Invalid arguments for add: .*a.*number/)
      result.expect.containsMessage({ role: "assistant", content: /^Noted: Invalid arguments for add/ })
      // The same session still calls the server.
      const next = yield* session.run("add it again")
      assert.strictEqual(outputs(next.events)[0]!.output, "2")
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))

  it.live("MCP: isError, a JSON-RPC error and a server that dies each give the model an error output it is told about", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: agentWith(stdioToolset(newLog())) })
      const tool = yield* session.run("fail as a tool")
      assert.deepInclude(outputs(tool.events)[0]!, { output: "fail failed: the disk is full", isError: true })
      const protocol = yield* session.run("fail the protocol")
      const refused = outputs(protocol.events)[0]!
      assert.isTrue(refused.isError)
      assert.include(refused.output, `McpError: MCP server "fixture" refused the call of fail`)
      assert.include(refused.output, "the fixture failed on purpose")
      const crash = yield* session.run("crash")
      const gone = outputs(crash.events)[0]!
      assert.isTrue(gone.isError)
      assert.include(gone.output, `MCP server "fixture" is gone`)
      const after = yield* session.run("add it again")
      assert.include(outputs(after.events)[0]!.output, `MCP server "fixture" is gone`)
      // A failure of the server (not the tool's own answer) is an error event too.
      const events = yield* session.eventLog
      assert.strictEqual(errors(events).filter((e) => e.source === "tool" && e.message.includes("McpError")).length, 3)
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))

  it.live("MCP: list_changed refreshes the list: the next model call offers the new tool and it can be called", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: agentWith(stdioToolset(newLog())) })
      assert.notInclude(model.requests.length === 0 ? [] : model.requests[0]!.tools, "multiply")
      const changed = yield* session.run("change")
      assert.strictEqual(outputs(changed.events)[0]!.output, "multiply added")
      // The model call that answered the tool's output already had the new list.
      const last = model.requests[model.requests.length - 1]!
      assert.strictEqual(last.last.kind, "tool")
      assert.include(last.tools, "multiply")
      const product = yield* session.run("multiply")
      assert.deepInclude(outputs(product.events)[0]!, { name: "multiply", output: "12", isError: false })
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))

  it.live("MCP: progress notifications are the tool's progress: the first answers the call, the result follows", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: agentWith(stdioToolset(newLog())) })
      const result = yield* session.run("wait with progress")
      assert.deepInclude(outputs(result.events)[0]!, { name: "slow", output: "step 1 of 2", isError: false })
      yield* eventually("the final result in the history", () => {
        const text = JSON.stringify(Effect.runSync(session.history).items)
        return text.includes("slept 300 ms")
      })
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))

  it.live("MCP: the model cancelling a call that went on in the background sends notifications/cancelled for its request", () =>
    Effect.gen(function*() {
      const log = newLog()
      const session = yield* AgentSession.start({ agent: agentWith(stdioToolset(log, { cancellable: true })) })
      // Its first progress report answers the call; the call goes on in the background.
      const started = yield* session.run("hold on while waiting")
      assert.deepInclude(outputs(started.events)[0]!, { name: "slow", output: "step 1 of 1", isError: false })
      const cancelled = yield* session.run("cancel it")
      assert.deepInclude(outputs(cancelled.events)[0]!, { name: "cancel_background_tool", output: "Cancelled slow (slow-1).", isError: false })
      yield* eventually("the server to log the cancellation", () => facts(log).some((f) => f.event === "cancelled"))
      // Barge-in never cuts a running call (rule 4), so nothing else is cancelled.
      assert.strictEqual(facts(log).filter((f) => f.event === "cancelled").length, 1)
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))

  it.live("MCP: closing the session mid-call cancels the call and leaves no child process", () =>
    Effect.gen(function*() {
      const log = newLog()
      const scope = yield* Scope.make()
      const session = yield* AgentSession.start({ agent: agentWith(stdioToolset(log)) }).pipe(Scope.provide(scope))
      yield* session.send("wait long")
      yield* eventually("the server to start", () => facts(log).some((f) => f.event === "started"))
      const pid = facts(log).find((f) => f.event === "started")!.pid!
      assert.isTrue(alive(pid))
      yield* eventually("the slow call to start", () =>
        Effect.runSync(session.eventLog).some((e) => e.type === "conversation_item_added" && e.item._tag === "FunctionCall"))
      yield* Effect.sleep("300 millis")
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(facts(log).some((f) => f.event === "cancelled"))
      yield* eventually("the child process to be gone", () => !alive(pid))
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.live("MCP: an agent reached by a handoff connects when its actor starts, and its first reply can call the server", () =>
    Effect.gen(function*() {
      const log = newLog()
      const model = yield* ScriptedModel.ScriptedModel
      const math: Agent.Agent = Agent.make({
        name: "math",
        instructions: "Do sums.",
        tools: [stdioToolset(log)],
        onEnter: Agent.reply({ instructions: "work out 2 plus 3" }).pipe(Effect.asVoid)
      })
      const front = Agent.make({ name: "front", instructions: "Route.", tools: [Tool.handoff("to_math", () => math)] })
      const session = yield* AgentSession.start({ agent: front })
      assert.isFalse(facts(log).some((f) => f.event === "started"))
      const result = yield* session.run("math please")
      result.expect.containsAgentHandoff({ from: "front", to: "math" })
      result.expect.containsFunctionCallOutput({ name: "add", output: "5", isError: false })
      assert.deepStrictEqual(model.requests.filter((r) => r.agent === "front").map((r) => [...r.tools]), [["to_math"]])
      assert.include(model.requestsFor("math")[0]!.tools, "add")
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer([
      { when: { user: "math please" }, reply: { toolCalls: [{ name: "to_math", arguments: {} }] } },
      { when: { instructions: "work out 2 plus 3" }, reply: { toolCalls: [{ name: "add", arguments: { a: 2, b: 3 } }] } },
      ...rules
    ]))))

  it.live("MCP: a server that cannot be started is an error event naming the server and the fix, and the agent goes on", () =>
    Effect.gen(function*() {
      const broken = Mcp.toolset({ name: "broken", transport: { stdio: { command: process.execPath, args: [join(tmpdir(), "no-such-mcp-server.ts")] } } })
      const session = yield* AgentSession.start({ agent: agentWith(broken) })
      const result = yield* session.run("hello")
      result.expect.containsMessage({ role: "assistant", content: "Hello." })
      const [error] = errors(yield* session.eventLog)
      assert.strictEqual(error?.source, "tool")
      assert.match(error!.message, /^MCP server "broken" could not be started: .*check that `.*no-such-mcp-server\.ts` starts an MCP server when run on its own$/)
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))
})

describe("MCP toolsets over streamable HTTP", () => {
  it.live("MCP: over streamable HTTP on 127.0.0.1 the tools are listed, called, refreshed on list_changed, and a call cut by the close is cancelled", () =>
    Effect.gen(function*() {
      const log = newLog()
      const { url } = yield* httpServer(log)
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: agentWith(Mcp.toolset({ name: "remote", transport: { url } })) })
      const sum = yield* session.run("add 2 and 3")
      assert.deepInclude(outputs(sum.events)[0]!, { name: "add", output: "5", isError: false })
      yield* session.run("change")
      assert.include(model.requests[model.requests.length - 1]!.tools, "multiply")
      const product = yield* session.run("multiply")
      assert.strictEqual(outputs(product.events)[0]!.output, "12")
      yield* session.send("wait long")
      yield* eventually("the slow call to start", () =>
        Effect.runSync(session.eventLog).filter((e) => e.type === "conversation_item_added" && e.item._tag === "FunctionCall").length === 4)
      yield* Effect.sleep("300 millis")
      yield* session.close
      yield* eventually("the server to log the cancellation", () => facts(log).some((f) => f.event === "cancelled"))
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))
})
