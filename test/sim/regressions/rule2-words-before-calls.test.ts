/**
 * Found by the simulation (seed 1522780) in the change that lets a typed turn cut the words a
 * reply says before its tool calls without cutting the calls (issue 39): those words played in
 * the tool phase, so a task a sibling tool started took the floor while they still played
 * (rule 2: audio and items of the caller while the task held the floor), and a passing floor
 * did not cut them. They are now a phase of their own (`words`): nothing is said over them, a
 * task waits for them to end, and a cut of any kind ends them while the calls run.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 2: silence after handoff (simulation regression)", () => {
  it.effect("rule 2: a task started by a sibling tool waits for the words said before the calls (seed 1522780)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(1522780, { exclude: DEFAULT_EXCLUDE })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      assert.isTrue(result.recording.events.some((e) => e.type === "agent_handoff" && e.kind === "task"))
    }), 60_000)
})
