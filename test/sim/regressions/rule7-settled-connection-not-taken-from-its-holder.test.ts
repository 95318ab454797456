/**
 * Found by the simulation at 764fb1e (seed 1904789). Three forced handoffs in 50 ms (a1 -> a0
 * -> a1 -> a0) while the connection's server was still ending a1's cut answer: each take waited
 * for it. When it ended, a0's take (a0 held the floor) leased the connection, then a1's stale
 * take leased it again over a0's lease and gave it straight back (a1 no longer held the floor):
 * the holder's lease was left pointing at a connection that routed nothing to it, and its reply
 * timed out after 10 s (rule 7: reuse when possible, never by accident; a fiber was left too).
 * After waiting for the server, a take now gives up when its owner no longer holds the floor,
 * and never takes a connection another take leased meanwhile.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 7: reuse when possible, never by accident (simulation regression)", () => {
  it.effect("rule 7: a take that waited for the server does not lease the connection over the holder's (seed 1904789)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(1904789, { exclude: DEFAULT_EXCLUDE, programUses: false })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      // the situation happened: three forced handoffs within 50 ms, on one connection
      const handoffs = result.recording.events.filter((e) => e.type === "agent_handoff" && e.kind === "handoff")
      assert.isTrue(handoffs.some((e, i) => i >= 2 && e.at - handoffs[i - 2]!.at <= 50), JSON.stringify(handoffs.map((e) => e.at)))
      assert.isFalse(result.recording.events.some((e) => e.type === "error" && e.message.includes("no response from the realtime model")))
    }), 60_000)
})
