/**
 * The timeline's human lane (issue 35): an operator who takes the floor over gets a lane of
 * their own (a person's, named after them), marked where they took over and handed back, with
 * their words as bars; a whisper and a hand back's note are notes in the lane of the agent they
 * are for. From a real session's events (scripted model), laid out (pure) and drawn (SVG read
 * back as a tree).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Human, Timeline } from "../../src/index.ts"
import { byClass, parse, textOf } from "./timeline/svgTree.ts"

const front = Agent.make({ name: "front", instructions: "You are the front desk." })
const billing = Agent.make({ name: "billing", instructions: "You are billing." })

/** hello → whisper → reply → ada takes over, hears and speaks → back to billing with a note. */
const takeOverAndBack = Effect.gen(function*() {
  const ada = yield* Human.make({ name: "ada" })
  const session = yield* AgentSession.start({ agent: front })
  yield* session.run("hello")
  yield* session.whisper("Mention the late checkout.")
  yield* session.run("anything else?")
  yield* session.takeOver(ada, { reason: "ada took over" })
  yield* session.run("I was charged twice")
  yield* ada.say("Sorry about that, let me look.")
  yield* session.handBack(billing, { note: "Refund the double charge." })
  yield* session.idle
  return yield* session.eventLog
}).pipe(Effect.provide(ScriptedModel.layer([
  { when: { agent: "billing" }, reply: { text: "Billing: your refund is on its way." } },
  { when: { user: "hello" }, reply: { text: "Front desk, hello." } },
  { when: { agent: "front" }, reply: { text: "Late checkout is free." } }
])))

describe("the timeline's human lane", () => {
  it.effect("layout: ada's lane is a person's, with the take-over and hand-back marked in it, her words as a bar, whispers as notes", () =>
    Effect.gen(function*() {
      const layout = Timeline.layout(yield* takeOverAndBack)
      assert.deepStrictEqual(layout.lanes.map((l) => [l.name, l.kind]), [["user", "user"], ["front", "agent"], ["ada", "human"], ["billing", "agent"]])
      assert.deepStrictEqual(layout.floor.map((f) => [f.agent, f.kind]), [["front", "start"], ["ada", "take_over"], ["billing", "hand_back"]])
      const marks = layout.markers.filter((m) => m.kind === "take_over" || m.kind === "hand_back" || m.kind === "whisper")
      assert.deepStrictEqual(marks.map((m) => [m.kind, m.lane, m.label]), [
        ["whisper", "front", "whisper: Mention the late checkout."],
        ["take_over", "ada", "took over"],
        ["hand_back", "ada", "back to billing"],
        ["whisper", "billing", "note: Refund the double charge."]
      ])
      // Each mark is where its passage is drawn (or after it), in order.
      const passages = layout.passages.filter((p) => p.kind === "take_over" || p.kind === "hand_back")
      assert.isAtLeast(marks[1]!.x, passages[0]!.x)
      assert.isAtLeast(marks[2]!.x, passages[1]!.x)
      assert.isBelow(marks[1]!.x, marks[2]!.x)
      const said = layout.bars.filter((b) => b.kind === "human")
      assert.deepStrictEqual(said.map((b) => [b.lane, b.label]), [["ada", "“Sorry about that, let me look.”"]])
      // Ada's words fall inside her band; the caller's words to her are the caller's.
      const band = layout.floor[1]!
      assert.isTrue(said[0]!.x0 > band.x0 && said[0]!.x0 < band.x1)
      assert.isTrue(layout.bars.some((b) => b.kind === "user" && b.label === "“I was charged twice”"))
      // Nobody but ada speaks while she holds the floor.
      assert.isFalse(layout.bars.some((b) => b.kind === "speech" && b.x0 > band.x0 && b.x0 < band.x1))
    }))

  it.effect("svg: the person's lane, its marks and the notes are in the picture", () =>
    Effect.gen(function*() {
      const svg = parse(Timeline.fromEvents(yield* takeOverAndBack))
      const lanes = byClass(svg, "lane")
      const ada = lanes.find((l) => l.attributes["data-lane"] === "ada")!
      assert.strictEqual(ada.attributes["data-kind"], "human")
      assert.include(textOf(ada), "person")
      assert.strictEqual(lanes.find((l) => l.attributes["data-lane"] === "front")!.attributes["data-kind"], "agent")
      assert.deepStrictEqual(byClass(svg, "marker take_over").map((m) => m.attributes["data-lane"]), ["ada"])
      assert.deepStrictEqual(byClass(svg, "marker hand_back").map((m) => m.attributes["data-lane"]), ["ada"])
      assert.deepStrictEqual(byClass(svg, "marker whisper").map((m) => [m.attributes["data-lane"], textOf(m)]), [
        ["front", "✎ whisper: Mention the late checkout."],
        ["billing", "✎ note: Refund the double charge."]
      ])
      assert.deepStrictEqual(byClass(svg, "bar human").map((b) => [b.attributes["data-lane"], textOf(b)]), [
        ["ada", "“Sorry about that, let me look.”"]
      ])
      assert.include(textOf(byClass(svg, "legend")[0]!), "a person (took over)")
    }))
})
