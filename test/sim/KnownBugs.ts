/**
 * Known bugs in baton's core that the simulation found, each with its regression test under
 * `test/sim/regressions/` (a normal test that fails until the bug is fixed). The many-seed runs
 * leave each one out (on by default: `DEFAULT_EXCLUDE` in Sim.ts; `npm run sim -- --all` and
 * `SIM_ALL=1` put them back), so they stay green and keep finding new bugs:
 * - `exclude` takes the pattern out of generated scenarios;
 * - `waive`, where taking it out would cost too much coverage, ignores exactly its symptom.
 * Remove an entry once its regression test passes.
 */
import type { Violation } from "./CheckCore.ts"
import type { Recording } from "./Runner.ts"
import type { Scenario } from "./Scenario.ts"

export interface KnownBugPattern {
  /** The rule (docs/rules.md) it breaks. */
  readonly rule: string
  readonly description: string
  readonly regression: string
  /** Seeds (before exclusion) that show it. */
  readonly seeds: ReadonlyArray<number>
  /** The scenario without the pattern. */
  readonly exclude?: (scenario: Scenario) => Scenario
  /** Whether a violation is this bug's symptom. */
  readonly waive?: (violation: Violation, recording: Recording) => boolean
}

/**
 * Found and since fixed (their regression tests stay, and pass):
 * - rule 10, a queued speech kept the session busy while its actor lent the floor to a task
 *   (rule10-queued-speech-blocks-quiescence, fixed in a85a102);
 * - rule 2, a follow-up reply after a tool step was not cut by a forced handoff or an interruption
 *   (rule2-follow-up-reply-not-cut, d61b691);
 * - rule 2, a speech started while a task request was in flight ran on after the floor was lent
 *   (rule2-speech-started-while-task-requested, d61b691);
 * - rule 5, an activation delayed by the previous holder's onExit was overtaken by the next
 *   handoff (rule5-activation-overtaken-by-next-handoff, d61b691);
 * - rule 9, background reports entered history out of order (rule9-background-reports-out-of-order, 82557cf);
 * - rule 11, a tool call cut by the close led to a reply while the session closed
 *   (rule11-reply-while-closing, 82557cf);
 * - rule 10, a hook waiting to start a task blocked its agent's onExit, the next agent's onEnter
 *   and quiescence (rule10-hook-lane-blocked-by-waiting-task, 759ca5f);
 * - rule 11, a speech queued while the floor was lent started without its work token
 *   (rule11-speech-started-without-work-token, 759ca5f);
 * - rule 9, a session tool's result was stranded in one actor's queue or lost at close
 *   (rule9-session-tool-results-stranded, 759ca5f);
 * - rule 8, a cut realtime response was not cancelled before the connection was used again
 *   (rule8-realtime-cut-response-not-cancelled);
 * - rule 7, a connection whose context cannot be edited was kept after it went out of sync
 *   (rule7-realtime-context-out-of-sync);
 * - rule 7, a fallback under a playing reply failed that reply (rule7-realtime-fallback-drops-reply);
 * - rule 2, an ending TaskGroup took held input as its own turn (rule2-group-replies-while-completing);
 * - rules 2 and 10, a caller the floor came back to from a task did not take its connection, the
 *   end of a turn said while a connection moved between holders was dropped, and the user's audio
 *   to a new holder waited for its answer (rule10-spoken-turn-while-the-connection-moves);
 * - rule 9, a session tool's progress reported before the close was recorded after the cancelled
 *   result the close gave it (rule9-session-report-after-result-at-close);
 * - rule 9, a report of a call whose output waited for a task held back every other call's later
 *   reports (rule9-report-held-behind-another-call);
 * - rule 7, on a Gemini-like model a reply retried after a fallback fought the server's own answer
 *   to the user's newer spoken turn (rule7-server-answer-supersedes-retried-reply, seed 219730).
 */
export const KnownBugs = {} satisfies Record<string, KnownBugPattern>

export type KnownBug = keyof typeof KnownBugs

const patterns = (bugs: ReadonlyArray<KnownBug>): ReadonlyArray<KnownBugPattern> =>
  bugs.map((bug) => (KnownBugs as Record<string, KnownBugPattern>)[bug]!)

/** The scenario without the patterns. */
export const applyExclusions = (scenario: Scenario, list: ReadonlyArray<KnownBugPattern>): Scenario =>
  list.reduce((s, pattern) => pattern.exclude?.(s) ?? s, scenario)

/** The violations that are not the symptom of one of the patterns. */
export const applyWaivers = (violations: ReadonlyArray<Violation>, recording: Recording, list: ReadonlyArray<KnownBugPattern>) =>
  violations.filter((x) => !list.some((pattern) => pattern.waive?.(x, recording)))

export const excludeKnownBugs = (scenario: Scenario, bugs: ReadonlyArray<KnownBug>): Scenario => applyExclusions(scenario, patterns(bugs))

export const waiveKnownBugs = (violations: ReadonlyArray<Violation>, recording: Recording, bugs: ReadonlyArray<KnownBug>) =>
  applyWaivers(violations, recording, patterns(bugs))
