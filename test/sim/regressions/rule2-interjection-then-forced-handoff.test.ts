/**
 * Found by the simulation (seed 45589, a cascaded voice scenario), after words said during a
 * tool step began to interject (Speeches.ts).
 *
 * A say made while the holder's tools ran was playing; the batch ended and the reply waited for
 * the say before asking the model again. A forced handoff then cut the say, and the reply went
 * on: a model request by an agent that was passing the floor, and its speech ending after the
 * handoff (rule 2). The reply now looks again after the wait: passing, or its follow-up cut, it
 * stops there.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 2: silence after handoff (simulation regression)", () => {
  it.effect("rule 2: a reply waiting for an interjection stops when a forced handoff cuts it", () =>
    Effect.gen(function*() {
      const result = yield* simulate(45589, { exclude: DEFAULT_EXCLUDE, programUses: false })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      // the situation happened: a say was cut by the handoff
      assert.isTrue(result.recording.events.some((e) => e.type === "speech_finished" && e.interrupted && e.agent === "a0"))
      assert.isTrue(result.recording.events.some((e) => e.type === "agent_handoff" && e.from === "a0"))
    }), 60_000)
})
