/**
 * Found by the simulation's user-away draws (seed 2062). A forced handoff resumed a0, which had
 * handed off while thinking, and its reply began; the away watcher had last seen a2 go back to
 * listening and took that for the holder's state, so the user was marked away (and `onUserAway`
 * would run) while a0 was still thinking (rule 1). The watcher now keeps each agent's state and
 * counts only the holder's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 1: one floor (simulation regression)", () => {
  it.effect("rule 1: the user is not away while a resumed holder is still thinking (seed 2062)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(2062, { exclude: DEFAULT_EXCLUDE })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      // the situation happened: a silence past userAwayTimeout and a forced handoff back to a0
      assert.isDefined(result.scenario.userAwayTimeout)
      assert.isTrue(result.recording.events.some((e) => e.type === "agent_handoff" && e.to === "a0" && e.resumed))
    }), 60_000)
})
