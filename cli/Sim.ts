/**
 * `baton sim`: the simulation of random schedules against the rules.
 *
 * `baton sim --agents ./agents.mjs` runs it on the user's own agents (src/sim, in the package):
 * each seed's schedule is run and checked; the first failure is shrunk and printed with a vitest
 * test that replays it, and the exit code is 1.
 *
 * Without `--agents`, it is the repository's simulation over generated agents (test/sim, not in
 * the package): in a clone, run `npm run sim -- --help`.
 */
import { Console, Data, Effect, Option } from "effect"
import { existsSync } from "node:fs"
import { basename } from "node:path"
import { fileURLToPath } from "node:url"
import { RULE_NAMES } from "../src/sim/Check.ts"
import { format } from "../src/sim/Schedule.ts"
import * as Sim from "../src/sim/Simulation.ts"
import * as Agents from "./Agents.ts"

export interface SimFlags {
  readonly seeds: number
  readonly from: number
  readonly seed: Option.Option<number>
  readonly log: boolean
  readonly all: boolean
  readonly noShrink: boolean
  readonly target: Option.Option<string>
  readonly fault: Option.Option<"order" | "last">
  readonly agents?: Option.Option<string>
}

/** What `test/sim/cli.ts` exports (typed here so that the build does not follow the import). */
interface SimModule {
  readonly runSim: (args: {
    readonly seeds: number
    readonly from: number
    readonly seed: number | undefined
    readonly log: boolean
    readonly all: boolean
    readonly shrink: boolean
    readonly target: string | undefined
    readonly fault: "order" | "last" | undefined
  }) => Effect.Effect<number>
}

// Computed, not a literal: the build must not pull the simulation (and the tests) into dist/.
const simModule = new URL(["..", "test", "sim", "cli.ts"].join("/"), import.meta.url)

/** The simulation is in the clone but did not load (dependencies not installed, a broken edit). */
export class SimLoadError extends Data.TaggedError("SimLoadError")<{ readonly message: string }> {}

const load = Effect.tryPromise({
  try: () => import(simModule.href) as Promise<SimModule>,
  catch: (e) =>
    new SimLoadError({
      message: `baton sim: cannot load the simulation (test/sim/cli.ts): ${String(e instanceof Error ? e.message : e).split("\n")[0]}; ` +
        "install the clone's dependencies: npm install"
    })
})

/** The module as a test file next to it imports it. */
const importPath = (path: string) => `./${basename(path)}`

/**
 * `baton sim --agents <path>`: `--seeds` seeds from `--from`, or the one `--seed`; 0 when every
 * run keeps the rules, 1 with the shrunk failure and its test printed, or when the module does
 * not load.
 */
export const simAgents = (path: string, flags: Pick<SimFlags, "seeds" | "from" | "seed" | "noShrink">) =>
  Effect.gen(function*() {
    const loaded = yield* Effect.result(Agents.load(path))
    if (loaded._tag === "Failure") {
      yield* Console.error(`baton sim: ${loaded.failure.message}`)
      return 1
    }
    const module = loaded.success
    let agents: ReturnType<typeof Sim.agentsOf>
    try {
      agents = Sim.agentsOf({ agent: module.agent, agents: module.agents, userdata: module.userdata })
    } catch (e) {
      yield* Console.error(`baton sim: --agents ${path}: ${(e as Error).message}`)
      return 1
    }
    const from = Option.getOrElse(flags.seed, () => flags.from)
    const count = Option.isSome(flags.seed) ? 1 : flags.seeds
    const summary = yield* Sim.runSeeds(from, count, agents)
    const names = agents.agents.map((a) => a.name).join(", ")
    const failure = summary.failures[0]
    if (!failure) {
      yield* Console.log(`baton sim --agents ${path}: ${summary.seeds} seeds (${from}..${from + summary.seeds - 1}) on ${names}: all kept the rules (${(summary.ms / 1000).toFixed(1)} s)`)
      return 0
    }
    yield* Console.log(`baton sim --agents ${path}: seed ${failure.schedule.seed} broke the rules (after ${summary.seeds} seeds):`)
    for (const x of failure.violations) yield* Console.log(`  [${x.rule}: ${RULE_NAMES[x.rule]}] ${x.message}`)
    const { result, runs } = flags.noShrink ? { result: failure, runs: 0 } : yield* Sim.shrinkFailure(failure, agents)
    const shown = result.violations.length > 0 ? result : failure
    yield* Console.log(`\n${flags.noShrink ? "The schedule" : `Shrunk in ${runs} runs`}:\n${format(shown.schedule)}`)
    yield* Console.log(`\nA vitest test that fails while this is so (next to ${path}):\n\n${Sim.testFor(shown, importPath(path))}`)
    return 1
  })

export const sim = (flags: SimFlags) =>
  Effect.gen(function*() {
    if (flags.agents && Option.isSome(flags.agents)) return yield* simAgents(flags.agents.value, flags)
    if (!existsSync(fileURLToPath(simModule))) {
      yield* Console.error(
        "baton sim: run it on your agents with baton sim --agents ./agents.mjs; the simulation over generated agents ships with the baton repository, not the package (in a clone: npm run sim -- --help)"
      )
      return 2
    }
    const loaded = yield* Effect.result(load)
    if (loaded._tag === "Failure") {
      yield* Console.error(loaded.failure.message)
      return 1
    }
    const { runSim } = loaded.success
    return yield* runSim({
      seeds: flags.seeds,
      from: flags.from,
      seed: Option.getOrUndefined(flags.seed),
      log: flags.log,
      all: flags.all,
      shrink: !flags.noShrink,
      target: Option.getOrUndefined(flags.target),
      fault: Option.getOrUndefined(flags.fault)
    })
  })
