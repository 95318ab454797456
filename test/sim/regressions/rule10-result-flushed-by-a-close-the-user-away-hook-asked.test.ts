/**
 * Found by the simulation (seed 159250): a0 hands off to a2 and starts a long-running tool in
 * the same batch; `run` waits for background tools. The tool finishes (its handler ends, the run
 * resolves on that step: nothing it started is still running) but its result is not told: a0
 * no longer holds the floor, so it keeps the result until it gets the floor back (rule 9). Later
 * the user is away a second time and a2's onUserAway ends the call; the close records what a0
 * kept (the call's `:result` pair), then reports `close`. The check took those records for
 * events after the run with nothing happening, though a close had been asked (only the `close`
 * event itself was the hook's). What a close records is its own doing, whoever asked for it,
 * as the other checks already take it (`ctx.closeSeq`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("a paused agent's background result recorded by a close onUserAway asked (simulation regression)", () => {
  it.effect("rule 10: a run that waited for background tools resolves when they finish; what the away hook's close records later is the close's (seed 159250)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(159250, { exclude: DEFAULT_EXCLUDE })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      const rec = result.recording
      const run = rec.runs[0]!
      assert.isTrue(run.background && run.idleAtResolution)
      // The long tool's handler finished by the time the run resolved, its agent not holding the floor.
      const finish = rec.finishes.find((f) => f.tool === "long_3")!
      assert.isAtMost(finish.seq, run.resolvedSeq!)
      assert.notStrictEqual(finish.holder, finish.agent)
      // Its result was recorded after the close was asked by a2's onUserAway, on its second silence.
      const closer = rec.away.find((a) => a.agent === "a2" && a.times === 2)!
      assert.isDefined(closer)
      const recorded = rec.events.find((e) => e.type === "conversation_item_added" && e.item._tag === "FunctionCallOutput" && e.item.callId === `${finish.callId}:result`)
      assert.isAtLeast(recorded!.seq, rec.closeSeq!)
      assert.strictEqual(rec.events.at(-1)?.type, "close")
    }), 60_000)
})
