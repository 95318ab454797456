/**
 * The fake LiveKit dispatch server (test/mocks/livekit/FakeServer.ts) driven by LiveKit's own
 * worker, `@livekit/agents` 1.9 (issue 40, "Keep it proven"). It cannot be installed in the
 * project (its peer is rtc-node 0.13), so it comes from bench/agents-js, installed by
 * `npm run setup` (`npm ci --prefix bench/agents-js`); without it this test fails and says so.
 * The worker (agents-js/worker.mjs, a child process) registers under an agent name, answers the
 * availability request, and runs its agent (agents-js/agent.mjs) for the assignment.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as FakeServer from "../mocks/livekit/FakeServer.ts"
import { inbox } from "./support.ts"

const KEY = "APIofficial"
const SECRET = "official-secret-0123456789abcdef0123456789"
const BENCH = resolve(import.meta.dirname, "../../bench/agents-js")
const AGENTS_JS = join(BENCH, "node_modules/@livekit/agents/dist/index.js")

/** The worker as a child process; what it prints, a JSON object a line. */
const startWorker = (url: string, jobOut: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [join(import.meta.dirname, "agents-js/worker.mjs")], {
        env: {
          ...process.env,
          AGENTS_JS_INDEX: pathToFileURL(AGENTS_JS).href,
          LIVEKIT_URL: url,
          LIVEKIT_API_KEY: KEY,
          LIVEKIT_API_SECRET: SECRET,
          AGENT_NAME: "official",
          JOB_OUT: jobOut
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      const lines = inbox<Record<string, unknown>>()
      let pending = ""
      child.stdout.on("data", (chunk: Buffer) => {
        pending += chunk.toString("utf8")
        const complete = pending.split("\n")
        pending = complete.pop()!
        for (const line of complete) if (line.startsWith("{")) lines.push(JSON.parse(line))
      })
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => void (stderr += chunk.toString("utf8")))
      return { child, lines, stderr: () => stderr }
    }),
    ({ child }) =>
      Effect.promise(() => {
        if (child.exitCode !== null) return Promise.resolve()
        const exited = new Promise<void>((done) => child.once("exit", () => done()))
        child.kill("SIGTERM")
        const force = setTimeout(() => child.kill("SIGKILL"), 5_000)
        return exited.finally(() => clearTimeout(force))
      })
  )

/** Polls a file (written by the job's process) until it has a line. */
const firstLineOf = (path: string, ms: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      const text = existsSync(path) ? readFileSync(path, "utf8") : ""
      if (text.includes("\n")) return JSON.parse(text.split("\n")[0]!) as Record<string, unknown>
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`the agents-js job wrote nothing to ${path} within ${ms} ms`))
  })

describe("fake LiveKit dispatch server, through agents-js", () => {
  it.live("official client: an agents-js worker registers with the fake dispatch server, answers availability and receives an assignment", () =>
    Effect.gen(function*() {
      if (!existsSync(AGENTS_JS)) {
        assert.fail(`@livekit/agents 1.9 is not installed in bench/agents-js: run \`npm ci --prefix bench/agents-js\` (npm run setup does it)`)
      }
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const dir = mkdtempSync(join(tmpdir(), "baton-agents-js-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const jobOut = join(dir, "job.jsonl")
      const worker = yield* startWorker(server.url, jobOut)
      const lines = (match: (l: Record<string, unknown>) => boolean, what: string) =>
        Effect.tryPromise({ try: () => worker.lines.next(match, what, 20_000), catch: (e) => new Error(`${String(e)}\nworker stderr:\n${worker.stderr()}`) })

      // Registration: the worker's request as the server saw it, and the server's answer as the worker saw it.
      const register = yield* Effect.promise(() => server.waitFor((m) => m.case === "register", "register", 20_000))
      assert.strictEqual(register.value.agentName, "official")
      const registered = yield* lines((l) => "registered" in l, "the worker's registration")
      assert.strictEqual(registered.registered, "W_1")
      assert.deepInclude(registered.serverInfo, { version: "1.9.0", protocol: 16, nodeId: "ND_fake" })

      // Availability: the job reaches the worker's request function, which accepts it.
      const answer = yield* Effect.promise(() => server.offer("J_1", "room-1", "official"))
      assert.deepInclude(answer.value, { jobId: "J_1", available: true, participantIdentity: "agent-J_1", participantName: "official" })
      assert.deepStrictEqual(yield* lines((l) => "request" in l, "the job request"), { request: "J_1", agentName: "official" })

      // Assignment: the worker runs its agent for the job, at the room URL, with the token.
      yield* Effect.promise(() => server.assign("J_1", "room-1", "official"))
      const job = yield* firstLineOf(jobOut, 20_000)
      assert.deepStrictEqual(job, { jobId: "J_1", agentName: "official", dispatchId: "AD_J_1", room: "room-1", url: server.url, token: true })
    }).pipe(Effect.scoped), 60_000)
})
