/** The baton command's logs: Effect's loggers on stderr, JSON lines off a terminal, the level from the flag or BATON_LOG_LEVEL. */
import { spawn, spawnSync } from "node:child_process"
import { type AddressInfo, createServer } from "node:net"
import { assert, describe, it } from "@effect/vitest"

const env = (extra: Record<string, string>) => ({ ...process.env, OPENAI_API_KEY: "", OPENAI_BASE_URL: "", PORT: "0", ...extra })

/** Starts `baton serve`, collects stderr until `done` says so, then stops it (SIGTERM). */
const serveUntil = (args: ReadonlyArray<string>, extra: Record<string, string>, done: (stderr: string) => boolean) =>
  new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["cli/main.ts", "serve", ...args], { env: env(extra), stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    const timer = setTimeout(() => (child.kill("SIGKILL"), reject(new Error(`timed out: ${stderr}`))), 20_000)
    child.stdout.on("data", (d) => (stdout += String(d)))
    child.stderr.on("data", (d) => {
      stderr += String(d)
      if (done(stderr)) child.kill("SIGTERM")
    })
    child.on("exit", () => (clearTimeout(timer), resolve({ stdout, stderr })))
  })

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })

/** Starts `baton serve` on `port`, waits until /health answers, then stops it (SIGTERM). */
const serveUntilHealthy = async (port: number, args: ReadonlyArray<string>, extra: Record<string, string>) => {
  const child = spawn(process.execPath, ["cli/main.ts", "serve", "--port", String(port), ...args], {
    env: env(extra),
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stderr = ""
  child.stderr.on("data", (d) => (stderr += String(d)))
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()))
  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
      if (ok) break
      if (i > 400) throw new Error(`never healthy: ${stderr}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  } finally {
    child.kill("SIGTERM")
  }
  await exited
  return { stderr }
}

describe("baton logging", () => {
  it("logs JSON lines on stderr when it is not a terminal, at info by default; stdout stays empty", async () => {
    const { stdout, stderr } = await serveUntil([], {}, (err) => err.includes("serving on"))
    assert.strictEqual(stdout, "")
    const first = JSON.parse(stderr.split("\n")[0]!) as { level: string; message: unknown }
    assert.strictEqual(first.level, "INFO")
    assert.match(JSON.stringify(first.message), /serving on http:\/\/127\.0\.0\.1:\d+/)
  })

  it("BATON_LOG_LEVEL=warn hides the info banner; --log-level info wins over it", async () => {
    const port = await freePort()
    const quiet = await serveUntilHealthy(port, [], { BATON_LOG_LEVEL: "warn" })
    assert.notInclude(quiet.stderr, "serving on")
    const flagged = await serveUntilHealthy(port, ["--log-level", "info"], { BATON_LOG_LEVEL: "warn" })
    assert.include(flagged.stderr, "serving on")
  })

  it("issue 39: one log format per run: a run that dies logs it as JSON like its other lines, and exits 1", () => {
    const r = spawnSync(process.execPath, ["cli/main.ts", "serve", "--port", "99999"], { env: env({}), encoding: "utf8", timeout: 20_000 })
    assert.strictEqual(r.status, 1, r.stderr)
    const lines = r.stderr.split("\n").filter((line) => line !== "")
    assert.isAbove(lines.length, 0)
    for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), line)
    assert.include(r.stderr, "ERR_SOCKET_BAD_PORT")
  })

  it("an unknown BATON_LOG_LEVEL is refused in one line with exit code 1", () => {
    const r = spawnSync(process.execPath, ["cli/main.ts", "serve"], { env: env({ BATON_LOG_LEVEL: "loud" }), encoding: "utf8", timeout: 20_000 })
    assert.strictEqual(r.status, 1, r.stderr)
    assert.strictEqual(r.stderr, "baton: BATON_LOG_LEVEL=loud: use one of trace, debug, info, warn, error, none\n")
  })
})
