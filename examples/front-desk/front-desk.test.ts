import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ScriptedModel } from "../../layers/testing/ScriptedModel.ts"
import { AgentSession } from "@baton-voice/baton"
import { assertEveryCallAnswered, assertOneFloor } from "../../test/helpers.ts"
import { type FrontDesk, greeter, makeFrontDesk } from "./agents.ts"
import { demoConversation } from "./conversation.ts"
import * as DemoModel from "./demoModel.ts"
import { findCity, findDate, findName, findNote } from "./demoParse.ts"

const start = Effect.suspend(() => AgentSession.start<FrontDesk>({ agent: greeter, userdata: makeFrontDesk() }))

describe("example: front desk on the demo model", () => {
  it.effect("the whole demo conversation: handoffs and returns, the booking task, the parallel note and transfer", () =>
    Effect.gen(function*() {
      const session = yield* start
      yield* session.idle
      const [paris, tokyo, back, book, name, date, noteAndWeather, thanks, bye] = yield* Effect.forEach(
        demoConversation,
        (line) => session.run(line)
      )

      paris!.expect.nextEvent().isMessage({ role: "user", agent: "greeter", content: "Paris" })
      paris!.expect.nextEvent().isMessage({ role: "assistant", agent: "greeter" })
      paris!.expect.nextEvent().isFunctionCall({ name: "transfer_to_weather", arguments: { reason: "weather in Paris" } })
      paris!.expect.nextEvent().isFunctionCallOutput({ name: "transfer_to_weather", status: "handoff" })
      paris!.expect.nextEvent().isAgentHandoff({ from: "greeter", to: "weather", kind: "handoff", resumed: false })
      paris!.expect.nextEvent().isMessage({ role: "assistant", agent: "weather", content: "Sunny here" })
      paris!.expect.nextEvent().isFunctionCall({ name: "lookup_weather", arguments: { city: "Paris" } })
      paris!.expect.nextEvent().isFunctionCallOutput({ name: "lookup_weather", output: "Paris:" })
      paris!.expect.nextEvent().isMessage({ role: "assistant", agent: "weather", content: "In Paris it's" })
      paris!.expect.noMoreEvents()

      tokyo!.expect.containsFunctionCall({ name: "lookup_weather", arguments: { city: "Tokyo" } })

      back!.expect.containsFunctionCall({ name: "transfer_to_greeter", agent: "weather" })
      back!.expect.containsAgentHandoff({ from: "weather", to: "greeter", kind: "handoff", resumed: true })
      back!.expect.containsMessage({ agent: "greeter", content: "Welcome back" })

      book!.expect.containsFunctionCall({ name: "book_appointment", agent: "greeter" })
      book!.expect.containsAgentHandoff({ from: "greeter", to: "booking", kind: "task" })
      book!.expect.containsMessage({ agent: "booking", content: "What name" })
      // The tool is still waiting for the task: its output comes when the task completes.
      book!.expect.lacks("the booking's output yet", (e) => e.type === "function_call_output" && e.name === "book_appointment")

      name!.expect.containsMessage({ agent: "booking", content: "Thanks, Ada Lovelace. Which date" })

      date!.expect.nextEvent().isMessage({ role: "user", agent: "booking", content: "next Friday" })
      date!.expect.nextEvent().isFunctionCall({ name: "record_booking", arguments: { name: "Ada Lovelace", date: "next Friday" } })
      date!.expect.nextEvent().isFunctionCallOutput({ name: "record_booking", isError: false })
      date!.expect.nextEvent().isAgentHandoff({ from: "booking", to: "greeter", kind: "return" })
      date!.expect.nextEvent().isFunctionCallOutput({ name: "book_appointment", output: "Booked: Ada Lovelace on next Friday, reference FD-1." })
      date!.expect.nextEvent().isMessage({ role: "assistant", agent: "greeter", content: "booked for next Friday" })
      date!.expect.noMoreEvents()
      assert.deepStrictEqual(session.userdata.bookings, [{ name: "Ada Lovelace", date: "next Friday", reference: "FD-1" }])

      // Two tool calls in one response: the note is kept, the transfer happens after both settle.
      noteAndWeather!.expect.skipNext(2)
      noteAndWeather!.expect.nextEvent().isFunctionCall({ name: "save_note", arguments: { text: "I prefer mornings" } })
      noteAndWeather!.expect.nextEvent().isFunctionCall({ name: "transfer_to_weather", arguments: { reason: "weather in Oslo" } })
      noteAndWeather!.expect.nextEvent().isFunctionCallOutput({ name: "save_note", output: "Saved note: I prefer mornings" })
      noteAndWeather!.expect.nextEvent().isFunctionCallOutput({ name: "transfer_to_weather", status: "handoff" })
      noteAndWeather!.expect.nextEvent().isAgentHandoff({ from: "greeter", to: "weather", resumed: true })
      noteAndWeather!.expect.nextEvent().isMessage({ agent: "weather", content: "Sunny again" })
      noteAndWeather!.expect.nextEvent().isFunctionCall({ name: "lookup_weather", arguments: { city: "Oslo" } })
      noteAndWeather!.expect.skipNext(1)
      noteAndWeather!.expect.nextEvent().isMessage({ agent: "weather", content: "In Oslo it's" })
      noteAndWeather!.expect.noMoreEvents()
      assert.deepStrictEqual(session.userdata.notes, ["I prefer mornings"])

      thanks!.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
      bye!.expect.containsMessage({ agent: "greeter", content: "Goodbye" })

      const model = yield* ScriptedModel
      // Silence after handoff: no model call ever followed a transfer's output on the outgoing agent.
      for (const request of model.requests) {
        assert.isFalse(request.last.kind === "tool" && request.last.outputs.some((o) => o.name.startsWith("transfer_")))
      }
      assertEveryCallAnswered(yield* session.history)
      assertOneFloor(yield* session.eventLog)
    }).pipe(Effect.provide(DemoModel.layer({ record: true }))))

  it.effect("a booking asked for in one line is recorded at once", () =>
    Effect.gen(function*() {
      const session = yield* start
      const result = yield* session.run("Please book an appointment for Grace Hopper on June 12")
      result.expect.containsAgentHandoff({ from: "greeter", to: "booking", kind: "task" })
      result.expect.containsFunctionCall({ name: "record_booking", arguments: { name: "Grace Hopper", date: "June 12" } })
      result.expect.containsMessage({ agent: "greeter", content: "You're all set, Grace Hopper" })
    }).pipe(Effect.provide(DemoModel.layer())))

  it.effect("a cancelled booking: the task fails, the tool answers, the greeter goes on", () =>
    Effect.gen(function*() {
      const session = yield* start
      yield* session.run("I'd like to book an appointment")
      const result = yield* session.run("never mind, cancel it")
      result.expect.containsFunctionCall({ name: "cancel_booking", agent: "booking" })
      result.expect.containsAgentHandoff({ from: "booking", to: "greeter", kind: "return" })
      result.expect.containsFunctionCallOutput({ name: "book_appointment", output: "Not booked" })
      result.expect.containsMessage({ agent: "greeter", content: "haven't booked anything" })
      assert.deepStrictEqual(session.userdata.bookings, [])
    }).pipe(Effect.provide(DemoModel.layer())))

  it.effect("anything else gets a helpful answer listing the phrases the demo model understands", () =>
    Effect.gen(function*() {
      const session = yield* start
      const result = yield* session.run("Can you recommend a good book about Effect?")
      const answer = result.expect.containsMessage({ role: "assistant", agent: "greeter", content: "demo model" })
      for (const phrase of DemoModel.demoPhrases) assert.include(answer.content, phrase)
      const task = yield* session.run("I'd like to book an appointment")
      task.expect.containsAgentHandoff({ to: "booking" })
      const unclear = yield* session.run("hmm")
      unclear.expect.containsMessage({ agent: "booking", content: "didn't catch that" })
    }).pipe(Effect.provide(DemoModel.layer())))

  it("the demo model's extractors", () => {
    assert.strictEqual(findCity("What's the weather in Paris?"), "Paris")
    assert.strictEqual(findCity("how about new york"), "New York")
    assert.strictEqual(findCity("Reykjavik"), "Reykjavik")
    assert.strictEqual(findCity("Bye"), undefined)
    assert.strictEqual(findCity("Thanks!"), undefined)
    assert.strictEqual(findCity("what's the weather like?"), undefined)
    assert.strictEqual(findDate("next Friday"), "next Friday")
    assert.strictEqual(findDate("on 2025-06-12 please"), "2025-06-12")
    assert.strictEqual(findDate("My name is Ada"), undefined)
    assert.strictEqual(findName("My name is Ada Lovelace"), "Ada Lovelace")
    assert.strictEqual(findName("Ada Lovelace, next Friday"), "Ada Lovelace")
    assert.strictEqual(findName("next Friday"), undefined)
    assert.strictEqual(findName("I'd like to book an appointment"), undefined)
    assert.strictEqual(findNote("Please note that I prefer mornings, and what's the weather in Oslo?"), "I prefer mornings")
    assert.strictEqual(findNote("note: call back after 5"), "call back after 5")
  })
})
