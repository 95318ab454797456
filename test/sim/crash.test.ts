/**
 * The simulation with crashes (Crash.ts): each seed's scenario runs as a durable session, its
 * process dies at a point the seed draws (after an append, or in the middle of one: lost or torn),
 * and a new one resumes from the journal; the event-log rules are checked over both lives joined.
 * Larger runs: `node test/sim/crash-cli.ts --seeds 20000 --from 0`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { SessionEvent } from "../../src/Events.ts"
import { checkJoined, type CrashKind, debug, simulateCrash, unheard } from "./Crash.ts"
import { DEFAULT_EXCLUDE, scenarioFor } from "./Sim.ts"
import * as Journal from "../../src/internal/Journal.ts"

describe("simulation with crashes", () => {
  it.effect("seeds 0..199: the journal is the session, and a resume after an append or in the middle of one loses no item, records none twice, answers every call once and keeps the rules over both lives joined", () =>
    Effect.gen(function*() {
      const failures: Array<string> = []
      const kinds: Record<CrashKind, number> = { between: 0, lost: 0, torn: 0 }
      for (let seed = 0; seed < 200; seed++) {
        const result = yield* simulateCrash(seed)
        if (result.kind) kinds[result.kind]++
        for (const v of result.violations) failures.push(`seed ${seed}: ${v.rule}: ${v.message.slice(0, 300)}`)
      }
      assert.deepStrictEqual(failures, [])
      // Most seeds crash and resume (sessions closed before their first journaled floor do
      // not), at each kind of point.
      assert.isAbove(kinds.between + kinds.lost + kinds.torn, 150)
      for (const kind of ["between", "lost", "torn"] as const) assert.isAbove(kinds[kind], 30, kind)
    }), { timeout: 120_000 })

  it.effect("seed 38673: a crash after a handoff to an agent whose waiting task took the floor at once resumes both (the caller's onResume runs) and goes quiescent", () =>
    Effect.gen(function*() {
      const result = yield* simulateCrash(38673)
      assert.isUndefined(result.skipped)
      assert.deepStrictEqual(result.violations, [])
    }), { timeout: 60_000 })

  it.effect("seed 100: a crash after a handoff, while the new holder's onEnter waits for the old holder's onExit: the resume runs that onEnter once (it had been journaled as entered, and never ran)", () =>
    Effect.gen(function*() {
      const result = yield* simulateCrash(100)
      assert.strictEqual(result.kind, "between")
      assert.deepStrictEqual(result.violations, [])
      const { rec, cut } = debug.last!
      const enters = rec.hooks.filter((h) => h.agent === "a4" && h.hook === "onEnter")
      assert.strictEqual(enters.length, 1)
      assert.isAtLeast(enters[0]!.seq, cut.seq)
    }), { timeout: 60_000 })

  it.effect("seed 111059 (failed with life 2 closed before its next turn was sent, a defect of the harness): the resumed session takes that turn and closes with every rule kept", () =>
    Effect.gen(function*() {
      const result = yield* simulateCrash(111059)
      assert.isUndefined(result.skipped)
      assert.deepStrictEqual(result.violations, [])
    }), { timeout: 60_000 })

  it.effect("seed 116808: an agent handed the floor and passing it on before its onEnter started, when the process died, is paused by the resume without its onEnter, which the joined log allows", () =>
    Effect.gen(function*() {
      const result = yield* simulateCrash(116808)
      assert.deepStrictEqual(result.violations, [])
      const { rec, cut } = debug.last!
      assert.isFalse(rec.hooks.some((h) => h.agent === "a4" && h.seq > cut.seq))
    }), { timeout: 60_000 })

  it.effect("seeds 117582, 116039, 118372: a crash after a batch decided a handoff and before the floor passed (after an append, during a lost one, during a torn one) resumes without the decision: the batch's outputs and the pass are appended together, so the agent never holds the floor again after saying it passed it (rule 2 across the restart)", () =>
    Effect.gen(function*() {
      for (const [seed, kind] of [[117582, "between"], [116039, "lost"], [118372, "torn"]] as const) {
        const result = yield* simulateCrash(seed)
        assert.strictEqual(result.kind, kind)
        assert.deepStrictEqual(result.violations, [], `seed ${seed}`)
      }
    }), { timeout: 60_000 })

  it.effect("seeds 109104, 122962, 125490, 139455, 146797, 153506, 100566, 156118, 165517 (failed with the floor passed by a background call's late result after life 2 looked quiescent, a defect of the harness): life 2 waits for background calls as a plain session's close does, so the pass's onExit, onEnter and onResume run before the close", () =>
    Effect.gen(function*() {
      for (const seed of [109104, 122962, 125490, 139455, 146797, 153506, 100566, 156118, 165517]) {
        const result = yield* simulateCrash(seed)
        assert.isUndefined(result.skipped)
        assert.deepStrictEqual(result.violations, [], `seed ${seed}`)
      }
      // Seed 109104: a0's background call hands the floor to a1 in life 2; a1's onEnter ran before the settled point.
      yield* simulateCrash(109104)
      const { rec, cut } = debug.last!
      assert.isDefined(rec.settled)
      assert.isTrue(rec.events.some((e) => e.seq >= cut.seq && e.type === "agent_handoff" && e.from === "a0" && e.to === "a1"))
      assert.deepStrictEqual(rec.settled!.hooks.filter((h) => h.agent === "a1").map((h) => h.hook), ["onEnter"])
    }), { timeout: 120_000 })

  it.effect("seeds 177235, 186972, 190467, 199745: an agent handed the floor back before the onExit of its earlier pass started, when the process died, is journaled as exiting, and the resume runs that onExit once, before its onResume", () =>
    Effect.gen(function*() {
      for (const seed of [177235, 186972, 190467, 199745]) {
        const result = yield* simulateCrash(seed)
        assert.isUndefined(result.skipped)
        assert.deepStrictEqual(result.violations, [], `seed ${seed}`)
      }
      // Seed 177235: a0 took over by a person and handed back, its onExit not started at the crash.
      const result = yield* simulateCrash(177235)
      const floor = Journal.fold(result.kept!).floor
      assert.deepStrictEqual(floor?.exiting, [floor!.holder!])
      const { rec, cut } = debug.last!
      assert.deepStrictEqual(rec.hooks.filter((h) => h.agent === "a0").map((h) => h.hook), ["onEnter", "onExit"])
      assert.isAtLeast(rec.hooks.find((h) => h.agent === "a0" && h.hook === "onExit")!.seq, cut.seq)
    }), { timeout: 120_000 })

  it.effect("cascaded voice, the first 60 such seeds of 0..499: the process dies during spoken turns (while the user speaks, in the endpointing wait, with a reply made ahead, while a reply plays) and the voice pipeline resumes: the journal keeps only words that were played, the next spoken turn is heard and answered, and every rule holds over both lives", () =>
    Effect.gen(function*() {
      const failures: Array<string> = []
      let crashed = 0
      let answered = 0
      const phases = { speaking: 0, endpointing: 0, ahead: 0, playing: 0 }
      for (let seed = 0; seed < 500 && crashed < 60; seed++) {
        if (!scenarioFor(seed, { exclude: DEFAULT_EXCLUDE }).cascade) continue
        const result = yield* simulateCrash(seed)
        if (result.skipped) continue
        crashed++
        for (const v of result.violations) failures.push(`seed ${seed}: ${v.rule}: ${v.message.slice(0, 300)}`)
        // Life 2 heard the user's next utterance through the resumed pipeline.
        const { rec, window, life1, cut } = debug.last!
        if (rec.history.some((item) => item._tag === "Message" && item.role === "user" && item.text.startsWith("u900"))) answered++
        // What life 1 was doing where it died: between the store's last append and its next.
        const inWindow = (e: { readonly seq: number }) => e.seq >= cut.seq && e.seq < window.seq
        const decided = (decision: string, outcome?: string) =>
          life1.events.some((e) => inWindow(e) && e.type === "voice_decision" && e.decision === decision && (outcome === undefined || e.outcome === outcome))
        if (life1.cascade.finals.some((f) => f.order > cut.order && f.order <= window.order)) phases.speaking++
        if (decided("endpointing")) phases.endpointing++
        if (decided("preemptive_generation", "started")) phases.ahead++
        if (life1.cascade.writes.some((w) => w.order > cut.order && w.order <= window.order)) phases.playing++
      }
      assert.deepStrictEqual(failures, [])
      assert.strictEqual(crashed, 60)
      assert.strictEqual(answered, crashed)
      for (const [phase, count] of Object.entries(phases)) assert.isAbove(count, 0, phase)
    }), { timeout: 120_000 })

  it.effect("seed 6808 (cascaded voice; failed with a harness defect): a task's onEnter that life 1 started right after the store's last append counts as run when life 2 settles at its first tick", () =>
    Effect.gen(function*() {
      const result = yield* simulateCrash(6808)
      assert.isUndefined(result.skipped)
      assert.deepStrictEqual(result.violations, [])
      const { rec, cut } = debug.last!
      assert.isTrue(rec.settled!.hooks.some((h) => h.agent === "t2" && h.hook === "onEnter" && h.order === cut.order + 1))
    }), { timeout: 60_000 })

  it.effect("the heard check finds words in the journal that were never played (a cascaded voice seed with its played audio taken away)", () =>
    Effect.gen(function*() {
      const result = yield* simulateCrash(7)
      assert.deepStrictEqual(result.violations, [])
      const { rec, cut } = debug.last!
      const history = Journal.fold(result.kept!).history
      assert.deepStrictEqual(unheard(history, rec.cascade, cut), [])
      const silent = { ...rec.cascade, writes: [] }
      assert.isNotEmpty(unheard(history, silent, cut))
      // Played only after the crash is not heard before it either.
      assert.isNotEmpty(unheard(history, rec.cascade, { order: -1 }))
    }), { timeout: 60_000 })

  it.effect("the joined check finds a break across the restart: an onEnter again after the resume (rule 5), input to the agent that passed the floor in life 1 (rule 1)", () =>
    Effect.gen(function*() {
      const result = yield* simulateCrash(100)
      assert.deepStrictEqual(result.violations, [])
      const { rec, cut } = debug.last!
      assert.deepStrictEqual(checkJoined(rec, cut.seq), [])
      // a0 entered in life 1; its onEnter once more after the resume.
      const enter = { agent: "a0", hook: "onEnter" as const, seq: cut.seq + 1, order: cut.order + 1 }
      assert.isDefined(rec.settled)
      const again = { ...rec, hooks: [...rec.hooks, enter], settled: { ...rec.settled!, hooks: [...rec.settled!.hooks, enter] } }
      assert.include(checkJoined(again, cut.seq).map((v) => v.rule), "rule 5")
      // a0 passed the floor to a4 before the crash; the user's next turn recorded for a0 after it.
      const turn = rec.events.findIndex((e) => e.seq >= cut.seq && e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user")
      assert.isAtLeast(turn, 0)
      const events = rec.events.map((e, i) => i === turn ? { ...e, agent: "a0" } as SessionEvent : e)
      const found = checkJoined({ ...rec, events }, cut.seq)
      assert.isTrue(found.some((v) => v.rule === "rule 1" && /user input went to a0 while a4 held the floor/.test(v.message)), JSON.stringify(found))
    }), { timeout: 60_000 })
})
