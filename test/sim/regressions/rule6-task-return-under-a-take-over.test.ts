/**
 * Found by the simulation (seeds 125697 and 195962): an agent runs a task that runs a task of
 * its own, and a person takes the floor over. Both tasks are cancelled in that one step; the
 * inner one's result (cancelled) was sent to the outer task after the inner's onExit, but the
 * outer task had closed by then, its Scope interrupting the flow that awaited the result: a
 * return that never reached its flow. The outer task now closes once that flow has its result.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("a nested task's return under a take-over (simulation regressions)", () => {
  for (const seed of [125697, 195962]) {
    it.effect(`rule 6: a task cancelled by a take-over returns to the task that awaited it, cancelled too (seed ${seed})`, () =>
      Effect.gen(function*() {
        const result = yield* simulate(seed, { exclude: DEFAULT_EXCLUDE })
        assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
        const events = result.recording.events
        const takeOver = events.findIndex((e) => e.type === "agent_handoff" && e.kind === "take_over")
        assert.isTrue(takeOver >= 0)
        // Both tasks went back in the take-over's step, and each awaiting flow got its result.
        const returns = events.filter((e) => e.type === "agent_handoff" && e.kind === "return" && /took over/.test(e.reason ?? ""))
        assert.isAtLeast(returns.length, 2)
        for (const r of returns) {
          if (r.type !== "agent_handoff") continue
          const got = result.recording.taskOutcomes.filter((o) => o.caller === r.to && o.task === r.from && !o.ok)
          assert.isAtLeast(got.length, 1, `${r.to} <- ${r.from}`)
        }
      }), 60_000)
  }
})
