/**
 * A person holding the floor (issue 35): rules 1, 2 and 4 with a human holder, and the take
 * over, the caller's and the human's words, the hand back with a note, and whispers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { drive, until } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, AgentTask, Human, Tool } from "../../src/index.ts"
import type { SessionEvent } from "../../src/index.ts"
import { assertEveryCallAnswered, eventsOfAgentAfter } from "../helpers.ts"

const state = { toolStarted: 0, exits: 0, resumes: 0 }

const desk = () => {
  state.toolStarted = 0
  state.exits = 0
  state.resumes = 0
  return Agent.make({
    name: "desk",
    instructions: "You are the front desk.",
    onExit: Effect.sync(() => void state.exits++),
    tools: [
      Tool.make("check_rooms", {
        description: "checks the rooms (slow)",
        handler: () => Effect.sync(() => void state.toolStarted++).pipe(Effect.andThen(Effect.sleep("5 seconds")), Effect.as("two rooms free"))
      })
    ]
  })
}

/**
 * Rule 1 with a human holder: each floor change is one step with its record, and every item,
 * speech or state event is the holder's, but for what an agent taken over still reports: the
 * end of its cut speech (the words heard, marked interrupted) and the outputs of the calls it
 * had made (rule 4). Nothing new: no speech, no words, no call.
 */
const assertHumanFloor = (events: ReadonlyArray<SessionEvent>) => {
  let holder: string | undefined
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!
    if (e.type === "agent_handoff") {
      const before = events[i - 1]
      assert.isTrue(before?.type === "conversation_item_added" && before.item._tag === "AgentHandoff" && before.seq === e.seq - 1)
      holder = e.to
      continue
    }
    if (e.type !== "conversation_item_added" && e.type !== "speech_created" && e.type !== "speech_finished" && e.type !== "agent_state_changed") continue
    if (e.agent === undefined || e.agent === holder || (e.type === "conversation_item_added" && e.item._tag === "AgentHandoff")) continue
    const late = e.type === "speech_finished" ||
      e.type === "conversation_item_added" && (e.item._tag === "FunctionCallOutput" || e.item._tag === "Message" && e.item.interrupted)
    assert.isTrue(late, `event ${e.seq} (${e.type}) by ${e.agent} while ${holder} held the floor`)
  }
}

const prompted = (request: ScriptedModel.RecordedRequest, text: string) => JSON.stringify(request.prompt).includes(text)

const handoffSeqTo = (events: ReadonlyArray<{ readonly type: string; readonly seq: number }>, kind: string) =>
  events.find((e) => e.type === "agent_handoff" && (e as { kind?: string }).kind === kind)!.seq

describe("rules with a human holder", () => {
  it.effect("rule 1: one floor: while a human holds it, the caller's words go only to the human and are recorded", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const operator = yield* Human.make({ name: "operator" })
      const session = yield* AgentSession.start({ agent: desk() })
      yield* session.run("hello")
      const outcome = yield* session.takeOver(operator)
      assert.deepStrictEqual(outcome, { _tag: "Applied", to: "operator" })
      assert.strictEqual(yield* session.currentAgent, undefined)
      assert.strictEqual((yield* session.currentHuman)?.name, "operator")
      assert.strictEqual(operator.holding(), session.id)
      const requests = model.requests.length
      yield* session.run("is anyone there?")
      const heard = yield* operator.heard.pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(heard.map((w) => w.text), ["is anyone there?"])
      // No model was asked anything while the human held the floor.
      assert.strictEqual(model.requests.length, requests)
      const history = yield* session.history
      const asked = history.items.find((i) => i._tag === "Message" && i.text === "is anyone there?")
      assert.strictEqual(asked?._tag === "Message" ? [asked.role, asked.agent].join(" ") : undefined, "user operator")
      const records = history.items.filter((i) => i._tag === "AgentHandoff").map((r) => r._tag === "AgentHandoff" ? [r.from, r.to, r.kind] : [])
      assert.deepStrictEqual(records, [[undefined, "desk", "start"], ["desk", "operator", "take_over"]])
      assertHumanFloor(yield* session.eventLog)
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { user: "hello" }, reply: { text: "Front desk, how can I help?" } }]))))

  it.effect("rule 2: silence after handoff: a take-over cuts the agent's reply at once and it says nothing more", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const capture = yield* TextCapture.TextCapture
      const operator = yield* Human.make({ name: "operator" })
      const session = yield* AgentSession.start({ agent: desk() })
      const run = yield* session.run("tell me everything").pipe(Effect.forkChild)
      yield* until(() => capture.textOf("desk").length > 0)
      yield* session.takeOver(operator)
      yield* drive(Fiber.join(run))
      yield* drive(session.idle)
      const events = yield* session.eventLog
      const taken = handoffSeqTo(events, "take_over")
      const after = eventsOfAgentAfter(events, "desk", taken).filter((e) => !(e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.interrupted))
      // Its cut reply's record (what was heard) and its speech's end are all it may still report.
      assert.deepStrictEqual(after.filter((e) => e.type !== "speech_finished" && e.type !== "agent_state_changed"), [])
      assert.isBelow(capture.textOf("desk").length, "One. Two. Three. Four. Five. Six.".length)
      const cut = (yield* session.history).items.find((i) => i._tag === "Message" && i.agent === "desk" && i.role === "assistant")
      assert.isTrue(cut?._tag === "Message" && cut.interrupted)
      assert.strictEqual(model.requestsFor("desk").length, 1)
      assert.strictEqual(state.exits, 1)
      assertHumanFloor(events)
    }).pipe(Effect.provide([
      ScriptedModel.layer([{ when: { user: "tell me" }, reply: { text: ["One. ", "Two. ", "Three. ", "Four. ", "Five. ", "Six."], chunkDelay: "1 second" } }]),
      TextCapture.layer
    ])))

  it.effect("rule 4: every call answered: a take-over while a tool runs records its output and makes no follow-up", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const operator = yield* Human.make({ name: "operator" })
      const session = yield* AgentSession.start({ agent: desk() })
      const run = yield* session.run("any rooms?").pipe(Effect.forkChild)
      yield* until(() => state.toolStarted > 0)
      yield* session.takeOver(operator)
      yield* drive(Fiber.join(run))
      yield* drive(session.idle)
      const history = yield* session.history
      assertEveryCallAnswered(history)
      assert.isTrue(history.items.some((i) => i._tag === "FunctionCallOutput" && i.name === "check_rooms"))
      // The tool's output came after the take-over: the agent did not answer it.
      assert.strictEqual(model.requestsFor("desk").length, 1)
      assertHumanFloor(yield* session.eventLog)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "any rooms" }, reply: { toolCalls: [{ name: "check_rooms" }] } },
      { when: { toolOutput: "two rooms" }, reply: { text: "Two rooms are free." } }
    ]))))

  it.effect("rule 4: every call answered: a take-over while a task runs cancels the task and answers its call", () =>
    Effect.gen(function*() {
      const operator = yield* Human.make({ name: "operator" })
      const collect = AgentTask.make<string>({ name: "collect", instructions: "Collect the name." })
      const agent = Agent.make({
        name: "desk",
        instructions: "You are the front desk.",
        tools: [Tool.make("ask_name", { description: "asks the name", handler: () => AgentTask.run(collect) })]
      })
      const session = yield* AgentSession.start({ agent })
      yield* session.run("book me")
      assert.strictEqual((yield* session.currentAgent)?.name, "collect")
      assert.strictEqual((yield* session.takeOver(operator))._tag, "Applied")
      yield* drive(session.idle)
      assertEveryCallAnswered(yield* session.history)
      const call = (yield* session.history).items.find((i) => i._tag === "FunctionCallOutput" && i.name === "ask_name")
      assert.isTrue(call?._tag === "FunctionCallOutput" && call.isError)
      assertHumanFloor(yield* session.eventLog)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "book me" }, reply: { toolCalls: [{ name: "ask_name" }] } },
      { when: { agent: "collect" }, reply: { text: "What is your name?" } }
    ]))))
})

describe("take over and hand back", () => {
  it.effect("the human's words go to the caller's output and are recorded as theirs", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const operator = yield* Human.make({ name: "operator" })
      const session = yield* AgentSession.start({ agent: desk() })
      const refused = yield* operator.say("too early").pipe(Effect.flip)
      assert.strictEqual(refused.reason, "not_holder")
      yield* session.takeOver(operator)
      yield* operator.say("Hi, this is Sam.")
      assert.strictEqual(capture.textOf("operator"), "Hi, this is Sam.")
      const said = (yield* session.history).items.find((i) => i._tag === "Message" && i.text === "Hi, this is Sam.")
      assert.strictEqual(said?._tag === "Message" ? [said.role, said.agent].join(" ") : undefined, "assistant operator")
      // One human at a time, and not twice.
      const other = yield* Human.make({ name: "other" })
      assert.deepStrictEqual(yield* session.takeOver(other), { _tag: "NotApplied", reason: "operator already holds the floor" })
      assertHumanFloor(yield* session.eventLog)
    }).pipe(Effect.provide([ScriptedModel.layer([]), TextCapture.layer])))

  it.effect("hand back: the agent resumes with what was said and the note as its next reply's instructions", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const operator = yield* Human.make({ name: "operator" })
      const agent = desk()
      const session = yield* AgentSession.start({ agent })
      yield* session.run("hello")
      yield* session.takeOver(operator)
      yield* session.run("I want a suite")
      yield* operator.say("Suites are on the top floor.")
      const outcome = yield* session.handBack(agent, { note: "Offer the top-floor suite." })
      assert.deepStrictEqual(outcome, { _tag: "Applied", to: "desk" })
      yield* drive(session.idle)
      const resumed = model.requestsFor("desk").at(-1)!
      assert.deepStrictEqual(resumed.last, { kind: "instructions", text: "Offer the top-floor suite." })
      assert.isTrue(prompted(resumed, "I want a suite") && prompted(resumed, "Suites are on the top floor."))
      // The note was for that reply only.
      yield* session.run("thanks")
      assert.isFalse(prompted(model.requestsFor("desk").at(-1)!, "Offer the top-floor suite."))
      assert.strictEqual(operator.holding(), undefined)
      const events = yield* session.eventLog
      const back = events.find((e) => e.type === "agent_handoff" && e.kind === "hand_back")
      assert.deepStrictEqual(back?.type === "agent_handoff" ? [back.from, back.to, back.resumed] : [], ["operator", "desk", true])
      assertHumanFloor(events)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "hello" }, reply: { text: "Front desk." } },
      { when: { instructions: "top-floor suite" }, reply: { text: "The top-floor suite is yours." } },
      { when: { user: "thanks" }, reply: { text: "You're welcome." } }
    ]))))

  it.effect("hand back to another agent: it enters (onEnter) with the taken-over agent's context and the human's words", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const operator = yield* Human.make({ name: "operator" })
      const billing = Agent.make({
        name: "billing",
        instructions: "You are billing.",
        onEnter: Agent.reply({ instructions: "billing enters" }).pipe(Effect.asVoid)
      })
      const session = yield* AgentSession.start({ agent: desk() })
      yield* session.run("hello")
      yield* session.takeOver(operator)
      yield* operator.say("I'll pass you to billing.")
      yield* session.handBack(billing, { note: "They dispute a charge." })
      yield* drive(session.idle)
      const first = model.requestsFor("billing")[0]!
      assert.isTrue(prompted(first, "hello") && prompted(first, "I'll pass you to billing.") && prompted(first, "They dispute a charge."))
      assert.strictEqual((yield* session.currentAgent)?.name, "billing")
      assertHumanFloor(yield* session.eventLog)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "hello" }, reply: { text: "Front desk." } },
      { when: { agent: "billing" }, reply: { text: "Billing here." } }
    ]))))

  it.effect("a whisper goes with the agent's next reply only, and nothing of it enters the history", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: desk() })
      yield* session.whisper("Mention the breakfast.")
      // (in the mailbox after the start: the entry agent holds the floor when it is handled)
      yield* session.run("hello")
      yield* session.run("and then?")
      const [first, second] = model.requestsFor("desk")
      assert.isTrue(prompted(first!, "Mention the breakfast."))
      assert.isFalse(prompted(second!, "Mention the breakfast."))
      assert.isFalse((yield* session.history).items.some((i) => i._tag === "Message" && i.text.includes("breakfast")))
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { agent: "desk" }, reply: { text: "Welcome." } }]))))

  it.effect("a hand back with no human holding the floor is not applied", () =>
    Effect.gen(function*() {
      const agent = desk()
      const session = yield* AgentSession.start({ agent })
      assert.deepStrictEqual(yield* session.handBack(agent), { _tag: "NotApplied", reason: "no human holds the floor" })
    }).pipe(Effect.provide(ScriptedModel.layer([]))))
})
