/**
 * Rules 1-4 of docs/rules.md: one floor, silence after handoff, deterministic batches, every call
 * answered.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Schema } from "effect"
import { drive, until } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, Handoff, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered, assertOneFloor, callNames, eventsOfAgentAfter, handoffSeq, outputNames } from "../helpers.ts"

const slow = (name: string, delay: Duration.Input, value: unknown = `${name} done`) =>
  Tool.make(name, {
    description: name,
    handler: () => Effect.sleep(delay).pipe(Effect.as(value))
  })

const calls = { started: 0 }

const pair = (extraTools: ReadonlyArray<Tool.Tool> = []) => {
  calls.started = 0
  const b: Agent.Agent = Agent.make({
    name: "b",
    instructions: "You are B.",
    onEnter: Agent.reply({ instructions: "B enters" }).pipe(Effect.asVoid)
  })
  const a: Agent.Agent = Agent.make({
    name: "a",
    instructions: "You are A.",
    tools: [
      ...extraTools,
      Tool.make("slow_transfer", {
        description: "transfer after a while",
        handler: () =>
          Effect.sync(() => void calls.started++).pipe(Effect.andThen(Effect.sleep("1 second")), Effect.as(Handoff.to(b)))
      }),
      Tool.handoff("transfer", () => b)
    ]
  })
  return { a, b }
}

describe("rule 1: one floor", () => {
  it.effect("rule 1: user input during a handoff reaches only the new holder", () => {
    const { a } = pair()
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: a })
      const run = yield* session.run("move me").pipe(Effect.forkChild)
      // Once the transfer tool runs, the user speaks.
      yield* until(() => calls.started > 0)
      yield* session.send("are you still there?")
      yield* drive(Fiber.join(run))
      yield* drive(session.idle)
      const history = yield* session.history
      const question = history.items.find((i) => i._tag === "Message" && i.text === "are you still there?")
      assert.strictEqual(question?._tag === "Message" ? question.agent : undefined, "b")
      assert.strictEqual(model.requestsFor("a").length, 1)
      assert.isTrue(model.requestsFor("b").some((r) => r.last.kind === "user" && r.last.text === "are you still there?"))
      assertOneFloor(yield* session.eventLog)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "move me" }, reply: { toolCalls: [{ name: "slow_transfer" }] } },
      { when: { instructions: "B enters" }, reply: { text: "B here." } },
      { when: { user: "still there", agent: "b" }, reply: { text: "Yes, B is here." } }
    ])))
  })

  it.effect("rule 1: a floor change is one atomic step in events and history", () => {
    const { a } = pair()
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* session.run("move me now")
      const events = yield* session.eventLog
      assertOneFloor(events)
      const history = yield* session.history
      const records = history.items.filter((i) => i._tag === "AgentHandoff")
      assert.deepStrictEqual(records.map((r) => r._tag === "AgentHandoff" ? [r.from, r.to, r.kind] : []), [
        [undefined, "a", "start"],
        ["a", "b", "handoff"]
      ])
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "move me now" }, reply: { toolCalls: [{ name: "transfer" }] } },
      { when: { instructions: "B enters" }, reply: { text: "B here." } }
    ])))
  })
})

describe("rule 2: silence after handoff", () => {
  it.effect("rule 2: a reply being generated stops when the floor moves away", () => {
    const { a, b } = pair()
    return Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: a })
      const run = yield* session.run("tell me a long story").pipe(Effect.forkChild)
      yield* until(() => text.textOf("a").length > 5)
      const outcome = yield* session.handoff(b, { reason: "supervisor took over" })
      assert.strictEqual(outcome._tag, "Applied")
      yield* drive(Fiber.join(run))
      yield* drive(session.idle)
      const events = yield* session.eventLog
      const delivered = text.textOf("a")
      assert.isTrue(delivered.length > 0 && delivered.length < "once upon a time there was a long story".length)
      const story = (yield* session.history).items.find((i) => i._tag === "Message" && i.agent === "a" && i.role === "assistant")
      assert.isTrue(story?._tag === "Message" && story.interrupted && story.text === delivered)
      assert.deepStrictEqual(eventsOfAgentAfter(events, "a", handoffSeq(events, "b")), [])
      assert.strictEqual(model.requestsFor("a").length, 1)
      assertOneFloor(events)
    }).pipe(Effect.provide([
      ScriptedModel.layer([
        { when: { user: "long story" }, reply: { text: ["once ", "upon ", "a ", "time ", "there ", "was ", "a ", "long ", "story"], chunkDelay: "100 millis" } },
        { when: { instructions: "B enters" }, reply: { text: "B here." } }
      ]),
      TextCapture.layer
    ]))
  })

  it.effect("rule 2: no follow-up on the outgoing agent even when a sibling failed", () => {
    const failing = Tool.make("charge_card", { description: "charge", handler: () => Effect.fail(new Tool.ToolError({ message: "card declined" })) })
    const { a } = pair([failing])
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: a })
      const result = yield* session.run("charge and transfer")
      result.expect.containsFunctionCallOutput({ name: "charge_card", isError: true, output: "card declined" })
      result.expect.containsAgentHandoff({ to: "b" })
      assert.strictEqual(model.requestsFor("a").length, 1)
      // The new agent sees the failure in its context and can act on it.
      assert.include(JSON.stringify(model.requestsFor("b")[0]!.prompt.content), "card declined")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "charge and transfer" }, reply: { toolCalls: [{ name: "charge_card" }, { name: "transfer" }] } },
      { when: { instructions: "B enters" }, reply: { text: "B here, I see the card was declined." } },
      { when: { agent: "a" }, reply: { text: "A should be silent" } }
    ])))
  })
})

describe("rule 3: deterministic batches", () => {
  it.effect("rule 3: outputs enter history in call order, not completion order", () => {
    const tools = [slow("first", "3 seconds"), slow("second", "2 seconds"), slow("third", "1 second")]
    const { a } = pair(tools)
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      const result = yield* drive(session.run("do three things"))
      const history = yield* session.history
      assert.deepStrictEqual(callNames(history), ["first", "second", "third"])
      assert.deepStrictEqual(outputNames(history), ["first", "second", "third"])
      const executed = result.sessionEvents.find((e) => e.type === "function_tools_executed")
      assert.deepStrictEqual(
        executed?.type === "function_tools_executed" ? executed.calls.map((c) => c.output.name) : [],
        ["first", "second", "third"]
      )
      result.expect.containsMessage({ role: "assistant", content: "All three done." })
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "three things" }, reply: { toolCalls: [{ name: "first" }, { name: "second" }, { name: "third" }] } },
      { when: { toolOutput: "third done" }, reply: { text: "All three done." } }
    ])))
  })

  it.effect("rule 3: with two handoffs the first in call order wins, even when it finishes last", () => {
    const c: Agent.Agent = Agent.make({ name: "c", instructions: "You are C." })
    const toC = Tool.handoff("transfer_to_c", () => c)
    const { a } = pair([toC])
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      const result = yield* drive(session.run("go somewhere"))
      result.expect.containsAgentHandoff({ from: "a", to: "b" })
      result.expect.containsFunctionCallOutput({ name: "transfer_to_c", isError: true, output: "only the first transfer" })
      result.expect.lacks("handoff to c", (e) => e.type === "agent_handoff" && e.to === "c")
      assert.strictEqual((yield* session.currentAgent)?.name, "b")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "go somewhere" }, reply: { toolCalls: [{ name: "slow_transfer" }, { name: "transfer_to_c" }] } },
      { when: { instructions: "B enters" }, reply: { text: "B here." } }
    ])))
  })
})

describe("rule 4: every call answered", () => {
  it.effect("rule 4: closing the session mid-call records a cancelled output", () => {
    const { a } = pair([slow("long_job", "1 hour")])
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* session.send("start the long job")
      yield* until(() => false, { limit: "1 second" }).pipe(Effect.ignore)
      yield* session.close
      const history = yield* session.history
      assertEveryCallAnswered(history)
      const output = history.items.find((i) => i._tag === "FunctionCallOutput")
      assert.isTrue(output?._tag === "FunctionCallOutput" && output.status === "cancelled")
      const events = yield* session.eventLog
      assert.strictEqual(events.at(-1)?.type, "close")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "long job" }, reply: { toolCalls: [{ name: "long_job" }] } }
    ])))
  })

  it.effect("rule 4: errors, unknown tools and handoffs all get exactly one output", () => {
    const broken = Tool.make("broken", { description: "dies", handler: () => Effect.die(new Error("boom")) })
    const typed = Tool.make("typed", {
      description: "typed args",
      parameters: Schema.Struct({ n: Schema.Int }),
      handler: ({ n }) => Effect.succeed(n * 2)
    })
    const { a } = pair([broken, typed])
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* session.run("everything at once")
      assertEveryCallAnswered(yield* session.history)
      const outputs = (yield* session.history).items.flatMap((i) => i._tag === "FunctionCallOutput" ? [[i.name, i.status]] : [])
      assert.deepStrictEqual(outputs, [["broken", "error"], ["typed", "error"], ["nope", "error"], ["typed", "ok"], ["transfer", "handoff"]])
    }).pipe(Effect.provide(ScriptedModel.layer([
      {
        when: { user: "everything" },
        reply: {
          toolCalls: [
            { name: "broken" },
            { name: "typed", arguments: { n: "two" } },
            { name: "nope" },
            { name: "typed", arguments: { n: 2 } },
            { name: "transfer" }
          ]
        }
      },
      { when: { instructions: "B enters" }, reply: { text: "B here." } }
    ])))
  })
})
