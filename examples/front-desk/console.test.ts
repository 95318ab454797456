/**
 * Drives the real program as a person would: `node examples/front-desk/main.ts` (what
 * `npm start` runs) with piped stdin and stdout, one line at a time, each sent only once the
 * prompt for it has appeared (no fixed sleeps; the timeouts are only guards).
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { createServer } from "node:http"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "vitest"
import { demoConversation } from "./conversation.ts"

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url))
const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const PROMPT = "you> "
const CLOSED = "── session closed\n"

const count = (text: string, part: string) => text.split(part).length - 1

interface Program {
  readonly child: ChildProcessWithoutNullStreams
  readonly stdout: () => string
  readonly stderr: () => string
  readonly waitFor: (what: string, condition: (stdout: string) => boolean, timeoutMs?: number) => Promise<void>
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  /** Waits for prompt number `n` (the first is shown at start-up). */
  readonly prompt: (n: number) => Promise<void>
}

const start = (env: Record<string, string> = {}): Program => {
  const base: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith("OPENAI_") && key !== "NO_COLOR" && key !== "FORCE_COLOR") base[key] = value
  }
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: { ...base, ...env }, stdio: ["pipe", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  const listeners = new Set<() => void>()
  child.stdout.setEncoding("utf8").on("data", (data: string) => {
    stdout += data
    for (const listener of [...listeners]) listener()
  })
  child.stderr.setEncoding("utf8").on("data", (data: string) => {
    stderr += data
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => {
      for (const listener of [...listeners]) listener()
      resolve({ code, signal })
    })
  })
  const waitFor = (what: string, condition: (stdout: string) => boolean, timeoutMs = 15_000) =>
    new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer)
        listeners.delete(check)
      }
      const check = () => {
        if (condition(stdout)) {
          done()
          resolve()
        } else if (child.exitCode !== null || child.signalCode !== null) {
          done()
          reject(new Error(`the program exited while waiting for ${what}.\nstdout:\n${stdout}\nstderr:\n${stderr}`))
        }
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`timed out waiting for ${what}.\nstdout:\n${stdout}\nstderr:\n${stderr}`))
      }, timeoutMs)
      listeners.add(check)
      check()
    })
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    waitFor,
    exited,
    prompt: (n) => waitFor(`prompt ${n}`, (out) => count(out, PROMPT) >= n)
  }
}

/** Each fragment appears, after the previous one. */
const assertInOrder = (output: string, fragments: ReadonlyArray<string>) => {
  let from = 0
  for (const fragment of fragments) {
    const at = output.indexOf(fragment, from)
    assert.isTrue(at >= 0, `expected ${JSON.stringify(fragment)} after position ${from} in:\n${output}`)
    from = at + fragment.length
  }
}

describe.concurrent("npm run console (examples/front-desk/main.ts) in a terminal", () => {
  it("runs the whole demo conversation on the demo model and exits 0 at the end of input", async () => {
    // The demo conversation, with an empty line and a line full of control characters before "Bye".
    const input = [...demoConversation.slice(0, -1), "", "\u0007\u001b[31mhello\u001b[0m", ...demoConversation.slice(-1)]
    const program = start()
    for (const [i, line] of input.entries()) {
      await program.prompt(i + 1)
      program.child.stdin.write(`${line}\n`)
    }
    await program.prompt(input.length + 1)
    const beforeEnd = program.stdout()
    program.child.stdin.end()
    const { code, signal } = await program.exited
    const out = program.stdout()

    assert.strictEqual(code, 0, out + program.stderr())
    assert.isNull(signal)
    assert.strictEqual(program.stderr(), "")
    // The header says it is the demo model and how to use a real one.
    const header = out.slice(0, out.indexOf("── floor:"))
    assert.include(header, "demo model")
    assert.include(header, "OPENAI_API_KEY=... and run again")
    assert.include(header, "OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 and run again")
    // Who holds the floor, in order: two handoffs to weather, two transfers back, the task and its return.
    assert.deepStrictEqual(out.split("\n").filter((line) => line.startsWith("── floor:")), [
      "── floor: greeter [start]",
      "── floor: greeter → weather [handoff] reason: weather in Paris",
      "── floor: weather → greeter [handoff, resumed] reason: done with the weather",
      "── floor: greeter → booking [task]",
      "── floor: booking → greeter [return]",
      "── floor: greeter → weather [handoff, resumed] reason: weather in Oslo",
      "── floor: weather → greeter [handoff, resumed] reason: done with the weather"
    ])
    assertInOrder(out, [
      "[greeter] Hi, I'm Kelly",
      `${PROMPT}What's the weather in Paris?\n`,
      "  [greeter] ⚙ transfer_to_weather({\"reason\":\"weather in Paris\"})\n",
      "── floor: greeter → weather",
      "[weather] Hi, Sunny here",
      "  [weather] ⚙ lookup_weather({\"city\":\"Paris\"})\n",
      "  [weather] ⚙ lookup_weather → Paris: ",
      "  [weather] ⚙ lookup_weather({\"city\":\"Tokyo\"})\n",
      "[greeter] Welcome back!",
      "  [greeter] ⚙ book_appointment()\n",
      "[booking] Happy to book that.",
      `${PROMPT}My name is Ada Lovelace\n`,
      "[booking] Thanks, Ada Lovelace. Which date",
      "  [booking] ⚙ record_booking({\"name\":\"Ada Lovelace\",\"date\":\"next Friday\"})\n",
      "── floor: booking → greeter [return]\n",
      "  [greeter] ⚙ book_appointment → Booked: Ada Lovelace on next Friday, reference FD-1.\n",
      "[greeter] You're all set, Ada Lovelace: your appointment is booked for next Friday. Your reference is FD-1.\n",
      // One response, two calls: both are listed before either output.
      "  [greeter] ⚙ save_note({\"text\":\"I prefer mornings\"})\n",
      "  [greeter] ⚙ transfer_to_weather({\"reason\":\"weather in Oslo\"})\n",
      "  [greeter] ⚙ save_note → Saved note: I prefer mornings\n",
      "  [greeter] ⚙ transfer_to_weather ⇒ handoff:",
      "  [weather] ⚙ lookup_weather({\"city\":\"Oslo\"})\n",
      `${PROMPT}\n${PROMPT}hello\n  (removed 3 control characters)\n[greeter] Hello!`,
      `${PROMPT}Bye\n[greeter] Goodbye`
    ])
    assert.notInclude(out, "\u001b", "no colours on a pipe")
    // Nothing is written after the session closed.
    assert.strictEqual(out.slice(beforeEnd.length), `\n${CLOSED}`)
  })

  it("Ctrl-C (SIGINT) closes the session cleanly and exits 0", async () => {
    const program = start()
    await program.prompt(1)
    program.child.stdin.write("What's the weather in Paris?\n")
    await program.prompt(2)
    program.child.kill("SIGINT")
    const { code, signal } = await program.exited
    assert.strictEqual(code, 0, program.stdout() + program.stderr())
    assert.isNull(signal)
    assert.strictEqual(program.stderr(), "")
    assert.isTrue(program.stdout().endsWith(`${PROMPT}\n${CLOSED}`), program.stdout())
  })

  it("with OPENAI_BASE_URL set it uses the real model layer, and never prints the key", async () => {
    const key = "sk-test-do-not-print-0123456789"
    // Nothing listens on port 9: the model call fails, the console shows the error and goes on.
    const program = start({ OPENAI_API_KEY: key, OPENAI_BASE_URL: "http://127.0.0.1:9/v1", OPENAI_MODEL: "test-model" })
    await program.waitFor("the model error", (out) => out.includes("! error (model, greeter)"))
    await program.prompt(1)
    program.child.stdin.end()
    const { code } = await program.exited
    const out = program.stdout()
    assert.strictEqual(code, 0, out + program.stderr())
    assert.include(out, "Model: test-model at http://127.0.0.1:9/v1 (OPENAI_API_KEY set)")
    assert.notInclude(out, "demo model")
    assert.notInclude(out + program.stderr(), key)
    assert.isTrue(out.endsWith(CLOSED))
  })

  it("a key the server refuses (401) ends the console with one line saying what to do, and exit code 1", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(401, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } }))
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const port = (server.address() as { port: number }).port
      const program = start({ OPENAI_API_KEY: "sk-wrong-0123456789", OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` })
      const { code } = await program.exited
      const err = program.stderr()
      assert.strictEqual(code, 1, program.stdout() + err)
      assert.match(err, /^baton: the model failed \(InvalidKey \(401\): .*\); set OPENAI_API_KEY to a valid key/)
      assert.strictEqual(err.trim().split("\n").length, 1, err)
      assert.notMatch(err, /\s+at\s|\.ts:\d+/)
      assert.notInclude(program.stdout() + err, "sk-wrong-0123456789")
    } finally {
      server.close()
    }
  })
})
