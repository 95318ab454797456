/**
 * Found by the crash simulation's seed run (seeds 82782 and 121612, life 1, a plain session's
 * rule): a task calling a transfer (which a task may not make: answered as an error) when a
 * person takes the floor over is cancelled, and the call with it. Rule 4 took that cancellation
 * as the answer; rule 3 still asked the transfer's output to be the refusal. Both now do.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("a task's transfer cut by a take-over (simulation regressions)", () => {
  for (const seed of [82782, 121612]) {
    it.effect(`rule 3: a task's handoff call cancelled because a person took the floor over is answered, not refused (seed ${seed})`, () =>
      Effect.gen(function*() {
        const result = yield* simulate(seed, { exclude: DEFAULT_EXCLUDE })
        assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
        const cancelled = result.recording.events.some((e) =>
          e.type === "function_tools_executed" && e.calls.some((c) => c.output.status === "cancelled")
        )
        const takeOver = result.recording.events.some((e) => e.type === "agent_handoff" && e.kind === "take_over")
        assert.isTrue(cancelled && takeOver)
      }), 60_000)
  }
})
