/**
 * `baton sim`: the simulation of random schedules against the twelve rules. It is a tool of the
 * baton repository (it lives with the tests and is not in the package): in a clone, run
 * `npm run sim -- --help`.
 */
import { Console, Data, Effect, Option } from "effect"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

export interface SimFlags {
  readonly seeds: number
  readonly from: number
  readonly seed: Option.Option<number>
  readonly log: boolean
  readonly all: boolean
  readonly noShrink: boolean
  readonly target: Option.Option<string>
  readonly fault: Option.Option<"order" | "last">
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

export const sim = (flags: SimFlags) =>
  Effect.gen(function*() {
    if (!existsSync(fileURLToPath(simModule))) {
      yield* Console.error("baton sim: the simulation ships with the baton repository, not the package; in a clone: npm run sim -- --help")
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
