/**
 * The simulation with crashes outside vitest (Crash.ts):
 *
 *   node test/sim/crash-cli.ts --seeds 20000 [--from 0] [--cascade]
 *
 * `--cascade`: only the seeds whose scenario is cascaded voice (the others are passed over).
 *
 * Prints a summary and the first failures; exits 1 when a seed broke a rule.
 */
import { Effect } from "effect"
import { simulateCrash } from "./Crash.ts"
import { DEFAULT_EXCLUDE, scenarioFor } from "./Sim.ts"

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at < 0 ? fallback : Number(process.argv[at + 1])
}
const from = arg("from", 0)
const seeds = arg("seeds", 1000)
const started = Date.now()
const failures: Array<{ seed: number; text: string }> = []
const cascadeOnly = process.argv.includes("--cascade")
let skipped = 0
let crashed = 0
let cascades = 0
for (let seed = from; seed < from + seeds; seed++) {
  const cascade = scenarioFor(seed, { exclude: DEFAULT_EXCLUDE }).cascade !== undefined
  if (cascadeOnly && !cascade) continue
  const result = await Effect.runPromise(simulateCrash(seed))
  if (result.skipped) skipped++
  else {
    crashed++
    if (cascade) cascades++
  }
  if (result.violations.length > 0) {
    failures.push({ seed, text: result.violations.slice(0, 4).map((v) => `  ${v.rule}: ${v.message.slice(0, 400)}`).join("\n") })
  }
  if ((seed - from + 1) % 1000 === 0) process.stderr.write(`  ${seed - from + 1} seeds...\n`)
}
const seconds = (Date.now() - started) / 1000
console.log(`seeds ${from}..${from + seeds - 1}${cascadeOnly ? " (cascaded voice only)" : ""}: ${crashed} crashed and resumed (${cascades} cascaded voice), ${skipped} without a crash (no floor journaled), ${failures.length} failed, ${seconds.toFixed(1)} s`)
if (failures.length > 0) console.log(`failed seeds: ${failures.map((f) => f.seed).join(" ")}`)
for (const failure of failures.slice(0, 10)) console.log(`seed ${failure.seed}:\n${failure.text}`)
process.exitCode = failures.length > 0 ? 1 : 0
