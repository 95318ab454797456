/**
 * `sim --agents` checks rules 3, 5, 6 and 9 on a user's agents (issue 37), seen through the
 * runtime's observer (hooks as they start and end, task results reaching their flows,
 * background handlers ending) and the events: the agents run as the user made them.
 *
 * A correct agents module with every flow these rules speak about keeps them on every seed. Each
 * rule's check fires: rule 3 on a deliberately broken protocol (outputs recorded in completion
 * order, `ProtocolFaults`); rules 5, 6 and 9, which no user program can break (the runtime keeps
 * them), on recordings tampered to break exactly that rule, as test/sim's checker tests do. Each
 * violation is shrunk to a smaller schedule and printed as the test `baton sim` prints.
 */
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Faults from "../../src/Faults.ts"
import { check, type Rule, signature } from "../../src/sim/Check.ts"
import type { Recording } from "../../src/sim/Run.ts"
import { size } from "../../src/sim/Schedule.ts"
import { shrink } from "../../src/sim/Shrink.ts"
import * as Sim from "../../src/sim/Simulation.ts"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

const flows = Effect.promise(() => import(new URL("./flows-agents.mjs", import.meta.url).href) as Promise<Record<string, unknown>>).pipe(
  Effect.map(Sim.agentsOf)
)

type Tamper = (rec: Recording) => Recording | undefined

/**
 * The first seed below 200 whose recording `tamper` can break, shrunk while the tampered run
 * still breaks the rule the same way: the violations before and after, the two schedules' sizes
 * and the printed test.
 */
const tamperedFailure = (rule: Rule, tamper: Tamper) =>
  Effect.gen(function*() {
    const sim = yield* flows
    const breaks = (rec: Recording) => {
      const tampered = tamper(rec)
      return tampered ? check(tampered, sim.agents) : []
    }
    for (let seed = 0; seed < 200; seed++) {
      const clean = yield* Sim.simulate(seed, sim)
      const found = breaks(clean.recording).find((x) => x.rule === rule)
      if (!found) continue
      // Untampered, the seed keeps every rule: the violation is the tamper's.
      assert.deepStrictEqual(clean.violations, [])
      const wanted = signature(found)
      const shrunk = yield* shrink(
        clean.schedule,
        (candidate) => Effect.map(Sim.simulateSchedule(candidate, sim), (r) => breaks(r.recording).some((x) => signature(x) === wanted)),
        150
      )
      const replayed = yield* Sim.simulateSchedule(shrunk.schedule, sim)
      const recording = tamper(replayed.recording)!
      // The rule wanted first, as `baton sim` shows the violation it shrank for (a tamper may
      // break another rule with it: a resumed flag changes which hook is due).
      const all = check(recording, sim.agents)
      const violations = [...all.filter((x) => signature(x) === wanted), ...all.filter((x) => signature(x) !== wanted)]
      const printed = Sim.testFor({ schedule: shrunk.schedule, recording, violations }, "./flows-agents.mjs")
      return { found, violations, before: size(clean.schedule), after: size(shrunk.schedule), printed }
    }
    return yield* Effect.die(new Error(`no seed below 200 can be tampered to break ${rule}`))
  })

const expectReported = (result: Effect.Success<ReturnType<typeof tamperedFailure>>, rule: Rule, pattern: RegExp) => {
  assert.match(result.found.message, pattern)
  assert.isTrue(result.violations.some((x) => x.rule === rule && pattern.test(x.message)), JSON.stringify(result.violations))
  assert.isBelow(result.after, result.before, "the shrunk schedule is smaller")
  assert.include(result.printed, `keeps ${rule} (`)
  assert.include(result.printed, `Sim.replay(agents, schedule)`)
}

describe("sim --agents: rules 3, 5, 6 and 9 on a user's agents", () => {
  it.effect("an agents module with hooks, a task and background handoffs keeps rules 3, 5, 6 and 9 on 300 seeds", () =>
    Effect.gen(function*() {
      const sim = yield* flows
      const seen = { hooks: 0, taskReturns: 0, finishes: 0, deferredHandoffs: 0, settled: 0 }
      for (let seed = 0; seed < 300; seed++) {
        const { recording, violations } = yield* Sim.simulate(seed, sim)
        assert.deepStrictEqual(violations, [], `seed ${seed}`)
        seen.hooks += recording.hooks.length
        seen.taskReturns += recording.taskReturns.length
        seen.finishes += recording.finishes.length
        seen.deferredHandoffs += recording.events.filter((e) => e.type === "function_tools_executed" && e.deferred && e.hasHandoff).length
        if (recording.settled) seen.settled++
      }
      // What the rules speak about happened: the checks had something to check.
      assert.isAbove(seen.hooks, 600, JSON.stringify(seen))
      assert.isAbove(seen.taskReturns, 10, JSON.stringify(seen))
      assert.isAbove(seen.finishes, 300, JSON.stringify(seen))
      assert.isAbove(seen.deferredHandoffs, 20, JSON.stringify(seen))
      assert.isAbove(seen.settled, 200, JSON.stringify(seen))
    }), 240_000)

  it("baton sim --agents on that module: 100 seeds keep the rules (exit 0)", () => {
    const result = spawnSync(
      process.execPath,
      ["--conditions=baton-source", join(ROOT, "cli", "main.ts"), "sim", "--agents", "test/sim-agents/flows-agents.mjs", "--seeds", "100"],
      { cwd: ROOT, encoding: "utf8", timeout: 240_000, env: { ...process.env, NO_COLOR: "1" } }
    )
    assert.strictEqual(result.status, 0, result.stdout + result.stderr)
    assert.match(result.stdout, /100 seeds \(0\.\.99\) on greeter, billing, confirm: all kept the rules/)
  }, 240_000)

  it.effect("rule 3: sim --agents finds outputs recorded in completion order (a broken protocol), shrinks it and prints its test", () =>
    Effect.gen(function*() {
      const sim = yield* flows
      const faults = { outputsInCompletionOrder: true, lastFinisherDecides: false }
      const broken = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Faults.ProtocolFaults, faults)
      const summary = yield* broken(Sim.runSeeds(0, 200, sim))
      const failure = summary.failures[0]
      assert.isDefined(failure, "no violation in 200 seeds with outputs in completion order")
      assert.isTrue(failure!.violations.some((x) => x.rule === "rule 3" && /not in call order/.test(x.message)), JSON.stringify(failure!.violations))
      // The protocol as baton runs it keeps the rules on that seed.
      assert.deepStrictEqual((yield* Sim.simulate(failure!.schedule.seed, sim)).violations, [])
      const { result } = yield* broken(Sim.shrinkFailure(failure!, sim, 150))
      assert.strictEqual(result.violations[0]?.rule, "rule 3", JSON.stringify(result.violations))
      assert.isBelow(size(result.schedule), size(failure!.schedule))
      assert.include(Sim.testFor(result, "./flows-agents.mjs"), "keeps rule 3 (deterministic batches)")
    }), 240_000)

  it.effect("rule 5: an onEnter run twice for one activation is reported, shrunk and printed", () =>
    Effect.gen(function*() {
      const result = yield* tamperedFailure("rule 5", (rec) => {
        const i = rec.hooks.findIndex((h) => h.hook === "onEnter")
        if (i < 0 || !rec.settled) return undefined
        const hooks = [...rec.hooks.slice(0, i + 1), { ...rec.hooks[i]! }, ...rec.hooks.slice(i + 1)]
        return { ...rec, hooks, settled: { ...rec.settled, hooks: rec.settled.hooks + 1 } }
      })
      expectReported(result, "rule 5", /hooks of \w+ ran as \[enter, enter/)
    }), 240_000)

  it.effect("rule 5: an onEnter started before the previous holder's onExit ended is reported, shrunk and printed", () =>
    Effect.gen(function*() {
      const result = yield* tamperedFailure("rule 5", (rec) => {
        const exit = rec.hooks.findIndex((h) => h.hook === "onExit" && h.endSeq !== undefined)
        if (exit < 0) return undefined
        const next = rec.hooks.find((h, i) => i > exit && (h.hook === "onEnter" || h.hook === "onResume") && h.agent !== rec.hooks[exit]!.agent)
        if (!next) return undefined
        const hooks = rec.hooks.map((h, i) => (i === exit ? { ...h, endSeq: next.seq + 1 } : h))
        return { ...rec, hooks }
      })
      expectReported(result, "rule 5", /started before the onExit of \w+ \(passed at seq \d+\) ended/)
    }), 240_000)

  it.effect("rule 6: a handoff back to a paused agent that does not resume it is reported, shrunk and printed", () =>
    Effect.gen(function*() {
      const result = yield* tamperedFailure("rule 6", (rec) => {
        const i = rec.events.findIndex((e) => e.type === "agent_handoff" && e.kind === "handoff" && e.resumed)
        if (i < 0) return undefined
        return { ...rec, events: rec.events.map((e, j) => (j === i && e.type === "agent_handoff" ? { ...e, resumed: false } : e)) }
      })
      expectReported(result, "rule 6", /has resumed false, expected true \(its actor is paused\)/)
    }), 240_000)

  it.effect("rule 6: a task's result that never reaches the flow that ran it is reported, shrunk and printed", () =>
    Effect.gen(function*() {
      const result = yield* tamperedFailure("rule 6", (rec) => {
        if (!rec.settled || rec.settled.taskReturns === 0) return undefined
        return { ...rec, taskReturns: rec.taskReturns.slice(1), settled: { ...rec.settled, taskReturns: rec.settled.taskReturns - 1 } }
      })
      expectReported(result, "rule 6", /billing <- confirm: 1 return\(s\) but the flow that ran the task got 0 result\(s\)/)
    }), 240_000)

  it.effect("rule 9: a deferred handoff applied although its agent had lost the floor when the tool finished is reported, shrunk and printed", () =>
    Effect.gen(function*() {
      const result = yield* tamperedFailure("rule 9", (rec) => {
        const handedOff = new Set(
          rec.history.filter((i) => i._tag === "FunctionCallOutput" && i.status === "handoff" && i.callId.endsWith(":result")).map((i) =>
            i._tag === "FunctionCallOutput" ? i.callId.slice(0, -":result".length) : ""
          )
        )
        const i = rec.finishes.findIndex((f) => handedOff.has(f.callId))
        if (i < 0) return undefined
        return { ...rec, finishes: rec.finishes.map((f, j) => (j === i ? { ...f, holder: "billing" } : f)) }
      })
      expectReported(result, "rule 9", /handed off although greeter did not hold the floor when it finished \(billing did\)/)
    }), 240_000)

  it.effect("rule 9: a background result not transferred without a handoff_not_applied event is reported, shrunk and printed", () =>
    Effect.gen(function*() {
      const result = yield* tamperedFailure("rule 9", (rec) => {
        const refused = rec.history.find((i) => i._tag === "FunctionCallOutput" && i.callId.endsWith(":result") && /^Not transferred to /.test(i.output))
        if (!refused || refused._tag !== "FunctionCallOutput") return undefined
        const item = rec.events.find((e) => e.type === "conversation_item_added" && e.item.id === refused.id)
        if (!item) return undefined
        return { ...rec, events: rec.events.filter((e) => !(e.type === "handoff_not_applied" && e.seq > item.seq && e.seq <= item.seq + 2)) }
      })
      expectReported(result, "rule 9", /was not transferred to billing and no handoff_not_applied event says why/)
    }), 240_000)
})
