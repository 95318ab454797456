/**
 * The simulation outside vitest, behind `baton sim` (`npm run sim -- --help`):
 *
 *   npm run sim -- --seeds 1000 [--from 5000]     many seeds, a summary, the first failure shrunk
 *   npm run sim -- --seed 1234 [--log]            one seed: its reproduction (or its log with --log)
 *
 * The command line itself (options, help, refusals) is `cli/Sim.ts`; this is what it runs.
 * Each scenario provides its own TestClock, so no live clock is involved. The result is the
 * process's exit code: 1 when a rule failed.
 */
import { Effect } from "effect"
import * as Faults from "../../src/Faults.ts"
import { eventLog, formatViolations } from "./Report.ts"
import { format } from "./Scenario.ts"
import { DEFAULT_EXCLUDE, explain, runSeeds, simulate, type SimOptions } from "./Sim.ts"

export interface SimArgs {
  readonly seeds: number
  readonly from: number
  readonly seed: number | undefined
  readonly log: boolean
  /** Include the known core bugs the default runs leave out. */
  readonly all: boolean
  readonly shrink: boolean
  readonly target: string | undefined
  readonly fault: "order" | "last" | undefined
}

export const runSim = (args: SimArgs): Effect.Effect<number> => {
  const faults = args.fault === "order"
    ? { ...Faults.none, outputsInCompletionOrder: true }
    : args.fault === "last"
    ? { ...Faults.none, lastFinisherDecides: true }
    : undefined
  const options: SimOptions = { exclude: args.all ? [] : DEFAULT_EXCLUDE, faults }
  const target = args.target
  const shrinkBudget = args.shrink ? 400 : 0
  const flag = (name: "log") => args[name]
  const value = (name: "seed" | "from" | "seeds") => args[name]
  return main(options, target, shrinkBudget, flag, value)
}

const main = (
  options: SimOptions,
  target: string | undefined,
  shrinkBudget: number,
  flag: (name: "log") => boolean,
  value: (name: "seed" | "from" | "seeds") => number | undefined
) => Effect.gen(function*() {
  const single = value("seed")
  if (single !== undefined) {
    const result = yield* simulate(single, options)
    if (result.violations.length === 0) {
      console.log(`seed ${single}: all rules hold (${result.recording.events.length} events)`)
      console.log(format(result.scenario))
      if (flag("log")) console.log(`\n${eventLog(result.recording)}`)
      return 0
    }
    console.log(yield* explain(result, options, shrinkBudget, target))
    return 1
  }
  const from = value("from") ?? 0
  const count = value("seeds") ?? 1000
  let done = 0
  const summary = yield* runSeeds(from, count, options, Infinity, () => {
    if (++done % 1000 === 0) process.stderr.write(`  ${done} seeds...\n`)
  })
  const seconds = summary.ms / 1000
  console.log(
    `seeds ${summary.from}..${summary.from + summary.seeds - 1}: ${summary.seeds} run, ${summary.failures.length} failed, ` +
      `${seconds.toFixed(1)} s (${(summary.seeds / seconds).toFixed(0)} seeds/s)` +
      (options.exclude?.length ? `; known bugs left out: ${options.exclude.join(", ")}` : "")
  )
  for (const failure of summary.failures.slice(0, 20)) {
    console.log(`\nseed ${failure.scenario.seed}:\n${formatViolations(failure.violations)}`)
  }
  const first = summary.failures[0]
  if (first) console.log(`\n${"=".repeat(100)}\n${yield* explain(first, options, shrinkBudget, target)}`)
  return summary.failures.length > 0 ? 1 : 0
})
