/**
 * Rules 5 and 6: hooks run exactly once per activation / passing of the floor; a return to a
 * paused agent resumes it, and an AgentTask's completion resumes its caller.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered, assertOneFloor, eventsOfAgentAfter } from "../helpers.ts"

describe("rule 5: hooks exactly once", () => {
  it.effect("rule 5: onEnter once per activation, onExit once per passing, resume does not rerun onEnter", () => {
    const log: Array<string> = []
    const hooks = (name: string) => ({
      onEnter: Effect.sync(() => void log.push(`${name}.enter`)),
      onExit: Effect.sync(() => void log.push(`${name}.exit`)),
      onResume: Effect.sync(() => void log.push(`${name}.resume`))
    })
    const a: Agent.Agent = Agent.make({ name: "a", instructions: "A", tools: [Tool.handoff("to_b", () => b)], ...hooks("a") })
    const b: Agent.Agent = Agent.make({ name: "b", instructions: "B", tools: [Tool.handoff("to_a", () => a)], ...hooks("b") })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      for (let i = 0; i < 3; i++) {
        yield* session.run("switch to b")
        yield* session.run("switch to a")
      }
      assert.deepStrictEqual(log, [
        "a.enter",
        "a.exit", "b.enter",
        "b.exit", "a.resume",
        "a.exit", "b.resume",
        "b.exit", "a.resume",
        "a.exit", "b.resume",
        "b.exit", "a.resume"
      ])
      assertOneFloor(yield* session.eventLog)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "switch to b", agent: "a" }, reply: { toolCalls: [{ name: "to_b" }] } },
      { when: { user: "switch to a", agent: "b" }, reply: { toolCalls: [{ name: "to_a" }] } }
    ])))
  })
})

describe("rule 6: return resumes", () => {
  it.effect("rule 6: a return resumes the paused actor with its chat context", () => {
    const a: Agent.Agent = Agent.make({ name: "a", instructions: "A", tools: [Tool.handoff("to_b", () => b, { context: "none" })] })
    const b: Agent.Agent = Agent.make({ name: "b", instructions: "B", tools: [Tool.handoff("to_a", () => a, { context: "none" })] })
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: a })
      yield* session.run("remember the code 4711")
      yield* session.run("switch to b")
      yield* session.run("switch to a")
      yield* session.run("what was the code?")
      const last = model.requestsFor("a").at(-1)!
      // A's own context survived its pause (the policy "none" merged nothing from B).
      assert.include(JSON.stringify(last.prompt.content), "remember the code 4711")
      assert.notInclude(JSON.stringify(model.requestsFor("b")[0]!.prompt.content), "4711")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "4711" }, reply: { text: "Noted." } },
      { when: { user: "switch to b", agent: "a" }, reply: { toolCalls: [{ name: "to_b" }] } },
      { when: { user: "switch to b", agent: "b" }, reply: { text: "b here" } },
      { when: { user: "switch to a", agent: "b" }, reply: { toolCalls: [{ name: "to_a" }] } },
      { when: { user: "what was the code", agent: "a" }, reply: { text: "4711" } },
      { when: { agent: "b" }, reply: { text: "b here" } }
    ])))
  })

  const askName: AgentTask.AgentTask<string> = AgentTask.make<string>({
    name: "ask_name",
    instructions: "Ask for the caller's name.",
    tools: [
      Tool.make("record_name", {
        description: "Record the name",
        parameters: Schema.Struct({ name: Schema.String }),
        handler: ({ name }) => AgentTask.complete(askName, name)
      })
    ],
    onEnter: Agent.reply({ instructions: "ask for the name" }).pipe(Effect.asVoid)
  })
  const askDate: AgentTask.AgentTask<string> = AgentTask.make<string>({
    name: "ask_date",
    instructions: "Ask for the date.",
    tools: [
      Tool.make("record_date", {
        description: "Record the date",
        parameters: Schema.Struct({ date: Schema.String }),
        handler: ({ date }) => AgentTask.complete(askDate, date)
      })
    ],
    onEnter: Agent.reply({ instructions: "ask for the date" }).pipe(Effect.asVoid)
  })
  const booker: Agent.Agent = Agent.make({
    name: "booker",
    instructions: "You book tables.",
    tools: [
      Tool.make("collect_name", { description: "collect the name", handler: () => AgentTask.run(askName).pipe(Effect.map((n) => `name=${n}`)) }),
      Tool.make("collect_date", { description: "collect the date", handler: () => AgentTask.run(askDate).pipe(Effect.map((d) => `date=${d}`)) })
    ]
  })
  const rules: ReadonlyArray<ScriptedModel.Rule> = [
    { when: { user: "book a table" }, reply: { toolCalls: [{ name: "collect_name" }, { name: "collect_date" }] } },
    { when: { instructions: "ask for the name" }, reply: { text: "What is your name?" } },
    { when: { instructions: "ask for the date" }, reply: { text: "Which date?" } },
    { when: { user: "ada", agent: "ask_name" }, reply: { toolCalls: [{ name: "record_name", arguments: { name: "Ada" } }] } },
    { when: { user: "friday", agent: "ask_date" }, reply: { toolCalls: [{ name: "record_date", arguments: { date: "Friday" } }] } },
    { when: { toolOutput: "date=Friday", agent: "booker" }, reply: { text: "Booked for Ada on Friday." } }
  ]

  it.effect("rule 6: an AgentTask's completion resumes its caller with the result", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: booker })
      const first = yield* session.run("book a table please")
      // Two parallel tools each start a task: they run one after the other, no deadlock.
      first.expect.containsAgentHandoff({ from: "booker", to: "ask_name", kind: "task" })
      first.expect.containsMessage({ agent: "ask_name", content: "What is your name?" })
      first.expect.lacks("a handoff to ask_date yet", (e) => e.type === "agent_handoff" && e.to === "ask_date")
      const second = yield* session.run("Ada")
      second.expect.containsAgentHandoff({ from: "ask_name", to: "booker", kind: "return" })
      second.expect.containsAgentHandoff({ from: "booker", to: "ask_date", kind: "task" })
      second.expect.containsMessage({ agent: "ask_date", content: "Which date?" })
      const third = yield* session.run("Friday")
      third.expect.containsAgentHandoff({ from: "ask_date", to: "booker", kind: "return" })
      third.expect.containsFunctionCallOutput({ name: "collect_name", output: "name=Ada" })
      third.expect.containsFunctionCallOutput({ name: "collect_date", output: "date=Friday" })
      third.expect.containsMessage({ role: "assistant", agent: "booker", content: "Booked for Ada on Friday." })
      const history = yield* session.history
      assertEveryCallAnswered(history)
      // The tasks' messages were merged into the caller (function calls were not asked for).
      const booker_ = history.items.filter((i) => i._tag === "Message" && i.text === "Which date?")
      assert.strictEqual(booker_.length, 1)
      assertOneFloor(yield* session.eventLog)
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("rule 6: the caller's context gets the task's messages, not its function calls", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: booker })
      yield* session.run("book a table please")
      yield* session.run("Ada")
      yield* session.run("Friday")
      const last = JSON.stringify(model.requestsFor("booker").at(-1)!.prompt.content)
      assert.include(last, "What is your name?")
      assert.include(last, "Which date?")
      assert.notInclude(last, "record_name")
      assert.notInclude(last, "Ask for the caller's name.")
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("rule 6: a task that fails resumes its caller with a TaskError", () => {
    const refuse: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "verify",
      instructions: "Verify the caller.",
      tools: [Tool.make("give_up", { description: "give up", handler: () => AgentTask.fail(refuse, "caller refused") })],
      onEnter: Agent.reply({ instructions: "ask to verify" }).pipe(Effect.asVoid)
    })
    const main: Agent.Agent = Agent.make({
      name: "main",
      instructions: "Main.",
      tools: [
        Tool.make("verify_caller", {
          description: "verify",
          handler: () => AgentTask.run(refuse).pipe(Effect.catchTag("TaskError", (e) => Effect.succeed(`not verified: ${e.message}`)))
        })
      ]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: main })
      yield* session.run("verify me")
      const result = yield* drive(session.run("no thanks"))
      result.expect.containsFunctionCallOutput({ name: "verify_caller", output: "not verified: caller refused" })
      result.expect.containsMessage({ agent: "main", content: "Sorry" })
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "verify me" }, reply: { toolCalls: [{ name: "verify_caller" }] } },
      { when: { instructions: "ask to verify" }, reply: { text: "Please verify." } },
      { when: { user: "no thanks", agent: "verify" }, reply: { toolCalls: [{ name: "give_up" }] } },
      { when: { toolOutput: "not verified", agent: "main" }, reply: { text: "Sorry, I could not verify you." } }
    ])))
  })

  // Found by the simulation (seed 3824686: a task group completing from its onEnter while an
  // app's `say` played on it). Completing from a hook is completing from outside a tool call.
  it.effect("rule 2: a task completed by its own hook while it speaks ends its words before the floor returns", () => {
    const chatty: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "chatty",
      instructions: "Chat.",
      onEnter: Effect.gen(function*() {
        yield* Agent.reply({ instructions: "ramble" })
        yield* Effect.sleep("100 millis")
        yield* AgentTask.complete(chatty, "enough")
      })
    })
    const main: Agent.Agent = Agent.make({
      name: "main",
      instructions: "Main.",
      tools: [Tool.make("chat", { description: "chat", handler: () => AgentTask.run(chatty) })]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: main })
      const result = yield* drive(session.run("let's chat"))
      result.expect.containsAgentHandoff({ from: "chatty", to: "main", kind: "return" })
      result.expect.containsFunctionCallOutput({ name: "chat", output: "enough" })
      const events = yield* session.eventLog
      // What chatty said up to the return is recorded, cut, before the floor went back.
      const returned = events.find((e) => e.type === "agent_handoff" && e.from === "chatty" && e.to === "main")!.seq
      const cut = events.find((e) => e.type === "conversation_item_added" && e.agent === "chatty" && e.item._tag === "Message")
      assert.isTrue(cut?.type === "conversation_item_added" && cut.item._tag === "Message" && cut.item.interrupted && cut.item.text.length > 0)
      assert.isBelow(cut!.seq, returned)
      assert.deepStrictEqual(eventsOfAgentAfter(events, "chatty", returned), [])
      assertOneFloor(events)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "let's chat", agent: "main" }, reply: { toolCalls: [{ name: "chat" }] } },
      { when: { instructions: "ramble", agent: "chatty" }, reply: { text: ["one ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight"], chunkDelay: "40 millis" } },
      { when: { toolOutput: "enough", agent: "main" }, reply: { text: "Back to me." } }
    ])))
  })
})
