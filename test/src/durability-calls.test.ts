/**
 * Issue 34: what cannot survive a process is answered after a resume, not lost: a tool call that
 * was running gets an output saying a restart interrupted it (rule 4), and a task lent the floor
 * by a tool call returns its result to that call as its output.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema, Scope } from "effect"
import { drive, until } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { makeMemory } from "../../services/SessionStore.ts"
import type { FunctionCallOutput } from "../../src/ChatContext.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../src/index.ts"
import * as Durable from "../../src/internal/Durable.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

const outputs = (items: ReadonlyArray<{ readonly _tag: string }>) =>
  items.filter((item): item is FunctionCallOutput => item._tag === "FunctionCallOutput")

describe("durability: calls across a restart", () => {
  it.effect("a tool call running at the crash is answered \"interrupted by a restart\" and the agent goes on", () => {
    let started = 0
    const agent: Agent.Agent = Agent.make({
      name: "clerk",
      instructions: "You file things.",
      tools: [Tool.make("file_claim", { description: "file it", handler: () => Effect.sync(() => void started++).pipe(Effect.andThen(Effect.sleep("1 hour")), Effect.as("filed")) })]
    })
    return Effect.gen(function*() {
      const store = makeMemory()
      const first = yield* Scope.make()
      const one = yield* AgentSession.start({ agent, store, id: "call-t" }).pipe(Scope.provide(first))
      const running = yield* one.run("file my claim").pipe(Effect.forkChild)
      yield* until(() => started === 1)
      // The call is in the journal (its item committed); the process dies before its output.
      yield* until(() => Durable.journaled("call-t"))
      yield* Effect.yieldNow
      Durable.crash("call-t")
      const second = yield* Scope.make()
      const two = yield* AgentSession.resume({ id: "call-t", store, agents: [agent] }).pipe(Scope.provide(second))
      yield* drive(two.idle)
      const history = yield* two.history
      const answered = outputs(history.items)
      assert.strictEqual(answered.length, 1)
      assert.strictEqual(answered[0]!.name, "file_claim")
      assert.strictEqual(answered[0]!.status, "interrupted")
      assert.include(answered[0]!.output, "interrupted by a restart")
      assertEveryCallAnswered(history)
      // The agent answers its call's output: the user hears what happened.
      const last = history.items.at(-1)
      assert.deepStrictEqual(last?._tag === "Message" ? [last.role, last.text] : [], ["assistant", "Sorry, filing was cut off by a restart."])
      // The old process's call never runs again, and nothing runs it twice.
      assert.strictEqual(started, 1)
      yield* Fiber.interrupt(running)
      yield* Scope.close(second, undefined as never)
      yield* Scope.close(first, undefined as never)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "file my claim" }, reply: { toolCalls: [{ name: "file_claim" }] } },
      { when: { toolOutput: /interrupted by a restart/ }, reply: { text: "Sorry, filing was cut off by a restart." } }
    ])))
  })

  it.effect("a task's result reaches its caller across a restart as the call's output", () => {
    const askName: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "ask_name",
      instructions: "Ask the caller's name.",
      tools: [
        Tool.make("record_name", {
          description: "Record the name",
          parameters: Schema.Struct({ name: Schema.String }),
          handler: ({ name }) => AgentTask.complete(askName, name)
        })
      ],
      onEnter: Agent.reply({ instructions: "ask for the name" }).pipe(Effect.asVoid)
    })
    let after = 0
    const host: Agent.Agent = Agent.make({
      name: "host",
      instructions: "You book tables.",
      tools: [
        Tool.make("get_name", {
          description: "Find out the caller's name",
          handler: () => AgentTask.run(askName).pipe(Effect.map((name) => `name: ${name}`), Effect.tap(() => Effect.sync(() => void after++)))
        })
      ]
    })
    return Effect.gen(function*() {
      const store = makeMemory()
      const first = yield* Scope.make()
      const one = yield* AgentSession.start({ agent: host, store, id: "call-k" }).pipe(Scope.provide(first))
      yield* one.run("book a table")
      assert.strictEqual((yield* one.currentAgent)?.name, "ask_name")
      Durable.crash("call-k")
      const second = yield* Scope.make()
      const two = yield* AgentSession.resume({ id: "call-k", store, agents: [host, askName] }).pipe(Scope.provide(second))
      assert.strictEqual((yield* two.currentAgent)?.name, "ask_name")
      yield* two.run("I'm Bob")
      assert.strictEqual((yield* two.currentAgent)?.name, "host")
      const history = yield* two.history
      const answer = outputs(history.items).find((o) => o.name === "get_name")
      // The tool's own code after the task is gone with the old process: the call's output is
      // the task's result itself.
      assert.strictEqual(answer?.output, "Bob")
      assert.strictEqual(answer?.status, "ok")
      assert.strictEqual(after, 0)
      assertEveryCallAnswered(history)
      const last = history.items.at(-1)
      assert.deepStrictEqual(last?._tag === "Message" ? [last.agent, last.text] : [], ["host", "Thanks Bob, booking now."])
      yield* Scope.close(second, undefined as never)
      yield* Scope.close(first, undefined as never)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "book a table" }, reply: { toolCalls: [{ name: "get_name" }] } },
      { when: { instructions: "ask for the name" }, reply: { text: "What's your name?" } },
      { when: { user: "I'm Bob" }, reply: { toolCalls: [{ name: "record_name", arguments: { name: "Bob" } }] } },
      { when: { toolOutput: "Bob", name: "get_name" }, reply: { text: "Thanks Bob, booking now." } }
    ])))
  })
})
