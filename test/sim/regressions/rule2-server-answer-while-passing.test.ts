/**
 * Found by the final sweep (seed 2008206). Not a bug of baton's, a gap of the checker's: a batch
 * that hands off waits for a reply said over it (whose own tool was still running); meanwhile
 * the user spoke and the realtime server started an answer by itself (its turn detection). baton
 * held the turn and cancelled that answer unheard, as it does during any tool step, and the turn
 * went to the next holder; the checker counted the server's own start as a model call of the
 * outgoing agent after its handoff. It now tells a response the server started (and baton
 * cancelled unheard) from one baton asked for.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 2: silence after handoff (simulation regression)", () => {
  it.effect("rule 2: a server's own answer to the user while a handoff waits for a reply said over its batch is cancelled unheard (seed 2008206)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(2008206, { exclude: DEFAULT_EXCLUDE })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      assert.isTrue(result.recording.requests.some((r) => r.byServer))
    }), 60_000)
})
