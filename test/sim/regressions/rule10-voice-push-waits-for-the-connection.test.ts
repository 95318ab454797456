/**
 * Found by the simulation (seed 1437013; fails at e1363a9). Not a bug of baton's, one of the
 * checker's: the user's audio reached a new holder whose connection was still being acquired
 * (the old holder's cut answer had to end first, 3 s at most), so `pushAudio` returned only
 * then; a run that did not involve it resolved meanwhile, and what the audio brought (its
 * connection, the user's speech) was counted as activity after the run, since the checker
 * measured the audio's time from when the push was called. It now measures it from when the
 * push returned.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 10: quiescent runs (simulation regression)", () => {
  it.effect("rule 10: a voice push that waits for the holder's connection is in flight until it returns (seed 1437013)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(1437013, { exclude: DEFAULT_EXCLUDE, programUses: false })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      // the situation happened: a push waited more than a second, and a run resolved meanwhile
      const waited = result.recording.actions.filter((a) => a.op === "voice" && (a.ended ?? a.at) - a.at > 1000)
      assert.isTrue(waited.length > 0)
      assert.isTrue(result.recording.runs.some((r) => waited.some((a) => r.resolvedOrder !== undefined && r.resolvedOrder > a.order)))
    }), 60_000)
})
