/**
 * Found by the simulation (seeds 12124, 27739, 31234, 32504, 37014, 44236, 62936, 72875, 74215,
 * 82835, 84374, 91929, 93179, 101535, 108124), once the pool reported its connection moves as
 * `realtime_connection` events.
 *
 * A handoff between realtime agents cuts the outgoing agent's response; the new holder takes
 * the connection once that response has settled on the server. The take ran in a fiber of its
 * own with no work token, so `session.run` resolved before the connection moved, and the move
 * (reused, updated) came after the run (rule 10). The take now holds a token from its first
 * step, while the message that asked for it still holds its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 10: quiescent runs (simulation regression)", () => {
  it.effect("rule 10: a run with a realtime handoff resolves only once the connection has moved to the new holder", () =>
    Effect.gen(function*() {
      for (const seed of [108124, 12124, 27739]) {
        const result = yield* simulate(seed, { exclude: DEFAULT_EXCLUDE, programUses: false })
        assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [], `seed ${seed}`)
        // the move happened in the scenario: a connection was reused by another agent
        assert.isTrue(result.recording.events.some((e) => e.type === "realtime_connection" && e.action === "reused"), `seed ${seed}`)
      }
    }), 60_000)
})
