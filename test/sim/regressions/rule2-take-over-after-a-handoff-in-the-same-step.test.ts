/**
 * Found by the simulation (seeds 24998, 61266 and 72262): a handoff and a take-over asked at the
 * same instant. The take-over asked the agent holding the floor then (a0) to cut its words, but
 * the handoff moved the floor to a1 before a0 answered; the take-over then took the floor from a1
 * without asking it, so a1's reply, cut later by its deactivation, was recorded after the
 * operator's first line: a message by a1 after it had passed the floor. The take-over now asks
 * whoever holds the floor when it applies, again if the floor moved meanwhile.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("a take-over racing a handoff (simulation regressions)", () => {
  for (const seed of [24998, 61266, 72262]) {
    it.effect(`rule 2: the agent the floor is taken from says nothing after the take-over, also when a handoff moved the floor first (seed ${seed})`, () =>
      Effect.gen(function*() {
        const result = yield* simulate(seed, { exclude: DEFAULT_EXCLUDE })
        assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
        const events = result.recording.events
        const takeOvers = events.flatMap((e, i) => e.type === "agent_handoff" && e.kind === "take_over" ? [{ i, from: e.from }] : [])
        assert.isAtLeast(takeOvers.length, 1)
        for (const { from, i } of takeOvers) {
          const after = events.slice(i + 1)
          const end = after.findIndex((e) => e.type === "agent_handoff" && e.kind === "hand_back")
          const held = end < 0 ? after : after.slice(0, end)
          const late = held.filter((e) => e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "assistant" && e.item.agent === from)
          assert.deepStrictEqual(late.map((e) => e.type === "conversation_item_added" && e.item._tag === "Message" ? e.item.text : ""), [], `${from} spoke after the take-over`)
        }
      }), 60_000)
  }
})
