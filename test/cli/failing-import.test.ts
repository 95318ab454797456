/**
 * Issue 38: the CLI's dynamic imports fail as typed errors, printed as one line with the fix,
 * never as a defect's stack trace. A Node loader hook makes one module fail to load, as a broken
 * install does: `baton worker` (its LiveKit packages) and `baton sim` (the simulation).
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const hooks = fileURLToPath(new URL("./fixtures/failing-load-hooks.mjs", import.meta.url))

const run = (args: ReadonlyArray<string>, failLoading: string, env: Record<string, string> = {}) =>
  spawnSync(process.execPath, ["--import", hooks, "cli/main.ts", ...args], {
    env: { ...process.env, ...env, FAIL_LOADING: failLoading, BATON_LOG_LEVEL: "error" },
    encoding: "utf8",
    timeout: 30_000
  })

describe("a dynamic import of the CLI that fails", () => {
  it("issue 38: baton worker whose LiveKit package fails to load prints one line with the npm install, exit 1", () => {
    const r = run(["worker", "--voice", "off"], "/node_modules/livekit-server-sdk/dist/index.js", {
      LIVEKIT_URL: "ws://127.0.0.1:9",
      LIVEKIT_API_KEY: "key",
      LIVEKIT_API_SECRET: "secret-of-at-least-thirty-two-characters"
    })
    assert.strictEqual(r.status, 1, r.stderr)
    assert.match(r.stderr, /^baton: baton worker could not load: .*failed to load \(a broken install, in this test\); reinstall its packages: npm install @livekit\//)
    assert.strictEqual(r.stderr.trim().split("\n").length, 1, r.stderr)
  })

  it("issue 38: baton sim whose simulation fails to load prints what failed and npm install, exit 1", () => {
    const r = run(["sim", "--seeds", "1"], "/test/sim/cli.ts")
    assert.strictEqual(r.status, 1, r.stderr)
    assert.match(r.stderr, /^baton sim: cannot load the simulation \(test\/sim\/cli\.ts\): .*failed to load .*; install the clone's dependencies: npm install/)
    assert.strictEqual(r.stderr.trim().split("\n").length, 1, r.stderr)
  })
})
