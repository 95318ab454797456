/**
 * Found by the final sweep of this session (seeds 1608814 and 1630621): a reply a tool asked
 * for, said over its batch, hands off in its own batch.
 * - 1630621 (rule 3): the batch under it had already settled with a handoff and was passing the
 *   floor; the reply's batch reported a second handoff, which was not applied. Its transfers are
 *   now refused ("already passing the floor"), as a second transfer of one batch is.
 * - 1608814 (rule 2): the batch under it still ran; the reply's handoff waits for it, and the
 *   reply's batch was reported as an immediate handoff, so a server's own answer to the user
 *   meanwhile looked like a model call after the handoff. Such a batch is now reported as
 *   deferred (its pass comes once the batches under it settled).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("a reply's batch said over another batch (simulation regressions)", () => {
  it.effect("rule 3: a transfer asked over a batch that already passes the floor is refused, not a second handoff (seed 1630621)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(1630621, { exclude: DEFAULT_EXCLUDE })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      const refused = result.recording.events.flatMap((e) =>
        e.type === "function_tools_executed" ? e.calls.filter((c) => /already passing the floor/.test(c.output.output)) : []
      )
      assert.isTrue(refused.length > 0)
    }), 60_000)

  it.effect("rule 3: the refusal holds when a task the agent lent the floor to ran between the two batches (seed 2538734)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(2538734, { exclude: DEFAULT_EXCLUDE })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      assert.isTrue(result.recording.events.some((e) => e.type === "agent_handoff" && e.kind === "task"))
    }), 60_000)

  it.effect("rule 2: a transfer asked over a batch still running is reported as deferred (seed 1608814)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(1608814, { exclude: DEFAULT_EXCLUDE })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      assert.isTrue(result.recording.events.some((e) => e.type === "function_tools_executed" && e.deferred && e.hasHandoff))
    }), 60_000)
})
