/**
 * The timeline from the command line: `npm run timeline -- events.jsonl [out.svg]` draws a
 * recorded session, a bad file gets one line and exit code 1; `npm run console -- --timeline
 * out.svg` writes the session's picture when it ends.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Tool } from "../../src/index.ts"
import * as Timeline from "../../src/Timeline.ts"

const run = (args: ReadonlyArray<string>, input?: string) =>
  spawnSync(process.execPath, args, { encoding: "utf8", input, env: { ...process.env, OPENAI_API_KEY: "", OPENAI_BASE_URL: "" }, timeout: 30_000 })

describe("timeline from the command line", () => {
  it.effect("npm run timeline draws a recorded event log; a bad one gets one line and exit 1", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "baton-timeline-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const b = Agent.make({ name: "b", instructions: "B" })
      const a = Agent.make({ name: "a", instructions: "A", tools: [Tool.handoff("to_b", () => b)] })
      const events = yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: a })
        yield* session.run("go")
        return yield* session.eventLog
      }).pipe(Effect.provide(ScriptedModel.layer([{ when: { user: "go" }, reply: { toolCalls: [{ name: "to_b" }] } }])))
      const log = join(dir, "session.jsonl")
      writeFileSync(log, events.map(Timeline.encodeLine).join("\n") + "\n")
      const ok = run(["cli/main.ts", "timeline", log])
      assert.strictEqual(ok.status, 0, ok.stderr)
      const svg = readFileSync(join(dir, "session.svg"), "utf8")
      assert.match(svg, /^<svg/)
      assert.include(svg, ">b<")
      const badLog = join(dir, "bad.jsonl")
      writeFileSync(badLog, "not json\n")
      const bad = run(["cli/main.ts", "timeline", badLog])
      assert.strictEqual(bad.status, 1)
      assert.match(bad.stderr, /^baton: .*bad\.jsonl, line 1/)
      assert.strictEqual(bad.stderr.trim().split("\n").length, 1)
    }).pipe(Effect.scoped))

  it("npm run console -- --timeline out.svg writes the session's picture when it ends", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-console-tl-"))
    try {
      const out = join(dir, "call.svg")
      const result = run(["cli/main.ts", "console", "--timeline", out], "What's the weather in Paris?\n")
      assert.strictEqual(result.status, 0, result.stderr)
      const svg = readFileSync(out, "utf8")
      assert.include(svg, ">weather<")
      assert.include(svg, ">greeter<")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
