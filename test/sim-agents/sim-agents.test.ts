/**
 * `baton sim --agents` (issue 37): the simulation on a user's own agents. The README's sample
 * module keeps the rules on every seed; a module whose hook never returns is caught, shrunk to a
 * short schedule, and printed as a vitest test that fails when pasted next to the module and run.
 * In-process: a seed always gives the same schedule and the same run; arguments come from the
 * tools' schemas; the checker sees a call with bad arguments answered "ok".
 */
import { spawnSync } from "node:child_process"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Tool } from "../../src/index.ts"
import { argumentsFor, valid } from "../../src/sim/Arguments.ts"
import { check } from "../../src/sim/Check.ts"
import { Prng } from "../../src/sim/Prng.ts"
import * as Sim from "../../src/sim/Simulation.ts"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const HERE = fileURLToPath(new URL(".", import.meta.url))

const baton = (args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, ["--conditions=baton-source", join(ROOT, "cli", "main.ts"), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 240_000,
    env: { ...process.env, NO_COLOR: "1" }
  })

const sample = () => import(new URL("../../examples/sim/agents.mjs", import.meta.url).href) as Promise<Record<string, unknown>>

describe("baton sim --agents", () => {
  it("the README's sample agents keep the rules on 100 seeds (exit 0)", () => {
    const result = baton(["sim", "--agents", "examples/sim/agents.mjs", "--seeds", "100"])
    assert.strictEqual(result.status, 0, result.stdout + result.stderr)
    assert.match(result.stdout, /100 seeds \(0\.\.99\) on greeter, weather: all kept the rules/)
  }, 240_000)

  it("a hook that never returns: reported (exit 1), shrunk, and the printed test fails when run", () => {
    const result = baton(["sim", "--agents", "test/sim-agents/broken-agents.mjs", "--seeds", "50"])
    assert.strictEqual(result.status, 1, result.stdout + result.stderr)
    assert.match(result.stdout, /\[rule 10: quiescent runs\] run .* did not end/)
    const shrunk = result.stdout.slice(result.stdout.indexOf("Shrunk in"), result.stdout.indexOf("A vitest test"))
    assert.isAtMost(shrunk.split("\n").filter((l) => l.includes("timeline:"))[0]!.split("|").length, 2, shrunk)
    const printed = result.stdout.slice(result.stdout.indexOf("// baton sim:"))
    assert.include(printed, `import * as agents from "./broken-agents.mjs"`)
    const file = join(HERE, `printed-${process.pid}.test.ts`)
    writeFileSync(file, printed)
    try {
      const run = spawnSync(process.execPath, [join(ROOT, "node_modules", "vitest", "vitest.mjs"), "run", file], {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 240_000,
        env: { ...process.env, NO_COLOR: "1", CI: "1" }
      })
      const out = run.stdout + run.stderr
      assert.strictEqual(run.status, 1, out)
      assert.match(out, /1 failed/)
      assert.include(out, "rule 10")
    } finally {
      rmSync(file, { force: true })
    }
  }, 240_000)

  it("a module without an entry agent is refused in one line (exit 1)", () => {
    const file = join(HERE, `no-agent-${process.pid}.mjs`)
    writeFileSync(file, "export const nothing = 1\n")
    try {
      const result = baton(["sim", "--agents", file, "--seeds", "1"])
      assert.strictEqual(result.status, 1)
      assert.match(result.stderr, /export the entry agent as `agent`/)
    } finally {
      rmSync(file, { force: true })
    }
  }, 60_000)
})

describe("Sim on a user's agents, in process", () => {
  it.effect("the same seed gives the same schedule and the same run", () =>
    Effect.gen(function*() {
      const agents = Sim.agentsOf(yield* Effect.promise(sample))
      for (const seed of [1, 7, 42]) {
        const a = yield* Sim.simulate(seed, agents)
        const b = yield* Sim.simulate(seed, agents)
        assert.deepStrictEqual(a.schedule, b.schedule)
        const shape = (r: typeof a) => r.recording.events.map((e) => `${e.seq}:${e.type}`)
        assert.deepStrictEqual(shape(a), shape(b))
        assert.isAbove(a.recording.events.length, 3)
      }
    }), 60_000)

  it("arguments drawn from a tool's schema decode with it", () => {
    const tool = Tool.make("book", {
      description: "book a table",
      parameters: Schema.Struct({ name: Schema.String, guests: Schema.Int, vegan: Schema.optional(Schema.Boolean) }),
      handler: () => Effect.succeed("booked")
    }) as unknown as Tool.Tool<unknown, unknown>
    const rng = new Prng(3)
    let good = 0
    for (let i = 0; i < 100; i++) {
      const { args, bad } = argumentsFor(rng, tool)
      assert.strictEqual(bad, !valid(tool, args))
      if (!bad) good++
    }
    assert.isAbove(good, 80)
  })

  it.effect("the checker reports a call with bad arguments answered ok (rule 12)", () =>
    Effect.gen(function*() {
      const agents = Sim.agentsOf(yield* Effect.promise(sample))
      const result = yield* Sim.simulate(8, agents)
      assert.deepStrictEqual(result.violations, [])
      const history = result.recording.history.map((item) =>
        item._tag === "FunctionCall" && item.name === "lookup_weather" ? { ...item, arguments: "{not json" } : item
      )
      const violations = check({ ...result.recording, history }, agents.agents)
      assert.isTrue(violations.some((x) => x.rule === "rule 12" && x.message.includes("lookup_weather({not json)")), JSON.stringify(violations))
    }), 60_000)
})

// The README's "Simulate your agents" module is this example.
it("README shows examples/sim/agents.mjs", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8")
  const section = readme.slice(readme.indexOf("## Simulate your agents"))
  const block = section.match(/```js\n([\s\S]*?)```/)?.[1]
  assert.strictEqual(block, readFileSync(join(ROOT, "examples", "sim", "agents.mjs"), "utf8"))
})
