/**
 * The simulation draws tool timeouts, user away and turn hooks (issue 37): seeds that draw each
 * run with every rule holding and do what was drawn (a call cut at its timeout, the user away
 * and `onUserAway` run, a reply stopped), the draws leave a seed as it was with `timeouts: false`,
 * and CheckWaits.ts fires on recordings tampered to break what it checks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { SessionEvent } from "../../src/Events.ts"
import { check } from "./Check.ts"
import { generate } from "./Generate.ts"
import type { Recording } from "./Runner.ts"
import type { Scenario } from "./Scenario.ts"
import { DEFAULT_EXCLUDE, simulate, type SimResult } from "./Sim.ts"

const options = { exclude: DEFAULT_EXCLUDE }

/** Simulates seeds from 0 until one that `did` what was drawn; each must keep every rule. */
const firstThat = (drawn: (s: Scenario) => boolean, did: (r: SimResult) => boolean) =>
  Effect.gen(function*() {
    for (let seed = 0; seed < 400; seed++) {
      if (!drawn(generate(seed))) continue
      const result = yield* simulate(seed, options)
      assert.deepStrictEqual(result.violations, [], `seed ${seed}`)
      if (did(result)) return result
    }
    return assert.fail("no seed below 400 did what was drawn")
  })

const tamper = (rec: Recording, events: ReadonlyArray<SessionEvent>): Recording => ({ ...rec, events })

describe("simulation draws: tool timeouts, user away, turn hooks", () => {
  it("draws leave older schedules as they were: with timeouts off a seed generates as before the draws", () => {
    let changed = 0
    for (let seed = 0; seed < 300; seed++) {
      const off = generate(seed, { timeouts: false })
      const on = generate(seed)
      if (JSON.stringify(on) !== JSON.stringify(off)) changed++
      assert.deepStrictEqual(on.timeline.filter((a) => a.op !== "idle" || on.userAwayTimeout === undefined), off.timeline.filter((a) => a.op !== "idle" || on.userAwayTimeout === undefined))
    }
    assert.isAbove(changed, 50)
    assert.isBelow(changed, 300)
  })

  it.effect("tool timeouts: a call past its timeout is cut at the limit and answered once with the timeout output; tampering with that answer is a rule 4 violation", () =>
    Effect.gen(function*() {
      const result = yield* firstThat(
        (s) => s.agents.some((a) => a.tools.some((t) => t.kind === "timed")),
        (r) => r.recording.timed.some((c) => c.long && c.stoppedAt !== undefined)
      )
      const rec = result.recording
      const cut = rec.timed.find((c) => c.long && c.stoppedAt !== undefined)!
      assert.isUndefined(cut.finishedAt)
      // The answer says it ran within its limit: the checker objects.
      const events = rec.events.map((e) =>
        e.type === "conversation_item_added" && e.item._tag === "FunctionCallOutput" && e.item.callId === cut.callId
          ? { ...e, item: { ...e.item, output: `${cut.tool} done` } } as SessionEvent
          : e
      )
      const found = check(tamper(rec, events))
      assert.isTrue(found.some((v) => v.rule === "rule 4" && v.message.includes(cut.callId)), JSON.stringify(found))
    }), 300_000)

  it.effect("user away: a silence past userAwayTimeout marks the user away and runs the holder's onUserAway; an away while the holder speaks is a rule 1 violation", () =>
    Effect.gen(function*() {
      const result = yield* firstThat(
        (s) => s.userAwayTimeout !== undefined && s.agents.some((a) => a.onUserAway !== undefined),
        (r) => r.recording.away.length > 0
      )
      const rec = result.recording
      assert.isTrue(rec.events.some((e) => e.type === "user_state_changed" && e.state === "away"))
      const holder = rec.away[0]!.holder ?? rec.away[0]!.agent
      // The away event the hook's run followed.
      const awayAt = rec.events.findLastIndex((e) => e.type === "user_state_changed" && e.state === "away" && e.seq < rec.away[0]!.seq)
      const speaking = { ...rec.events[awayAt]!, type: "agent_state_changed", agent: holder, state: "speaking", previous: "listening" } as SessionEvent
      const events = [...rec.events.slice(0, awayAt), speaking, ...rec.events.slice(awayAt)]
      const found = check(tamper(rec, events))
      assert.isTrue(found.some((v) => v.rule === "rule 1" && /marked away while .* was speaking/.test(v.message)), JSON.stringify(found))
    }), 300_000)

  it.effect("turn hooks: a turn the hook stops gets no reply and its message is recorded; a dropped message is a violation", () =>
    Effect.gen(function*() {
      const result = yield* firstThat(
        (s) => s.agents.some((a) => a.turnHook === "stop"),
        (r) => r.recording.turns.some((t) => t.stopped)
      )
      const rec = result.recording
      const stopped = rec.turns.find((t) => t.stopped)!
      assert.isFalse(rec.requests.some((r) => r.agent === stopped.agent && r.userText === stopped.text && r.order > stopped.order && r.trigger === "user" &&
        !rec.events.some((e) => e.type === "agent_handoff" && e.seq >= stopped.seq && e.seq <= r.seq)))
      const events = rec.events.filter((e) =>
        !(e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user" && e.item.text === stopped.text)
      )
      const found = check(tamper(rec, events))
      assert.isTrue(found.some((v) => v.message.includes(`stopped the reply to "${stopped.text}"`)), JSON.stringify(found))
    }), 300_000)
})
