/**
 * Rule 10 and seed 004: `session.run()` resolves only when the session is quiescent, with the
 * whole cascade in its result and start-up left out of the first result.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { drive, until } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, TaskGroup, Tool } from "../../src/index.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"

const step = (name: string, tool: string, prompt: string): AgentTask.AgentTask<string> => {
  const task: AgentTask.AgentTask<string> = AgentTask.make<string>({
    name,
    instructions: `Step ${name}.`,
    tools: [
      Tool.make(tool, {
        description: `finish ${name}`,
        parameters: Schema.Struct({ value: Schema.String }),
        handler: ({ value }) => Effect.sleep("300 millis").pipe(Effect.andThen(AgentTask.complete(task, value)))
      })
    ],
    onEnter: Agent.reply({ instructions: prompt }).pipe(Effect.asVoid)
  })
  return task
}

const first = step("first_step", "finish_first", "ask the first question")
const second = step("second_step", "finish_second", "ask the second question")
const group = TaskGroup.make({
  name: "steps",
  tasks: [
    { id: "first", description: "the first answer", task: first },
    { id: "second", description: "the second answer", task: second }
  ]
})
const host: Agent.Agent = Agent.make({
  name: "host",
  instructions: "You host.",
  onEnter: Effect.gen(function*() {
    yield* Effect.sleep("1 second")
    const results = yield* AgentTask.run(group)
    yield* Agent.reply({ instructions: `sum up ${results["first"]} and ${results["second"]}` })
  })
})

// Every model answer takes time, so a run that does not wait would see nothing.
const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { instructions: "ask the first question" }, reply: { text: "First question?", delay: "500 millis" } },
  { when: { instructions: "ask the second question" }, reply: { text: "Second question?", delay: "500 millis" } },
  { when: { user: "alpha", agent: "first_step" }, reply: { toolCalls: [{ name: "finish_first", arguments: { value: "alpha" } }], delay: "200 millis" } },
  { when: { user: "beta", agent: "second_step" }, reply: { toolCalls: [{ name: "finish_second", arguments: { value: "beta" } }], delay: "200 millis" } },
  { when: { user: "back", agent: "second_step" }, reply: { toolCalls: [{ name: "return_to_earlier_step", arguments: { step: "first" } }] } },
  { when: { instructions: "sum up" }, reply: { text: "Done with both.", delay: "700 millis" } }
]

describe("rule 10: quiescent runs (seed 004)", () => {
  it.effect("seed 004: run() waits for the start-up chain (agent -> TaskGroup -> first task)", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: host })
      const result = yield* drive(session.run("alpha"))
      // The input went to the first task, after its greeting: the chain had settled.
      result.expect.nextEvent().isMessage({ role: "user", content: "alpha", agent: "first_step" })
      assert.strictEqual(model.requests[0]!.agent, "first_step")
      // Start-up events (the handoffs to the group and the task, the greeting) are not in it.
      result.expect.lacks("the start-up greeting", (e) => e.type === "message" && e.content === "First question?")
      result.expect.lacks("a start-up handoff", (e) => e.type === "agent_handoff" && e.to === "first_step")
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("seed 004: a cascade (tool -> task completes -> TaskGroup resumes -> next task) lands in one result", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: host })
      const result = yield* drive(session.run("alpha"))
      result.expect.skipNext(1)
      result.expect.nextEvent().isFunctionCall({ name: "finish_first", arguments: { value: "alpha" } })
      result.expect.nextEvent().isFunctionCallOutput({ name: "finish_first" })
      result.expect.nextEvent().isAgentHandoff({ from: "first_step", to: "steps", kind: "return" })
      result.expect.nextEvent().isAgentHandoff({ from: "steps", to: "second_step", kind: "task" })
      result.expect.nextEvent().isMessage({ role: "assistant", content: "Second question?" })
      result.expect.noMoreEvents()

      const last = yield* drive(session.run("beta"))
      last.expect.containsAgentHandoff({ from: "second_step", to: "steps" })
      last.expect.containsAgentHandoff({ from: "steps", to: "host", kind: "return" })
      last.expect.containsMessage({ agent: "host", content: "Done with both." })
      assert.strictEqual(last.finalOutput, "Done with both.")
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("rule 10: going back to an earlier task of a TaskGroup re-runs it", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: host })
      yield* drive(session.run("alpha"))
      const back = yield* drive(session.run("go back please"))
      back.expect.containsFunctionCall({ name: "return_to_earlier_step", arguments: { step: "first" } })
      back.expect.containsAgentHandoff({ from: "steps", to: "first_step", kind: "task" })
      back.expect.containsMessage({ agent: "first_step", content: "First question?" })
      assert.strictEqual((yield* session.currentAgent)?.name, "first_step")
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("rule 10: input sent during start-up reaches the agent that ends up holding the floor", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: host })
      yield* session.send("alpha")
      yield* drive(session.idle)
      const history = yield* session.history
      const alpha = history.items.find((i) => i._tag === "Message" && i.text === "alpha")
      assert.strictEqual(alpha?._tag === "Message" ? alpha.agent : undefined, "first_step")
      assert.strictEqual((yield* session.currentAgent)?.name, "second_step")
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("rule 10: run() does not resolve while a reply is still being generated", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: host })
      yield* drive(session.idle)
      const fiber = yield* session.run("alpha").pipe(Effect.forkChild)
      // Nothing resolves until the clock moves past the model's and the tool's delays.
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow
      assert.isUndefined(fiber.pollUnsafe())
      const result = yield* drive(Fiber.join(fiber))
      result.expect.containsMessage({ content: "Second question?" })
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))
})

describe("rule 10: a lone tool call's work token", () => {
  // A batch of one call runs on the speech's fiber and lends the call the speech's token; when
  // the call is cut, the token must come back exactly once, or the session never goes idle (or a
  // token is released twice).
  it.effect("rule 10: a lone call cut by the session closing gives its token back once: the session goes idle", () => {
    let started = false
    const a = Agent.make({
      name: "a",
      instructions: "You are A.",
      tools: [
        Tool.make("long_job", {
          description: "runs for an hour",
          handler: () => Effect.sync(() => void (started = true)).pipe(Effect.andThen(Effect.sleep("1 hour")), Effect.as("done"))
        })
      ]
    })
    return Effect.gen(function*() {
      const before = Diagnostics.snapshot().tokenErrors
      const session = yield* AgentSession.start({ agent: a })
      yield* session.send("start the long job")
      yield* until(() => started)
      yield* session.close
      yield* drive(session.idle, { limit: "1 second" })
      const output = (yield* session.history).items.find((i) => i._tag === "FunctionCallOutput" && i.name === "long_job")
      assert.isTrue(output?._tag === "FunctionCallOutput" && output.status === "cancelled")
      assert.strictEqual(Diagnostics.snapshot().tokenErrors, before)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "long job", agent: "a" }, reply: { toolCalls: [{ name: "long_job" }] } }
    ])))
  })
})
