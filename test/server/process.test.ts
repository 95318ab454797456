/**
 * The main job as a user runs it (`npm start` = baton serve, cli/main.ts): on the demo model with no
 * key, a real client talks to the front desk; SIGTERM drains (the open session gets `close`) and
 * the process exits 0.
 */
import { spawn, spawnSync } from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { connect, wait } from "./harness.ts"

describe("baton serve (npm start)", () => {
  it.live("serves the front desk on the demo model; SIGTERM drains the open session and exits 0", () =>
    Effect.gen(function*() {
      const env = { ...process.env, PORT: "0", BATON_DRAIN_S: "1", OPENAI_API_KEY: "", OPENAI_BASE_URL: "" }
      const child = yield* Effect.acquireRelease(
        Effect.sync(() => spawn(process.execPath, ["cli/main.ts", "serve"], { env, stdio: ["ignore", "pipe", "pipe"] })),
        (c) => Effect.sync(() => c.kill("SIGKILL"))
      )
      let out = ""
      child.stdout.on("data", (d) => (out += String(d)))
      child.stderr.on("data", (d) => (out += String(d)))
      const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)))
      const url = yield* wait(async () => {
        for (let i = 0; i < 200; i++) {
          const m = out.match(/serving on (http:\/\/127\.0\.0\.1:\d+)/)
          if (m && out.includes("BATON_TOKEN")) return m[1]!
          await new Promise((r) => setTimeout(r, 50))
        }
        throw new Error(`no banner: ${out}`)
      })
      assert.include(out, "listening on this machine only")
      const client = yield* connect(`${url.replace("http", "ws")}/ws`)
      yield* wait(() => client.waitFor((f) => f.type === "ready"))
      client.sendJson({ type: "user_text", text: "what's the weather in Paris?" })
      yield* wait(() => client.waitFor((f) => f.type === "agent_handoff", "a handoff to the weather agent"))
      const metrics = yield* wait(() => fetch(`${url}/metrics`).then((r) => r.text()))
      assert.match(metrics, /baton_handoffs_total\{[^}]*to="weather"[^}]*\} 1/) // the core's metrics, next to the service's
      assert.match(metrics, /baton_server_sessions_open 1/)
      child.kill("SIGTERM")
      const close = yield* wait(() => client.waitFor((f) => f.type === "close", "close on drain"))
      assert.match(close.reason, /shutting down/)
      assert.strictEqual(yield* wait(() => exited), 0)
      assert.include(out, "drained: 0 finished, 1 closed")
    }).pipe(Effect.scoped), 30_000)

  it("without BATON_TOKEN a non-loopback HOST is refused with one line and exit code 1", () => {
    const result = spawnSync(process.execPath, ["cli/main.ts", "serve"], {
      env: { ...process.env, HOST: "0.0.0.0", PORT: "0", BATON_TOKEN: "" },
      encoding: "utf8",
      timeout: 20_000
    })
    assert.strictEqual(result.status, 1, result.stdout + result.stderr)
    assert.match(result.stderr, /^baton: HOST=0\.0\.0\.0 without BATON_TOKEN .* set BATON_TOKEN, or leave HOST at 127\.0\.0\.1\n$/)
  })
})
