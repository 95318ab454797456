/**
 * Found by the simulation at 07b8213 (seed 1538331 and eight others), the commit that stopped
 * reusing a connection whose server hung on the last answer. A handoff chain (a1, its task
 * group g0, its task t1) took the floor while the connection was hung: each take waited 3 s for
 * the server to settle, each then retired it and opened a fresh one, though only t1 still held
 * the floor: two connections opened for no one (rule 7). After such a wait the pool now asks
 * whether the owner still wants one before opening it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 7: reuse when possible, never by accident (simulation regression)", () => {
  it.effect("rule 7: a hung connection is followed by one fresh connection, the holder's, not one per waiting take (seed 1538331)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(1538331, { exclude: DEFAULT_EXCLUDE, programUses: false })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      // the situation happened: a connection hung, and the floor went through a task group
      assert.isTrue(result.recording.connections.some((c) => c.ops.some((op) => op.op === "stalled")))
      assert.isTrue(result.recording.events.some((e) => e.type === "agent_handoff" && e.to === "g0"))
    }), 60_000)
})
