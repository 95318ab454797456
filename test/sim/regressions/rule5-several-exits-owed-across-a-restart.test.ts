/**
 * Found by the simulation with crashes (seed 48764; failed at a2773ef).
 *
 * a3 and a1 hand the floor back and forth every 300 ms; a3's onExit takes 500 ms, so each pass
 * queues one more onExit in its hook lane behind the last. The journal's floor entry listed a3 as
 * exiting only once, and the first onExit to start cleared it: the process died with a3 holding
 * the floor again and three onExits owed, and the resume ran none of them (rule 5 over both lives:
 * 89 onExits for 92 passes). The floor entry now lists an actor once per onExit not started, and
 * the resume runs each, once, before the holder goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as Journal from "../../../src/internal/Journal.ts"
import { debug, simulateCrash } from "../Crash.ts"

/** How many onExits the holder owes, as the journal says. */
const owedByHolder = (folded: Journal.Folded) => folded.floor?.exiting?.filter((key) => key === folded.floor!.holder).length ?? 0

describe("rule 5: hooks exactly once across a restart (simulation regression)", () => {
  it.effect("rule 5: every onExit the holder owed when the process died runs once after the resume, however many passes queued them", () =>
    Effect.gen(function*() {
      // The seed's drawn crash point, then the first point where a3 holds the floor owing two.
      const drawn = yield* simulateCrash(48764)
      assert.deepStrictEqual(drawn.violations, [])
      const result = yield* simulateCrash(48764, { at: (folded) => owedByHolder(folded) >= 2 })
      assert.isUndefined(result.skipped, "the journal never says the holder owes two onExits")
      assert.deepStrictEqual(result.violations, [])
      // Over both lives a3 ran one onExit per pass.
      const { rec, cut } = debug.last!
      const passes = rec.events.filter((e) => e.type === "agent_handoff" && e.from === "a3").length
      const exits = rec.hooks.filter((h) => h.agent === "a3" && h.hook === "onExit")
      assert.strictEqual(exits.length, passes)
      // The owed ones ran in life 2, before anything else a3 did there.
      assert.isAtLeast(exits.filter((h) => h.seq >= cut.seq).length, 2)
    }), { timeout: 120_000 })
})
