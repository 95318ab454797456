/**
 * Found by the simulation (seeds 1719 and 136721) while spoken turns were made to be held as
 * typed ones are (issue 12, part 5): a turn the server answers by itself while the holder cannot
 * take it is held, its answer cancelled, and the turn passed on when the floor moves. Its words
 * must go with it: in 1719 the transcript had come before the server's answer, behind another
 * speech's words; in 136721 the turn was heard on the connection before it came to the holder
 * (the words were in its context, merged by the handoff). Without them the turn was lost, with
 * an error saying so.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 10: quiescent runs (simulation regression)", () => {
  for (const seed of [1719, 136721]) {
    it.effect(`rule 10: a spoken turn held while the floor moves reaches the next holder with its words (seed ${seed})`, () =>
      Effect.gen(function*() {
        const result = yield* simulate(seed, { exclude: DEFAULT_EXCLUDE })
        assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
        // the situation happened: a spoken turn came while the floor was about to move
        assert.isTrue(result.recording.events.some((e) => e.type === "user_state_changed" && e.state === "speaking"))
        assert.isTrue(result.recording.events.some((e) => e.type === "agent_handoff" && e.kind === "handoff"))
      }), 60_000)
  }
})
