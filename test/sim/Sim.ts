/**
 * The simulation: generate a scenario from a seed, run it, check it; run many seeds; shrink a
 * failure to a smaller scenario that breaks the same rule. Used by the vitest suite and the CLI.
 */
import { Effect } from "effect"
import { check, type Violation } from "./Check.ts"
import { generate } from "./Generate.ts"
import { excludeKnownBugs, type KnownBug, KnownBugs, waiveKnownBugs } from "./KnownBugs.ts"
import { reproduction } from "./Report.ts"
import { type Recording, runScenario, type RunOptions } from "./Runner.ts"
import type { Scenario } from "./Scenario.ts"
import { shrink } from "./Shrink.ts"

export interface GeneratorOptions {
  /** Patterns of known core bugs left out of generated scenarios (see KnownBugs.ts). */
  readonly exclude?: ReadonlyArray<KnownBug>
  /** Draw what programs do with the API (Generate.ts `programUses`; default true). A seed found
   * before that vocabulary replays with it off. */
  readonly programUses?: boolean
  /** Draw a person taking the floor and handing it back (Generate.ts `humans`; default true). */
  readonly humans?: boolean
  /** Draw tool approvals and guardrail trips (Generate.ts `approvalsAndGuardrails`; default true). */
  readonly approvals?: boolean
  /** Draw tool timeouts, user away and turn hooks (Generate.ts `timeoutsAwayTurns`; default true). */
  readonly timeouts?: boolean
}

export interface SimOptions extends RunOptions, GeneratorOptions {}

export interface SimResult {
  readonly scenario: Scenario
  readonly recording: Recording
  readonly violations: ReadonlyArray<Violation>
}

/** Known bugs the many-seed runs leave out by default (see KnownBugs.ts). */
export const DEFAULT_EXCLUDE: ReadonlyArray<KnownBug> = Object.keys(KnownBugs) as Array<KnownBug>

export const scenarioFor = (seed: number, options: GeneratorOptions = {}): Scenario =>
  excludeKnownBugs(generate(seed, { programUses: options.programUses ?? true, humans: options.humans ?? true, approvals: options.approvals ?? true, timeouts: options.timeouts ?? true }), options.exclude ?? [])

export const simulateScenario = (scenario: Scenario, options: SimOptions = {}): Effect.Effect<SimResult> =>
  runScenario(scenario, options).pipe(
    Effect.map((recording) => ({ scenario, recording, violations: waiveKnownBugs(check(recording), recording, options.exclude ?? []) }))
  )

export const simulate = (seed: number, options: SimOptions = {}): Effect.Effect<SimResult> =>
  simulateScenario(scenarioFor(seed, options), options)

/** A violation without its names and numbers: what a smaller scenario must still show. */
export const signature = (violation: Violation): string =>
  `${violation.rule}: ${
    violation.message.replace(/\b(a|t|g)\d+\b/g, "X").replace(/\b(call|conn|item)_\w+/g, "$1").replace(/u\d+ please/g, "uN").replace(/\d+/g, "N")
  }`

/**
 * The smallest variant found that still shows a violation of `result` (by its signature): the
 * first one whose message contains `target`, or the first one.
 */
export const shrinkFailure = (result: SimResult, options: SimOptions = {}, budget = 400, target?: string) =>
  Effect.gen(function*() {
    const chosen = result.violations.find((x) => target !== undefined && x.message.includes(target)) ?? result.violations[0]!
    const wanted = signature(chosen)
    const shrunk = yield* shrink(
      result.scenario,
      (candidate) => simulateScenario(candidate, options).pipe(Effect.map((r) => r.violations.some((x) => signature(x) === wanted))),
      budget
    )
    const final = yield* simulateScenario(shrunk.scenario, options)
    return { result: final, runs: shrunk.runs }
  })

/** The readable reproduction of a failure, shrunk when `shrinkBudget` > 0. */
export const explain = (result: SimResult, options: SimOptions = {}, shrinkBudget = 400, target?: string) =>
  Effect.gen(function*() {
    // Known bugs switched back on: the replay line says so.
    const all = DEFAULT_EXCLUDE.some((bug) => !(options.exclude ?? []).includes(bug))
    if (shrinkBudget <= 0) return reproduction(result.recording, result.violations, undefined, all)
    const { result: small, runs } = yield* shrinkFailure(result, options, shrinkBudget, target)
    return `${reproduction(result.recording, result.violations, small.recording, all)}\n\n(shrunk in ${runs} runs; violations of the shrunk scenario:\n${
      small.violations.map((x) => `  [${x.rule}] ${x.message}`).join("\n")
    })`
  })

export interface Summary {
  readonly from: number
  readonly seeds: number
  readonly failures: ReadonlyArray<SimResult>
  readonly ms: number
}

/** Runs `count` seeds from `from`; stops early after `maxFailures` failing seeds. */
export const runSeeds = (
  from: number,
  count: number,
  options: SimOptions = {},
  maxFailures = Infinity,
  onResult?: (result: SimResult) => void
): Effect.Effect<Summary> =>
  Effect.gen(function*() {
    const started = performance.now()
    const failures: Array<SimResult> = []
    let seeds = 0
    for (let seed = from; seed < from + count; seed++) {
      const result = yield* simulate(seed, options)
      seeds++
      onResult?.(result)
      if (result.violations.length > 0) {
        failures.push(result)
        if (failures.length >= maxFailures) break
      }
    }
    return { from, seeds, failures, ms: performance.now() - started }
  })
