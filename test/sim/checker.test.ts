/**
 * The checker can fail. With a deliberately broken protocol (ProtocolFaults) the simulation
 * finds a violating seed within 500 seeds and names the broken rule; and each rule check fires
 * on a recording tampered to break exactly that rule.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Faults from "../../src/Faults.ts"
import type { SessionEvent } from "../../src/Events.ts"
import { check, type Rule } from "./Check.ts"
import type { Recording } from "./Runner.ts"
import { DEFAULT_EXCLUDE, runSeeds, simulate, type SimOptions, type SimResult } from "./Sim.ts"

const options = { exclude: DEFAULT_EXCLUDE }

/** The first seed below 500 that breaks a rule with `faults` on. */
const firstViolation = (faults: Faults.ProtocolFaults) =>
  Effect.gen(function*() {
    const summary = yield* runSeeds(0, 500, { ...options, faults }, 1)
    const found = summary.failures[0]
    assert.isDefined(found, `no violation in 500 seeds with ${JSON.stringify(faults)}`)
    // Without the fault the same seed keeps every rule: the violation is the fault's.
    const clean = yield* simulate(found!.scenario.seed, options)
    assert.deepStrictEqual(clean.violations, [])
    return found!
  })

const rules = (result: SimResult) => new Set(result.violations.map((v) => v.rule))

describe("the checker finds deliberately broken protocols", () => {
  it.effect("rule 3: outputs in completion order are found within 500 seeds", () =>
    Effect.gen(function*() {
      const found = yield* firstViolation({ outputsInCompletionOrder: true, lastFinisherDecides: false })
      assert.deepStrictEqual([...rules(found)], ["rule 3"])
      assert.isTrue(found.violations.some((v) => /not in call order/.test(v.message)), JSON.stringify(found.violations))
    }), 120_000)

  it.effect("rules 2 and 3: letting the last finisher decide is found within 500 seeds", () =>
    Effect.gen(function*() {
      const found = yield* firstViolation({ outputsInCompletionOrder: false, lastFinisherDecides: true })
      assert.isTrue(rules(found).has("rule 3"), JSON.stringify(found.violations))
      for (const rule of rules(found)) assert.include(["rule 2", "rule 3"], rule)
      assert.isTrue(
        found.violations.some((v) => v.rule === "rule 3" && /first handoff in call order wins|should hand off/.test(v.message)),
        JSON.stringify(found.violations)
      )
    }), 120_000)
})

// ---------------------------------------------------------------------------------------------

/** A passing recording with what `want` needs (realtime ones are searched without exclusions). */
const recordingWith = (want: (rec: Recording) => boolean, search: SimOptions = options) =>
  Effect.gen(function*() {
    for (let seed = 0; seed < 300; seed++) {
      const result = yield* simulate(seed, search)
      if (result.violations.length === 0 && want(result.recording)) return result.recording
    }
    return yield* Effect.die(new Error("no seed below 300 has what the test needs"))
  })

const expectRule = (rec: Recording, rule: Rule, pattern: RegExp) => {
  const found = check(rec)
  expect(found.some((v) => v.rule === rule && pattern.test(v.message)), JSON.stringify(found, null, 1)).toBe(true)
}

const isHandoff = (e: SessionEvent): e is Extract<SessionEvent, { type: "agent_handoff" }> => e.type === "agent_handoff"

describe("each rule check fires on a recording that breaks it", () => {
  it.effect("rule 1: a handoff from an agent that does not hold the floor", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.events.filter(isHandoff).some((e) => e.kind === "handoff"))
      const events = rec.events.map((e) => (isHandoff(e) && e.kind === "handoff" ? { ...e, from: "nobody" } : e))
      expectRule({ ...rec, events }, "rule 1", /while .* held the floor/)
    }))

  it.effect("rule 2: a model request by an agent that passed the floor", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.requests.length > 0)
      const request = rec.requests[0]!
      expectRule({ ...rec, requests: [...rec.requests, { ...request, holder: "someone else" }] }, "rule 2", /while someone else held/)
    }))

  it.effect("rule 3: outputs of a batch out of call order", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.events.some((e) => e.type === "function_tools_executed" && e.calls.length >= 2))
      const batch = rec.events.find((e) => e.type === "function_tools_executed" && e.calls.length >= 2)!
      const ids = batch.type === "function_tools_executed" ? batch.calls.map((c) => c.output.id) : []
      const first = rec.history.findIndex((i) => i.id === ids[0])
      const second = rec.history.findIndex((i) => i.id === ids[1])
      const history = [...rec.history]
      history[first] = rec.history[second]!
      history[second] = rec.history[first]!
      expectRule({ ...rec, history }, "rule 3", /not in call order/)
    }))

  it.effect("rule 4: a call without an output", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.history.some((i) => i._tag === "FunctionCallOutput"))
      const output = rec.history.find((i) => i._tag === "FunctionCallOutput")!
      expectRule({ ...rec, history: rec.history.filter((i) => i !== output) }, "rule 4", /has 0 outputs/)
    }))

  it.effect("rule 5: an onEnter run twice for one activation", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.settled !== undefined && r.settled.hooks.some((h) => h.hook === "onEnter"))
      const settled = rec.settled!
      const enter = settled.hooks.find((h) => h.hook === "onEnter")!
      expectRule({ ...rec, settled: { ...settled, hooks: [...settled.hooks, enter] } }, "rule 5", /hooks of .* ran as/)
    }))

  it.effect("rule 6: a return to a paused agent that does not resume it", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.events.some((e) => isHandoff(e) && e.resumed && e.kind === "handoff"))
      const events = rec.events.map((e) => (isHandoff(e) && e.resumed && e.kind === "handoff" ? { ...e, resumed: false } : e))
      expectRule({ ...rec, events }, "rule 6", /resumed: false, expected true/)
    }))

  it.effect("rule 7: a realtime response generated with another agent's configuration", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.connections.some((c) => c.responses.some((x) => x.agent === "a0")), {})
      const connections = rec.connections.map((c) => ({ ...c, responses: c.responses.map((x) => ({ ...x, instructions: "You are a9." })) }))
      expectRule({ ...rec, connections }, "rule 7", /was generated with the instructions "You are a9."/)
    }))

  it.effect("rule 8: a realtime error reported to an agent without the floor", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.scenario.realtime !== undefined && r.scenario.agents.length > 1, {})
      const seq = rec.events.find((e) => e.type === "agent_handoff")!.seq + 1
      const error: SessionEvent = { type: "error", agent: "a1", source: "realtime", message: "late", recoverable: true, seq, at: 0 }
      const events = [...rec.events.filter((e) => e.seq < seq), error, ...rec.events.filter((e) => e.seq >= seq).map((e) => ({ ...e, seq: e.seq + 1 }))]
      expectRule({ ...rec, events }, "rule 8", /a realtime error went to a1 while a0 held the floor/)
    }))

  it.effect("rule 9: a deferred handoff reported as an immediate one", () =>
    Effect.gen(function*() {
      const deferred = (e: SessionEvent) => e.type === "function_tools_executed" && e.deferred && e.hasHandoff
      const rec = yield* recordingWith((r) => r.events.some(deferred))
      const events = rec.events.map((e) => (deferred(e) && e.type === "function_tools_executed" ? { ...e, deferred: false } : e))
      expectRule({ ...rec, events }, "rule 9", /without a deferred function_tools_executed event/)
    }))

  it.effect("rule 10: events after the session was quiescent", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.settled !== undefined)
      expectRule({ ...rec, settled: { ...rec.settled!, lateEvents: 2 } }, "rule 10", /after the session was quiescent/)
    }))

  it.effect("rule 10: a connection that drops while the session is quiescent is the network's; anything more is not", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.scenario.realtime !== undefined && r.settled?.holder !== undefined, {})
      const settled = rec.settled!
      const agent = settled.holder!
      const at = settled.seq
      const drop: ReadonlyArray<SessionEvent> = [
        { type: "realtime_connection", agent, connectionId: "conn_1", action: "dropped", seq: at, at: 0 },
        { type: "error", agent, source: "realtime", message: `${agent}'s realtime connection conn_1 dropped; its next request opens a new one`, recoverable: true, seq: at + 1, at: 0 }
      ]
      const more: SessionEvent = { type: "agent_state_changed", agent, state: "thinking", previous: "listening", seq: at + 2, at: 0 }
      const withEvents = (inserted: ReadonlyArray<SessionEvent>) => ({
        ...rec,
        scenario: { ...rec.scenario, realtime: { ...rec.scenario.realtime!, dropEvery: 2 } },
        events: [...rec.events.filter((e) => e.seq < at), ...inserted, ...rec.events.filter((e) => e.seq >= at).map((e) => ({ ...e, seq: e.seq + inserted.length }))],
        settled: { ...settled, lateEvents: inserted.length }
      })
      const quiet = check(withEvents(drop)).filter((v) => v.rule === "rule 10")
      assert.deepStrictEqual(quiet, [])
      expectRule(withEvents([...drop, more]), "rule 10", /^1 event\(s\) after the session was quiescent/)
    }))

  it.effect("rule 11: a fiber left after close", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith(() => true)
      expectRule({ ...rec, after: { ...rec.after, fibers: rec.after.fibers + 1 } }, "rule 11", /1 fibers left after close/)
    }))

  it.effect("rule 12: a call with bad arguments answered as if they were fine", () =>
    Effect.gen(function*() {
      const bad = (r: Recording) =>
        r.history.find((i) => i._tag === "FunctionCall" && i.name.startsWith("typed") && i.arguments.includes("two"))
      const rec = yield* recordingWith((r) => bad(r) !== undefined)
      const call = bad(rec)!
      const history = rec.history.map((i) =>
        i._tag === "FunctionCallOutput" && call._tag === "FunctionCall" && i.callId === call.callId ? { ...i, status: "ok" as const } : i
      )
      expectRule({ ...rec, history }, "rule 12", /expected "error"/)
    }))

  it.effect("no unhandled error: an error event nobody expects", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith(() => true)
      const error: SessionEvent = { type: "error", agent: undefined, source: "input", message: "boom", recoverable: true, seq: 9999, at: 0 }
      expectRule({ ...rec, events: [...rec.events, error] }, "no unhandled error", /unexpected input error/)
    }))

  it.effect("cascaded voice, rule 2: audio of a speech played after it was cut", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.cascade.cuts.length > 0 && r.cascade.writes.some((w) => w.speechId === r.cascade.cuts[0]!.speechId))
      const cut = rec.cascade.cuts[0]!
      const late = { speechId: cut.speechId, agent: rec.cascade.writes.find((w) => w.speechId === cut.speechId)!.agent, seq: cut.seq, order: cut.order + 1 }
      expectRule({ ...rec, cascade: { ...rec.cascade, writes: [...rec.cascade.writes, late] } }, "rule 2", /played audio after it was cut/)
    }))

  it.effect("cascaded voice, rule 12: an utterance the STT heard that no agent was told", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => r.cascade.finals.length > 0)
      const lost = { text: "u999 please", order: -1, at: -1 }
      expectRule({ ...rec, cascade: { ...rec.cascade, finals: [...rec.cascade.finals, lost] } }, "rule 12", /u999 please.*no agent was told/)
    }))
})

describe("the rule checks hold with a person holding the floor (issue 35)", () => {
  const tookOver = (r: Recording) => r.events.some((e) => isHandoff(e) && e.kind === "take_over")

  it.effect("rule 1 with a human holder: the caller's words recorded for an agent while the operator holds the floor", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) =>
        tookOver(r) && r.events.some((e) => e.type === "conversation_item_added" && e.agent === "operator" && e.item._tag === "Message" && e.item.role === "user")
      )
      const agent = rec.events.find((e) => isHandoff(e) && e.kind === "take_over")!
      const from = isHandoff(agent) ? agent.from : undefined
      const events = rec.events.map((e) =>
        e.type === "conversation_item_added" && e.agent === "operator" && e.item._tag === "Message" && e.item.role === "user" ? { ...e, agent: from } : e
      )
      expectRule({ ...rec, events }, "rule 1", /user input went to .* while operator held the floor/)
    }))

  it.effect("rule 2 with a human holder: a model request by an agent while the operator holds the floor", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => tookOver(r) && r.requests.length > 0)
      const request = rec.requests[0]!
      expectRule({ ...rec, requests: [...rec.requests, { ...request, holder: "operator" }] }, "rule 2", /while operator held the floor/)
    }))

  it.effect("rule 4 with a human holder: a call without an output in a session an operator took over", () =>
    Effect.gen(function*() {
      const rec = yield* recordingWith((r) => tookOver(r) && r.history.some((i) => i._tag === "FunctionCallOutput"))
      const output = rec.history.findLast((i) => i._tag === "FunctionCallOutput")!
      expectRule({ ...rec, history: rec.history.filter((i) => i !== output) }, "rule 4", /has 0 outputs/)
    }))
})
