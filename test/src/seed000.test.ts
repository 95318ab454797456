/**
 * Seed 000 in pipeline form: after a handoff the outgoing agent makes no model call and says
 * nothing; transferring back to it resumes its paused actor with its state, without rerunning
 * its onEnter.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered, assertOneFloor, eventsOfAgentAfter, handoffSeq } from "../helpers.ts"

const make = () => {
  const counts = { greeterEnter: 0, greeterResume: 0, greeterExit: 0, weatherEnter: 0 }
  const greeter: Agent.Agent = Agent.make({
    name: "greeter",
    instructions: "You are Kelly, the greeter.",
    tools: [Tool.handoff("transfer_to_weather", () => weather)],
    onEnter: Effect.sync(() => void counts.greeterEnter++).pipe(Effect.andThen(Agent.reply({ instructions: "greet the user" }))),
    onResume: Effect.sync(() => void counts.greeterResume++).pipe(Effect.andThen(Agent.reply({ instructions: "welcome back" }))),
    onExit: Effect.sync(() => void counts.greeterExit++)
  })
  const weather: Agent.Agent = Agent.make({
    name: "weather",
    instructions: "You are Sunny, the weather specialist.",
    tools: [Tool.handoff("transfer_to_greeter", () => greeter)],
    onEnter: Effect.sync(() => void counts.weatherEnter++).pipe(Effect.andThen(Agent.reply({ instructions: "introduce yourself" })))
  })
  return { greeter, weather, counts }
}

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { instructions: "greet the user" }, reply: { text: "Hi, I'm Kelly." } },
  { when: { instructions: "welcome back" }, reply: { text: "Welcome back, Sam." } },
  { when: { instructions: "introduce yourself" }, reply: { text: "Sunny here, which city?" } },
  { when: { user: "my name is sam" }, reply: { text: "Nice to meet you, Sam." } },
  { when: { user: "weather", agent: "greeter" }, reply: { text: "Let me transfer you.", toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { user: "rome", agent: "weather" }, reply: { text: "Sunny in Rome." } },
  { when: { user: "done", agent: "weather" }, reply: { toolCalls: [{ name: "transfer_to_greeter" }] } },
  { when: { agent: "greeter" }, reply: { text: "GREETER SHOULD BE SILENT" } }
]

describe("seed 000: realtime handoff races, in pipeline form", () => {
  it.effect("seed 000: no model call or output from the outgoing agent after the handoff", () => {
    const { greeter } = make()
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: greeter })
      const result = yield* session.run("what's the weather like?")
      result.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
      yield* session.run("in rome please")
      const greeterCalls = model.requestsFor("greeter").length
      yield* session.run("and rome tomorrow?")
      const events = yield* session.eventLog
      // greeter: its greeting and the turn that handed off; nothing after.
      assert.strictEqual(greeterCalls, 2)
      assert.strictEqual(model.requestsFor("greeter").length, 2)
      assert.deepStrictEqual(eventsOfAgentAfter(events, "greeter", handoffSeq(events, "weather")), [])
      assert.strictEqual(text.textOf("greeter"), "Hi, I'm Kelly.Let me transfer you.")
      assert.notInclude(text.textOf("weather"), "SILENT")
      assertOneFloor(events)
    }).pipe(Effect.provide([ScriptedModel.layer(rules), TextCapture.layer]))
  })

  it.effect("seed 000: transfer back resumes the paused actor (state kept, onEnter not rerun)", () => {
    const { greeter, counts } = make()
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: greeter })
      yield* session.run("my name is Sam")
      yield* session.run("what's the weather like?")
      yield* session.run("in rome please")
      const back = yield* session.run("done, thanks")
      back.expect.containsAgentHandoff({ from: "weather", to: "greeter", resumed: true })
      back.expect.containsMessage({ role: "assistant", agent: "greeter", content: "Welcome back, Sam." })
      assert.deepStrictEqual(counts, { greeterEnter: 1, greeterResume: 1, greeterExit: 1, weatherEnter: 1 })
      // The resumed greeter's model sees its own earlier turns (its state) and what the user
      // told the weather agent (merged by the handoff's context policy).
      const resumed = model.requestsFor("greeter").at(-1)!
      const sent = JSON.stringify(resumed.prompt.content)
      assert.include(sent, "Nice to meet you, Sam.")
      assert.include(sent, "in rome please")
      assert.include(sent, "You are Kelly, the greeter.")
      assert.notInclude(sent, "You are Sunny")
      // Going there again resumes the weather actor too: still one onEnter each.
      yield* session.run("what's the weather like?")
      assert.strictEqual(counts.weatherEnter, 1)
      assertEveryCallAnswered(yield* session.history)
      assertOneFloor(yield* session.eventLog)
    }).pipe(Effect.provide(ScriptedModel.layer(rules)))
  })
})
