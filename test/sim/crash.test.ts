/**
 * The simulation with crashes (Crash.ts): each seed's scenario runs as a durable session, its
 * process dies at a point the seed draws, and a new one resumes from the journal. Larger runs:
 * `node test/sim/crash-cli.ts --seeds 20000 --from 0`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { simulateCrash } from "./Crash.ts"

describe("simulation with crashes", () => {
  it.effect("seeds 0..199: the journal is the session, and a resume from any append loses no item, records none twice and answers every call once", () =>
    Effect.gen(function*() {
      const failures: Array<string> = []
      let crashed = 0
      for (let seed = 0; seed < 200; seed++) {
        const result = yield* simulateCrash(seed)
        if (!result.skipped) crashed++
        for (const v of result.violations) failures.push(`seed ${seed}: ${v.rule}: ${v.message.slice(0, 300)}`)
      }
      assert.deepStrictEqual(failures, [])
      // Most seeds crash and resume (cascade scenarios and sessions closed before their first
      // journaled floor do not).
      assert.isAbove(crashed, 150)
    }), { timeout: 120_000 })

  it.effect("seed 38673: a crash after a handoff to an agent whose waiting task took the floor at once resumes both (the caller's onResume runs) and goes quiescent", () =>
    Effect.gen(function*() {
      const result = yield* simulateCrash(38673)
      assert.isUndefined(result.skipped)
      assert.deepStrictEqual(result.violations, [])
    }), { timeout: 60_000 })
})
