/**
 * The demo model understands looser phrasings of its three flows (issue 39): a booking from
 * "I'd like to book a table", a note from "save a note that ...".
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { AgentSession } from "@baton-voice/baton"
import { page } from "../../server/Page.ts"
import { greeter, makeFrontDesk } from "./agents.ts"
import * as DemoModel from "./demoModel.ts"
import { findNote, mentions } from "./demoParse.ts"

describe("the demo model's phrases", () => {
  it("lists its three flows, on the page too", () => {
    assert.strictEqual(DemoModel.demoFlows.length, 3)
    for (const flow of DemoModel.demoFlows) assert.include(DemoModel.demoPhrases, flow)
    const html = page({ model: "Model: the demo model", phrases: DemoModel.demoFlows })
    const listed = [...html.matchAll(/<li>(.*?)<\/li>/g)].map((m) => m[1]!.replaceAll("&#39;", "'"))
    assert.deepStrictEqual(listed, [...DemoModel.demoFlows])
  })

  it("understands looser phrasings of a booking and a note", () => {
    assert.isTrue(mentions.booking("I'd like to book a table"))
    assert.isTrue(mentions.booking("Could I make a reservation?"))
    assert.strictEqual(findNote("save a note that I prefer mornings"), "I prefer mornings")
    assert.strictEqual(findNote("please write down that I'm vegan"), "I'm vegan")
    assert.strictEqual(findNote("jot down that I prefer mornings, and what's the weather in Oslo?"), "I prefer mornings")
  })

  it.effect("a booking from \"I'd like to book a table\", a note from \"save a note that ...\"", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: greeter, userdata: makeFrontDesk() })
      yield* session.idle
      const note = yield* session.run("save a note that I prefer mornings")
      note.expect.containsFunctionCall({ name: "save_note", arguments: { text: "I prefer mornings" } })
      const booking = yield* session.run("I'd like to book a table")
      booking.expect.containsFunctionCall({ name: "book_appointment", agent: "greeter" })
    }).pipe(Effect.provide(DemoModel.layer())))
})
