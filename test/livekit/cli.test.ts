/**
 * `baton worker` as a user runs it: with the server's settings it registers with the dispatch
 * (the fake server, checking its token) and SIGTERM drains it to exit 0; without them it says
 * what to set in one line and exits 1.
 */
import { spawn, spawnSync } from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as FakeServer from "../mocks/livekit/FakeServer.ts"

const KEY = "APIkey123"
const SECRET = "secret-of-at-least-thirty-two-characters"

describe("baton worker", () => {
  it.live("registers with the LiveKit server from LIVEKIT_URL and drains on SIGTERM (exit 0)", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const env = { ...process.env, LIVEKIT_URL: server.url, LIVEKIT_API_KEY: KEY, LIVEKIT_API_SECRET: SECRET, OPENAI_API_KEY: "", BATON_DRAIN_S: "1" }
      const child = yield* Effect.acquireRelease(
        Effect.sync(() => spawn(process.execPath, ["cli/main.ts", "worker", "--agent-name", "desk", "--voice", "off"], { env, stdio: ["ignore", "pipe", "pipe"] })),
        (c) => Effect.sync(() => c.kill("SIGKILL"))
      )
      let err = ""
      child.stderr.on("data", (d) => (err += String(d)))
      const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)))
      const register = yield* Effect.promise(() => server.waitFor((m) => m.case === "register", "register", 20_000))
      assert.strictEqual(register.value.agentName, "desk")
      assert.notInclude(err, SECRET)
      child.kill("SIGTERM")
      assert.strictEqual(yield* Effect.promise(() => exited), 0, err)
    }).pipe(Effect.scoped), 30_000)

  it("without LIVEKIT_URL it says what to set, in one line, and exits 1", () => {
    const r = spawnSync(process.execPath, ["cli/main.ts", "worker"], {
      env: { ...process.env, LIVEKIT_URL: "", LIVEKIT_API_KEY: "", LIVEKIT_API_SECRET: "" },
      encoding: "utf8",
      timeout: 20_000
    })
    assert.strictEqual(r.status, 1)
    assert.match(r.stderr, /^baton: set LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET/)
    assert.strictEqual(r.stderr.trim().split("\n").length, 1)
  })
})
