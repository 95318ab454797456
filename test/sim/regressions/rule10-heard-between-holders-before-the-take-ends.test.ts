/**
 * Found by the simulation once it drew hung servers (seeds 1417556, 1467293 and 1579885, at
 * 4afa1aa's baton code). The user spoke into the holder's connection just before a handoff; the
 * server reported the turn after the lease had left, so the pool kept it for the next holder.
 * The new holder's take waited for the (hung) server to settle, then made its lease with those
 * events queued on it and gave its work token back; the lease's router, started a scheduler
 * step later, only then handed the user's words to the mailbox. In between the session was
 * quiescent, and a run could resolve before the words it was about were seen (3 s here, one
 * step with a server that answers). The router now starts on the acquiring flow's step.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 10: quiescent runs (simulation regression)", () => {
  for (const seed of [1417556, 1579885]) {
    it.effect(`rule 10: what the connection heard between holders reaches the new holder before its take ends (seed ${seed})`, () =>
      Effect.gen(function*() {
        const result = yield* simulate(seed, { exclude: DEFAULT_EXCLUDE, programUses: false })
        assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
        // the situation happened: a spoken turn of the user reached a holder through a reused
        // connection that had hung
        assert.isDefined(result.scenario.realtime?.stallEvery)
        assert.isTrue(result.recording.history.some((i) => i._tag === "Message" && i.role === "user" && /^u1\d\d please$/.test(i.text)))
      }), 60_000)
  }
})
