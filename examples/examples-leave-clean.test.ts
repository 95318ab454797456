/**
 * Examples leave the clone clean (issue 39): each example runs as a person runs it, and the
 * clone's `git status` is the same after as before. The timeline pictures are drawn on a test
 * clock, so running the script rewrites docs/ with the same bytes; the voice call goes to a temp
 * folder whose path it prints; the minute-long flight search runs with `--fast`.
 */
import { execFileSync, spawn } from "node:child_process"
import { existsSync, rmSync } from "node:fs"
import { dirname } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const ROOT = fileURLToPath(new URL("../", import.meta.url))

const status = () => execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], { cwd: ROOT, encoding: "utf8" })

/** Runs `node <main> ...args` in the clone with `input` on stdin; its output and exit code. */
const run = (main: string, args: ReadonlyArray<string> = [], input = "") =>
  new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], { cwd: ROOT, env: { ...process.env, OPENAI_API_KEY: "", OPENAI_BASE_URL: "" } })
    let out = ""
    child.stdout.on("data", (d) => (out += String(d)))
    child.stderr.on("data", (d) => (out += String(d)))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${main} did not finish: ${out}`))
    }, 90_000)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, out })
    })
    child.stdin.end(input)
  })

const examples: ReadonlyArray<{ readonly main: string; readonly args?: ReadonlyArray<string>; readonly input?: string; readonly needs?: string }> = [
  { main: "examples/quickstart/main.ts" },
  { main: "examples/greeter-weather/main.ts" },
  { main: "examples/health-service/main.ts" },
  { main: "examples/parallel-handoff/main.ts" },
  { main: "examples/long-running/main.ts", args: ["--fast"] },
  { main: "examples/collect/main.ts" },
  { main: "examples/timeline/main.ts" },
  { main: "examples/front-desk/main.ts", input: "What's the weather in Paris?\nbye\n" },
  { main: "examples/voice-front-desk/main.ts", needs: "/usr/bin/flite" }
]

describe("examples leave the clone clean", () => {
  it("every example runs and git status is the same after it", async () => {
    const before = status()
    for (const example of examples) {
      if (example.needs !== undefined && !existsSync(example.needs)) continue
      const { code, out } = await run(example.main, example.args, example.input)
      assert.strictEqual(code, 0, `${example.main}: ${out}`)
      assert.strictEqual(status(), before, `${example.main} changed the clone:\n${out}`)
      const wrote = /wrote (\S+\.wav)/.exec(out)?.[1]
      if (wrote !== undefined) {
        assert.isFalse(wrote.startsWith(ROOT), `${example.main} wrote into the clone: ${wrote}`)
        rmSync(dirname(wrote), { recursive: true, force: true })
      }
    }
  }, 300_000)

  it("the timeline pictures are the same bytes from the same run", async () => {
    const { code } = await run("examples/timeline/main.ts")
    assert.strictEqual(code, 0)
    assert.strictEqual(execFileSync("git", ["diff", "--stat", "--", "docs/timeline-seed002.svg", "docs/timeline-seed004.svg"], { cwd: ROOT, encoding: "utf8" }), "")
  }, 60_000)
})
