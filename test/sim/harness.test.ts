/**
 * The simulation harness itself: a seed always gives the same scenario, schedule and event log;
 * the generator covers what it should; a failing scenario shrinks and prints a reproduction.
 */
import { existsSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Faults from "../../src/Faults.ts"
import { generate } from "./Generate.ts"
import { applyExclusions, applyWaivers, type KnownBugPattern, KnownBugs } from "./KnownBugs.ts"
import { Prng } from "./Prng.ts"
import { normalizedLog, reproduction } from "./Report.ts"
import { format, size } from "./Scenario.ts"
import { DEFAULT_EXCLUDE, runSeeds, shrinkFailure, simulate } from "./Sim.ts"

describe("Prng", () => {
  it("gives the same numbers for the same seed, others for another seed", () => {
    const draw = (seed: number) => {
      const rng = new Prng(seed)
      return Array.from({ length: 20 }, () => rng.nextUint32())
    }
    assert.deepStrictEqual(draw(42), draw(42))
    assert.notDeepEqual(draw(42), draw(43))
    assert.notDeepEqual(draw(42), [...draw(42)].reverse())
  })

  it("keeps int() in its bounds and reaches both ends; fork() gives an independent stream", () => {
    const rng = new Prng(7)
    const seen = new Set<number>()
    for (let i = 0; i < 2000; i++) {
      const n = rng.int(3, 6)
      assert.isTrue(n >= 3 && n <= 6)
      seen.add(n)
    }
    assert.deepStrictEqual([...seen].sort(), [3, 4, 5, 6])
    const a = new Prng(7).fork("model")
    const b = new Prng(7).fork("timeline")
    assert.notStrictEqual(a.nextUint32(), b.nextUint32())
    assert.strictEqual(new Prng(7).fork("model").nextUint32(), new Prng(7).fork("model").nextUint32())
  })
})

describe("generator", () => {
  it("is a function of the seed", () => {
    for (const seed of [0, 1, 99, 123456]) assert.deepStrictEqual(generate(seed), generate(seed))
    assert.notDeepEqual(generate(1), generate(2))
  })

  it("covers every tool kind, hook action and timeline action, with 2 to 5 agents and valid references", () => {
    // Also: long-running tools that hand off (rule 9), runs that wait for them, going back in a
    // TaskGroup, session tools, realtime agents (rules 7 and 8).
    const kinds = new Set<string>()
    const actions = new Set<string>()
    const ops = new Set<string>()
    let twoHandoffs = 0
    const extras = { deferredHandoffs: 0, backgroundRuns: 0, goBack: 0, sessionTools: 0, realtime: 0, cascade: 0, audioStops: 0 }
    for (let seed = 0; seed < 400; seed++) {
      const s = generate(seed)
      extras.deferredHandoffs += s.agents.filter((a) => a.tools.some((t) => t.kind === "longRunning" && t.target)).length
      extras.backgroundRuns += s.timeline.filter((a) => a.op === "run" && a.background).length
      extras.audioStops += s.timeline.filter((a) => a.op === "utter" && a.stops).length
      extras.sessionTools += s.sessionTools?.length ?? 0
      extras.realtime += s.realtime ? 1 : 0
      extras.goBack += Object.values(s.responses).filter((t) => t.user.some((r) => r.calls.some((c) => c.tool === "return_to_earlier_step"))).length
      assert.isTrue(s.agents.length >= 2 && s.agents.length <= 5)
      const names = new Set([...s.agents, ...s.tasks, ...s.groups].map((x) => x.name))
      for (const a of [...s.agents, ...s.tasks]) {
        for (const t of a.tools) {
          kinds.add(t.kind)
          if (t.target) assert.isTrue(names.has(t.target), `${t.name} -> ${t.target}`)
        }
        for (const h of [a.onEnter, a.onExit, a.onResume]) if (h) actions.add(h.action)
        const table = s.responses[a.name]!
        const handoffs = new Set(a.tools.filter((t) => t.kind === "handoff").map((t) => t.name))
        if (table.user.some((r) => r.calls.filter((c) => handoffs.has(c.tool)).length >= 2)) twoHandoffs++
      }
      for (const action of s.timeline) ops.add(action.op)
      if (s.cascade) extras.cascade++
    }
    assert.deepStrictEqual([...kinds].sort(), [
      "approval", "complete", "dying", "failing", "giveUp", "handoff", "hangUp", "immediate", "longRunning", "odd", "slow", "speaks", "task",
      "timed", "typed", "waitsForItself"
    ])
    assert.deepStrictEqual([...actions].sort(), ["awaitReply", "awaitSay", "fail", "group", "none", "reply", "say", "task"])
    assert.deepStrictEqual([...ops].sort(), [
      "close", "handBack", "handoff", "idle", "interrupt", "noise", "reply", "run", "say", "send", "speak", "takeOver", "utter", "voice"
    ])
    assert.isAbove(twoHandoffs, 20)
    assert.isAbove(extras.deferredHandoffs, 20)
    assert.isAbove(extras.backgroundRuns, 20)
    assert.isAbove(extras.goBack, 5)
    assert.isAbove(extras.sessionTools, 40)
    assert.isAbove(extras.realtime, 60)
    assert.isAbove(extras.cascade, 20)
    assert.isAbove(extras.audioStops, 5)
  })

  it("leaves a known bug's pattern out (exclude) or ignores exactly its symptom (waive)", () =>
    Effect.gen(function*() {
      // A stand-in for a core bug: "every close is broken".
      const pattern: KnownBugPattern = {
        rule: "rule 11",
        description: "closing is broken",
        regression: "test/sim/regressions/none.test.ts",
        seeds: [],
        exclude: (s) => ({ ...s, timeline: s.timeline.filter((a) => a.op !== "close") }),
        waive: (v) => v.rule === "rule 11" && /closing/.test(v.message)
      }
      const seed = [...Array(100).keys()].find((n) => generate(n).timeline.some((a) => a.op === "close"))!
      const excluded = applyExclusions(generate(seed), [pattern])
      assert.isFalse(excluded.timeline.some((a) => a.op === "close"))
      assert.deepStrictEqual(applyExclusions(excluded, [pattern]), excluded)
      const { recording } = yield* simulate(1)
      const symptom = { rule: "rule 11" as const, message: "X after the session started closing" }
      const other = { rule: "rule 11" as const, message: "1 fibers left after close" }
      assert.deepStrictEqual(applyWaivers([symptom, other], recording, [pattern]), [other])
      for (const bug of Object.values(KnownBugs) as Array<KnownBugPattern>) {
        assert.isTrue(existsSync(new URL(`../../${bug.regression}`, import.meta.url)), `${bug.regression} is missing`)
      }
    }))
})

describe("determinism", () => {
  it.effect("a seed gives the same event log, model requests and hook calls every time", () =>
    Effect.gen(function*() {
      for (const seed of [3, 14, 47, 376, 1223]) {
        const first = yield* simulate(seed)
        // Other scenarios in between do not change it.
        yield* simulate(seed + 1)
        const second = yield* simulate(seed)
        assert.isAbove(first.recording.events.length, 3)
        assert.strictEqual(normalizedLog(second.recording), normalizedLog(first.recording), `seed ${seed}`)
        const shape = (r: typeof first) => ({
          requests: r.recording.requests.map(({ agent, holder, seq, trigger }) => [agent, holder, seq, trigger]),
          hooks: r.recording.hooks.map(({ agent, hook, seq }) => [agent, hook, seq]),
          violations: r.violations.map((v) => v.message)
        })
        assert.deepStrictEqual(shape(second), shape(first))
      }
    }), 60_000)
})

describe("shrinking and reproductions", () => {
  it.effect("a failing scenario shrinks to a smaller one that breaks the same rule, printed with its replay line", () =>
    Effect.gen(function*() {
      const faults = { ...Faults.none, outputsInCompletionOrder: true }
      const summary = yield* runSeeds(0, 200, { exclude: DEFAULT_EXCLUDE, faults }, 1)
      const failure = summary.failures[0]!
      const { result: small } = yield* shrinkFailure(failure, { faults }, 150)
      assert.isBelow(size(small.scenario), size(failure.scenario))
      assert.isTrue(small.violations.some((v) => v.rule === "rule 3"))
      assert.isBelow(format(small.scenario).length, format(failure.scenario).length)
      const text = reproduction(failure.recording, failure.violations, small.recording)
      assert.include(text, `SIM_SEED=${failure.scenario.seed}`)
      assert.include(text, "[rule 3: deterministic batches]")
      assert.include(text, "Shrunk scenario (still fails)")
      assert.match(text, /HANDOFF\s+- -> a0 \(start\)/)
    }), 120_000)
})
