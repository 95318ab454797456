/**
 * The console demo end to end against a local OpenAI-compatible server as strict as OpenAI (a
 * function whose parameters are not an object schema refuses the whole request with a 400): the
 * `baton console` process, OPENAI_BASE_URL pointing at the mock on 127.0.0.1, a question typed on
 * stdin. The front desk's tools include ones with no parameters (book_appointment); every request
 * must be accepted, the greeter must hand the caller to the weather agent, and its answer must
 * reach the terminal.
 */
import { spawn } from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { delta, make as mockChat, sse, toolDelta, usageChunk } from "../layers/openai/MockChatServer.ts"

const text = (words: string) => sse([delta({ role: "assistant", content: words }), delta({}, "stop"), usageChunk(10, 5)])
const call = (id: string, name: string, args: string) =>
  sse([delta({ role: "assistant" }), toolDelta(0, { name, arguments: args }, id), delta({}, "tool_calls"), usageChunk(10, 5)])

/** `baton console` with `input` on stdin; resolves with its output once it exits. */
const consoleProcess = (baseUrl: string, input: string) =>
  Effect.callback<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resume) => {
    const child = spawn(process.execPath, ["cli/main.ts", "console"], {
      env: { ...process.env, OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: baseUrl, OPENAI_MODEL: "gpt-test", NO_COLOR: "1" },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += String(d)))
    child.stderr.on("data", (d) => (stderr += String(d)))
    child.on("exit", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    child.stdin.end(input)
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("baton console against a strict OpenAI-compatible server", () => {
  it.live("the front desk greets, hands a weather question to the weather agent, which answers; no request is refused", () =>
    Effect.gen(function*() {
      const server = yield* mockChat
      server.reply(
        text("Hi, I'm Kelly at the front desk."),
        call("call_1", "transfer_to_weather", "{}"),
        call("call_2", "lookup_weather", JSON.stringify({ city: "Paris" })),
        text("Paris is sunny and 21 degrees today.")
      )
      const result = yield* consoleProcess(server.baseUrl, "What's the weather in Paris?\n").pipe(Effect.timeout("30 seconds"))
      assert.strictEqual(result.code, 0, result.stderr)
      assert.include(result.stdout, "Hi, I'm Kelly at the front desk.")
      assert.include(result.stdout, "Paris is sunny and 21 degrees today.")
      assert.notInclude(result.stdout + result.stderr, "Invalid schema")
      // Four model calls, each listing its agent's tools, every one an object schema.
      assert.strictEqual(server.requests.length, 4)
      const tools = server.requests.map((r) => (r.body.tools as Array<{ function: { name: string; parameters: { type: string } } }>) ?? [])
      assert.includeMembers(tools[0]!.map((t) => t.function.name), ["transfer_to_weather", "book_appointment", "save_note"])
      assert.includeMembers(tools[2]!.map((t) => t.function.name), ["lookup_weather", "transfer_to_greeter"])
      for (const t of tools.flat()) assert.strictEqual(t.function.parameters.type, "object", t.function.name)
      // The weather agent's answer came after the lookup's output, which it was given.
      const last = server.requests[3]!.body.messages as Array<{ role: string; content?: string }>
      assert.isTrue(last.some((m) => m.role === "tool" && String(m.content).includes("Paris")))
    }))
})
