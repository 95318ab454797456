/**
 * The simulation on your own agents (`baton sim --agents ./agents.mjs`): random schedules of
 * user turns, interruptions, the user speaking, slow and failing tools, forced handoffs and
 * closes, run under a TestClock with a scripted model that calls your agents' tools with
 * arguments drawn from their schemas; the rules checked on each run; a failure shrunk and
 * printed as a vitest test that replays it (`Sim.replay`).
 *
 * @module @baton-voice/baton/sim
 */
export * as Sim from "./Simulation.ts"
export * as Schedule from "./Schedule.ts"
export * as SimCheck from "./Check.ts"
export * as SimRun from "./Run.ts"
export * as SimShrink from "./Shrink.ts"
export { Prng } from "./Prng.ts"
