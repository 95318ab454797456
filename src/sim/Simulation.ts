/**
 * The simulation on a user's own agents: a seed's schedule, run and checked; many seeds; a
 * failure shrunk and printed as a vitest test that replays it with the public API.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect } from "effect"
import { type Agent, isAgent } from "../Agent.ts"
import { check, RULE_NAMES, signature, type Violation } from "./Check.ts"
import { type Recording, run, type SimAgents } from "./Run.ts"
import { format, generate, type Schedule } from "./Schedule.ts"
import { shrink } from "./Shrink.ts"

/**
 * One seed's (or schedule's) run: the schedule, what was recorded and the rules it broke.
 *
 * @since 0.1.0
 * @category models
 */
export interface Result {
  readonly schedule: Schedule
  readonly recording: Recording
  readonly violations: ReadonlyArray<Violation>
}

/**
 * The agents of an agents module (the shape `baton serve --agents` loads): the entry agent as
 * `agent` or the default export, then those of `agents` (every agent a forced handoff may go to
 * and the scripted model answers for), and `userdata`. Throws an `Error` saying what to fix.
 *
 * @since 0.1.0
 * @category constructors
 */
export const agentsOf = (module: Readonly<Record<string, unknown>>): SimAgents => {
  const entry = module["agent"] ?? module["default"]
  if (!isAgent(entry)) throw new Error("export the entry agent as `agent` (or as the default export), made with Agent.make")
  const listed = module["agents"]
  if (listed !== undefined && !(Array.isArray(listed) && listed.every(isAgent))) {
    throw new Error("`agents` must be an array of every agent and task a session may run")
  }
  const agents: Array<Agent> = [entry]
  for (const agent of (listed ?? []) as ReadonlyArray<Agent>) if (!agents.some((a) => a.name === agent.name)) agents.push(agent)
  const own = agents.find((a) => a.model !== undefined)
  if (own) {
    throw new Error(`agent ${own.name} has a model of its own: the simulation drives every agent with its scripted model (give the model to the session instead)`)
  }
  const userdata = module["userdata"]
  if (userdata !== undefined && typeof userdata !== "function") throw new Error("`userdata` must be a function returning each session's userdata")
  return { agents, ...(userdata ? { userdata: userdata as () => unknown } : {}) }
}

/**
 * Runs `schedule` and checks it.
 *
 * @since 0.1.0
 * @category running
 */
export const simulateSchedule = (schedule: Schedule, sim: SimAgents): Effect.Effect<Result> =>
  Effect.map(run(schedule, sim), (recording) => ({ schedule, recording, violations: check(recording, sim.agents) }))

/**
 * Generates the schedule of `seed`, runs it and checks it.
 *
 * @since 0.1.0
 * @category running
 */
export const simulate = (seed: number, sim: SimAgents): Effect.Effect<Result> => simulateSchedule(generate(seed, sim.agents), sim)

/**
 * The smallest schedule found that still breaks the first violated rule of `result` (by its
 * signature), with its own violations.
 *
 * @since 0.1.0
 * @category shrinking
 */
export const shrinkFailure = (result: Result, sim: SimAgents, budget = 300) =>
  Effect.gen(function*() {
    const wanted = signature(result.violations[0]!)
    const shrunk = yield* shrink(
      result.schedule,
      (candidate) => Effect.map(simulateSchedule(candidate, sim), (r) => r.violations.some((x) => signature(x) === wanted)),
      budget
    )
    return { result: yield* simulateSchedule(shrunk.schedule, sim), runs: shrunk.runs }
  })

/**
 * Replays `schedule` on the agents of `module` and resolves with its violations (none when the
 * rules hold). What a printed test calls.
 *
 * @since 0.1.0
 * @category running
 */
export const replay = (module: Readonly<Record<string, unknown>>, schedule: Schedule): Promise<ReadonlyArray<Violation>> =>
  Effect.runPromise(Effect.map(simulateSchedule(schedule, agentsOf(module)), (r) => r.violations))

/** JSON, one line where it fits in 100 characters, else one line per member. */
const literal = (value: unknown, indent = ""): string => {
  const line = JSON.stringify(value)
  if (line.length + indent.length <= 100 || typeof value !== "object" || value === null) return line
  const inner = `${indent}  `
  if (Array.isArray(value)) return `[\n${value.map((x) => `${inner}${literal(x, inner)}`).join(",\n")}\n${indent}]`
  return `{\n${Object.entries(value).map(([k, x]) => `${inner}${JSON.stringify(k)}: ${literal(x, inner)}`).join(",\n")}\n${indent}}`
}

/**
 * A vitest test that replays `result`'s schedule on the agents of `modulePath` (as the test file
 * imports it) and fails while the rule it broke is broken.
 *
 * @since 0.1.0
 * @category formatting
 */
export const testFor = (result: Result, modulePath: string): string => {
  const first = result.violations[0]!
  const title = `seed ${result.schedule.seed} keeps ${first.rule} (${RULE_NAMES[first.rule]})`
  return [
    `// baton sim: ${first.rule} (${RULE_NAMES[first.rule]}): ${first.message}`,
    ...format(result.schedule).split("\n").map((line) => `//   ${line}`),
    `import { expect, it } from "vitest"`,
    `import { Sim } from "@baton-voice/baton/sim"`,
    `import * as agents from ${JSON.stringify(modulePath)}`,
    ``,
    `const schedule = ${literal(result.schedule)}`,
    ``,
    `it(${JSON.stringify(title)}, async () => {`,
    `  expect(await Sim.replay(agents, schedule)).toEqual([])`,
    `}, 120_000)`,
    ``
  ].join("\n")
}

/**
 * Many seeds' runs: how many ran and the failing one, if any.
 *
 * @since 0.1.0
 * @category models
 */
export interface Summary {
  readonly seeds: number
  readonly failures: ReadonlyArray<Result>
  readonly ms: number
}

/**
 * Runs `count` seeds from `from`, stopping after the first failing one.
 *
 * @since 0.1.0
 * @category running
 */
export const runSeeds = (from: number, count: number, sim: SimAgents): Effect.Effect<Summary> =>
  Effect.gen(function*() {
    const started = performance.now()
    const failures: Array<Result> = []
    let seeds = 0
    for (let seed = from; seed < from + count; seed++) {
      const result = yield* simulate(seed, sim)
      seeds++
      if (result.violations.length > 0) {
        failures.push(result)
        break
      }
    }
    return { seeds, failures, ms: performance.now() - started }
  })
