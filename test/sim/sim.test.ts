/**
 * The deterministic simulation of the handoff protocol: 10,000 random scenarios (seeds
 * 0..9999), each run under its own TestClock and checked against the rules of docs/rules.md.
 * A failure prints the seed, how to replay it, the violations, the scenario, a shrunk scenario
 * that still fails and its event log.
 *
 * Replay one seed alone:   SIM_SEED=1234 npx vitest run test/sim/sim.test.ts
 * (SIM_ALL=1 also generates the known-bug patterns the default runs leave out, KnownBugs.ts)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { eventLog } from "./Report.ts"
import { format } from "./Scenario.ts"
import { DEFAULT_EXCLUDE, explain, runSeeds, simulate, type SimOptions } from "./Sim.ts"

const options: SimOptions = { exclude: process.env["SIM_ALL"] ? [] : DEFAULT_EXCLUDE }
const replay = process.env["SIM_SEED"]

/** Runs `count` seeds from `from`; a failure shows the first failing seed, shrunk. */
const seeds = (from: number, count: number) =>
  Effect.gen(function*() {
    const summary = yield* runSeeds(from, count, options, 3)
    const first = summary.failures[0]
    if (first) {
      const others = summary.failures.slice(1).map((f) => `seed ${f.scenario.seed}`).join(", ")
      const report = yield* explain(first, options, 300)
      expect.fail(`${report}${others ? `\n\nAlso failing: ${others} (the run stopped after 3 failures)` : ""}`)
    }
    expect(summary.seeds).toBe(count)
  })

describe("simulation of the handoff protocol", () => {
  if (replay !== undefined) {
    it.effect(`replays seed ${replay}`, () =>
      Effect.gen(function*() {
        const result = yield* simulate(Number(replay), options)
        if (result.violations.length > 0) expect.fail(yield* explain(result, options, 400))
        console.log(`seed ${replay}: all rules hold\n${format(result.scenario)}\n\n${eventLog(result.recording)}`)
      }), 600_000)
    return
  }

  const PER_TEST = 2_500
  for (let from = 0; from < 10_000; from += PER_TEST) {
    it.effect(`seeds ${from}..${from + PER_TEST - 1}: every rule holds`, () => seeds(from, PER_TEST), 170_000)
  }
})
