/**
 * Found by the simulation once it drew what programs do (this session's `programUses`):
 * - seed 41022 (rule 10): a tool started a reply and returned; the reply, said over the batch,
 *   ran a task that waits for the user. The speech under it waited for it to end before its
 *   follow-up, holding its work token, so the session never went quiet. It now parks its token
 *   on the reply it waits for, as a tool awaiting a speech does.
 * - seed 23408 (rule 2): the batch under such a reply handed off; the reply's realtime
 *   connection fell back and the reply asked again on a fresh one, a model request by an agent
 *   whose handoff was decided. A reply said over a batch that passes the floor asks no more.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("replies said over a batch (simulation regressions)", () => {
  it.effect("rule 10: a reply a tool started runs a task that waits for the user; the session goes quiet (seed 41022)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(41022, { exclude: DEFAULT_EXCLUDE })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      assert.isTrue(result.scenario.agents.some((a) => a.tools.some((t) => t.kind === "speaks" && t.speech === "reply")))
    }), 60_000)

  it.effect("rule 2: a reply said over a batch that hands off does not ask again when its connection falls back (seed 23408)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(23408, { exclude: DEFAULT_EXCLUDE })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      assert.isTrue(result.recording.events.some((e) => e.type === "realtime_connection" && e.action === "fell_back"))
    }), 60_000)
})
