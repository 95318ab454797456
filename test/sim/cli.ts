/**
 * The simulation outside vitest:
 *
 *   npm run sim -- --seeds 1000 [--from 5000]     many seeds, a summary, the first failure shrunk
 *   npm run sim -- --seed 1234 [--log]            one seed: its reproduction (or its log with --log)
 *
 * Options: --all (include known core bugs the default runs leave out), --no-shrink,
 * --target <text> (shrink for the violation whose message contains it, not the first one),
 * --fault order|last (switch on a ProtocolFaults variant, to see the checker catch it).
 * Each scenario provides its own TestClock, so no live clock is involved. Exits 1 on failure.
 */
import { Effect } from "effect"
import { Faults } from "../../src/index.ts"
import { eventLog, formatViolations } from "./Report.ts"
import { format } from "./Scenario.ts"
import { DEFAULT_EXCLUDE, explain, runSeeds, simulate, type SimOptions } from "./Sim.ts"

const args = process.argv.slice(2)

const HELP = `npm run sim -- [options]

  --seeds N       run N seeds (default 1000), print a summary and the first failure, shrunk
  --from N        start at seed N (default 0)
  --seed N        run one seed: its reproduction, or with --log its whole event log
  --log           with --seed: print the event log
  --all           include the known core bugs the default runs leave out
  --no-shrink     do not shrink a failure
  --target TEXT   shrink for the violation whose message contains TEXT
  --fault NAME    switch on a protocol fault (order | last) to see the checker catch it
  --help          this text`

/** Options and whether each takes a value; anything else is refused before any seed runs. */
const known: Record<string, boolean> = {
  "--seeds": true, "--from": true, "--seed": true, "--target": true, "--fault": true,
  "--log": false, "--all": false, "--no-shrink": false, "--help": false, "-h": false
}
const unknown = (() => {
  for (let i = 0; i < args.length; i++) {
    const takes = known[args[i]!]
    if (takes === undefined) return args[i]
    if (takes) i++
  }
  return undefined
})()
if (args.includes("--help") || args.includes("-h")) {
  console.log(HELP)
  process.exit(0)
}
if (unknown !== undefined) {
  console.error(`sim: unknown option ${unknown}\n\n${HELP}`)
  process.exit(2)
}
const flag = (name: string) => args.includes(`--${name}`)
const value = (name: string): number | undefined => {
  const i = args.indexOf(`--${name}`)
  if (i < 0) return undefined
  const n = Number(args[i + 1])
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} needs a non-negative integer`)
  return n
}
const fault = (() => {
  const i = args.indexOf("--fault")
  const name = i >= 0 ? args[i + 1] : undefined
  if (name === undefined) return undefined
  if (name === "order") return { ...Faults.none, outputsInCompletionOrder: true }
  if (name === "last") return { ...Faults.none, lastFinisherDecides: true }
  throw new Error("--fault takes order or last")
})()

const options: SimOptions = { exclude: flag("all") ? [] : DEFAULT_EXCLUDE, faults: fault }
const target = (() => {
  const i = args.indexOf("--target")
  return i >= 0 ? args[i + 1] : undefined
})()
const shrinkBudget = flag("no-shrink") ? 0 : 400

const main = Effect.gen(function*() {
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

Effect.runPromise(main).then(
  (code) => process.exit(code),
  (error) => {
    console.error(error)
    process.exit(2)
  }
)
