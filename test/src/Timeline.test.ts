/**
 * The timeline picture's structure, read back from the SVG (not compared byte for byte): the
 * seed 002 parallel handoff and the seed 004 task group give the lanes, floor bands, passages
 * and bars in the order the runs made them; the JSONL reader rejects what is not an event log.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem } from "effect"
import * as Runs from "../../examples/timeline/runs.ts"
import { drive } from "../../layers/testing/Drive.ts"
import type { SessionEvent } from "../../src/Events.ts"
import { frontDesk } from "../../examples/health-service/agents.ts"
import { turns } from "../../examples/health-service/main.ts"
import { AgentSession, Timeline } from "../../src/index.ts"
import { byClass, type Element, parse, textOf } from "./timeline/svgTree.ts"

const num = (e: Element, key: string) => Number(e.attributes[key])
const attr = (e: Element, key: string) => e.attributes[key]
const lanesOf = (svg: Element) => byClass(svg, "lane").map((l) => attr(l, "data-lane"))
const bandsOf = (svg: Element) => byClass(svg, "floor").map((f) => attr(f, "data-agent"))
const toolsOf = (svg: Element) => byClass(svg, "bar tool")

/** Each floor band starts where the one before it ends: exactly one holder at every x. */
const assertOneFloor = (svg: Element) => {
  const bands = byClass(svg, "floor")
  for (let i = 1; i < bands.length; i++) assert.strictEqual(num(bands[i]!, "data-x0"), num(bands[i - 1]!, "data-x1"))
}

describe("Timeline", () => {
  it.effect("seed 002: lanes, the floor passing once, the parallel calls stacked and settled before it passes", () =>
    Effect.gen(function*() {
      const events = yield* drive(Runs.seed002)
      const svg = parse(Timeline.fromEvents(events))
      assert.strictEqual(svg.name, "svg")
      assert.deepStrictEqual(lanesOf(svg), ["user", "front", "billing"])
      assert.deepStrictEqual(bandsOf(svg), ["front", "billing"])
      assertOneFloor(svg)

      const passages = byClass(svg, "passage")
      assert.deepStrictEqual(passages.map((p) => [attr(p, "data-from"), attr(p, "data-to"), attr(p, "data-kind")]), [
        [undefined, "front", "start"],
        ["front", "billing", "handoff"]
      ])
      const handoffX = num(passages[1]!, "data-x")

      // Both calls of the one response, in the front lane, stacked in rows 1 and 2 of one batch.
      const tools = toolsOf(svg)
      assert.deepStrictEqual(tools.map((t) => [textOf(t), attr(t, "data-lane"), attr(t, "data-row"), attr(t, "data-status")]), [
        ["save_note", "front", "1", "ok"],
        ["transfer_to_billing", "front", "2", "handoff"]
      ])
      assert.strictEqual(attr(tools[0]!, "data-batch"), attr(tools[1]!, "data-batch"))
      // They overlap in time (parallel), and the floor passes after both settled (rule 3).
      assert.isTrue(num(tools[1]!, "data-x0") < num(tools[0]!, "data-x1"))
      for (const tool of tools) assert.isTrue(num(tool, "data-x1") <= handoffX)

      // The front agent's one speech ends before the floor passes; billing speaks after it (rule 2).
      const speeches = byClass(svg, "bar speech")
      assert.deepStrictEqual(speeches.map((s) => attr(s, "data-lane")), ["front", "billing"])
      assert.isTrue(num(speeches[0]!, "data-x1") <= handoffX)
      assert.isTrue(num(speeches[1]!, "data-x0") >= handoffX)
      assert.include(textOf(speeches[1]!), "Billing here")
      const user = byClass(svg, "bar user")
      assert.strictEqual(user.length, 1)
      assert.include(textOf(user[0]!), "question about my bill")
      assert.isTrue(num(user[0]!, "data-x0") < num(speeches[0]!, "data-x0"))
    }).pipe(Effect.provide(Runs.seed002Model())))

  it.effect("seed 004: the task group's floor goes down to each task and back up, in order", () =>
    Effect.gen(function*() {
      const events = yield* drive(Runs.seed004({ latency: "200 millis", pause: "1 second" }))
      const svg = parse(Timeline.fromEvents(events))
      assert.deepStrictEqual(lanesOf(svg), ["user", "front_desk", "intake", "verify_intent", "identify_patient", "schedule_visit"])
      assert.deepStrictEqual(bandsOf(svg), [
        "front_desk", "intake", "verify_intent", "intake", "identify_patient", "intake", "schedule_visit", "intake", "front_desk"
      ])
      assertOneFloor(svg)
      const passages = byClass(svg, "passage")
      assert.deepStrictEqual(passages.map((p) => `${attr(p, "data-from") ?? "-"}>${attr(p, "data-to")}:${attr(p, "data-kind")}`), [
        "->front_desk:start",
        "front_desk>intake:task",
        "intake>verify_intent:task",
        "verify_intent>intake:return",
        "intake>identify_patient:task",
        "identify_patient>intake:return",
        "intake>schedule_visit:task",
        "schedule_visit>intake:return",
        "intake>front_desk:return"
      ])
      // A return resumes the caller; going down to a new task does not.
      assert.deepStrictEqual(passages.filter((p) => attr(p, "data-resumed") === "true").map((p) => attr(p, "data-kind")), ["return", "return", "return", "return"])
      const xs = passages.map((p) => num(p, "data-x"))
      assert.deepStrictEqual(xs, [...xs].sort((a, b) => a - b))

      // Each user turn comes before the tool call that answers it, and each call in its task's lane.
      const users = byClass(svg, "bar user")
      const tools = toolsOf(svg)
      assert.deepStrictEqual(tools.map((t) => [textOf(t), attr(t, "data-lane")]), [
        ["confirm_intent", "verify_intent"],
        ["record_patient", "identify_patient"],
        ["book_visit", "schedule_visit"]
      ])
      assert.strictEqual(users.length, 3)
      users.forEach((u, i) => {
        assert.isTrue(num(u, "data-x0") < num(tools[i]!, "data-x0"))
        if (i > 0) assert.isTrue(num(u, "data-x0") > num(tools[i - 1]!, "data-x1"))
      })
      // The axis carries the run's times in order, from 0 to the end of the last turn.
      const ticks = byClass(svg, "tick").map((t) => num(t, "data-ms"))
      assert.strictEqual(ticks[0], 0)
      assert.deepStrictEqual(ticks, [...ticks].sort((a, b) => a - b))
      assert.isAtLeast(ticks[ticks.length - 1]!, 3000)
      const last = byClass(svg, "bar speech").at(-1)!
      assert.strictEqual(attr(last, "data-lane"), "front_desk")
      assert.include(textOf(last), "Jane Doe on Tuesday")
    }).pipe(Effect.provide(Runs.seed004Model({ latency: "200 millis" }))))

  it("interruptions, refused handoffs, errors and realtime moves become markers; text is escaped", () => {
    let seq = 0
    const at = (ms: number) => ({ seq: seq++, at: 1000 + ms })
    const events: Array<SessionEvent> = [
      { type: "agent_handoff", from: undefined, to: "a", kind: "start", resumed: false, ...at(0) },
      { type: "realtime_connection", agent: "a", connectionId: "rt_1", action: "opened", ...at(1) },
      { type: "speech_created", agent: "a", speechId: "s1", source: "say", ...at(2) },
      { type: "conversation_item_added", agent: "a", item: { _tag: "Message", id: "m", role: "assistant", text: "<b>&\"hi\"", interrupted: true, agent: "a" }, ...at(3) },
      { type: "user_state_changed", state: "speaking", ...at(4) },
      { type: "speech_finished", agent: "a", speechId: "s1", interrupted: true, ...at(5) },
      { type: "handoff_not_applied", agent: "a", to: "b", reason: "a no longer holds the floor", ...at(6) },
      { type: "error", agent: "a", source: "model", message: "timeout", recoverable: true, ...at(7) },
      { type: "user_state_changed", state: "listening", ...at(8) },
      { type: "agent_handoff", from: "a", to: "b", kind: "handoff", resumed: false, ...at(9) },
      { type: "realtime_connection", agent: "b", connectionId: "rt_1", action: "reused", ...at(10) },
      { type: "close", reason: "closed", ...at(11) }
    ]
    const svg = parse(Timeline.fromEvents(events))
    const kinds = (name: string) => byClass(svg, `marker ${name}`).map((m) => attr(m, "data-lane"))
    assert.deepStrictEqual(kinds("interrupt"), ["a"])
    assert.deepStrictEqual(kinds("not_applied"), ["a"])
    assert.deepStrictEqual(kinds("error"), ["a"])
    assert.deepStrictEqual(kinds("realtime"), ["a", "b"])
    assert.deepStrictEqual(kinds("close"), ["b"])
    const speech = byClass(svg, "bar speech")[0]!
    assert.strictEqual(attr(speech, "data-interrupted"), "true")
    assert.include(textOf(speech), "<b>&\"hi\"")
    assert.strictEqual(byClass(svg, "bar user_speaking").length, 1)
    // Events given out of order are drawn by sequence number.
    assert.deepStrictEqual(bandsOf(parse(Timeline.fromEvents([...events].reverse()))), ["a", "b"])
  })

  it.effect("JSONL: a log round-trips to the same picture; a bad line or an empty log is a clear error", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped()
      const events = yield* Runs.seed002.pipe(Effect.provide(Runs.seed002Model()), drive)
      const path = `${dir}/run.jsonl`
      yield* fs.writeFileString(path, events.map(Timeline.encodeLine).join("\n") + "\n")
      const written = yield* Timeline.command(path)
      assert.strictEqual(written, `${dir}/run.svg`)
      const fromFile = parse(yield* fs.readFileString(written))
      assert.deepStrictEqual(bandsOf(fromFile), bandsOf(parse(Timeline.fromEvents(events))))
      assert.deepStrictEqual(lanesOf(fromFile), ["user", "front", "billing"])

      yield* fs.writeFileString(`${dir}/bad.jsonl`, `${Timeline.encodeLine(events[0]!)}\n{"type":"x"}\n`)
      const bad = yield* Effect.flip(Timeline.fromJsonl(`${dir}/bad.jsonl`))
      assert.strictEqual(bad.reason, "invalid_line")
      assert.include(bad.message, "line 2")
      yield* fs.writeFileString(`${dir}/empty.jsonl`, "\n\n")
      assert.strictEqual((yield* Effect.flip(Timeline.fromJsonl(`${dir}/empty.jsonl`))).reason, "empty")
      assert.strictEqual((yield* Effect.flip(Timeline.fromJsonl(`${dir}/missing.jsonl`))).reason, "read_failed")
    }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)))

  it.effect("result.timeline() draws one run: start-up left out, the floor starting with the holder at the input", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: frontDesk })
      yield* session.idle
      const result = yield* session.run(turns[0]!)
      const svg = parse(result.timeline({ title: "first turn" }))
      assert.strictEqual(textOf(byClass(svg, "title")[0]!), "first turn")
      assert.deepStrictEqual(bandsOf(svg), ["verify_intent", "intake", "identify_patient"])
      assert.deepStrictEqual(byClass(svg, "passage").map((p) => attr(p, "data-kind")), ["return", "task"])
      assert.notInclude(textOf(svg), "How can I help")
    }).pipe(Effect.provide(Runs.seed004Model())))
})
