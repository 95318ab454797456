/**
 * Issue 34: a durable session resumed from its journal in a new "process" (a new Scope, the old
 * one abandoned as a crashed process would be) goes on where it was.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Scope } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { makeMemory } from "../../services/SessionStore.ts"
import type { ChatItem } from "../../src/ChatContext.ts"
import { Agent, AgentSession, Tool } from "../../src/index.ts"
import * as Durable from "../../src/internal/Durable.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

const ids = (items: ReadonlyArray<ChatItem>) => items.map((item) => item.id)

const texts = (items: ReadonlyArray<ChatItem>) =>
  items.flatMap((item) => (item._tag === "Message" ? [`${item.role}:${item.text}`] : []))

const hooks = () => {
  const count = { enterA: 0, enterB: 0, resumeA: 0, resumeB: 0 }
  const b: Agent.Agent = Agent.make({
    name: "b",
    instructions: "You are B.",
    tools: [Tool.handoff("back", () => a)],
    onEnter: Effect.sync(() => void count.enterB++).pipe(Effect.andThen(Agent.reply({ instructions: "B enters" })), Effect.asVoid),
    onResume: Effect.sync(() => void count.resumeB++)
  })
  const a: Agent.Agent = Agent.make({
    name: "a",
    instructions: "You are A.",
    tools: [Tool.handoff("transfer", () => b)],
    onEnter: Effect.sync(() => void count.enterA++),
    onResume: Effect.sync(() => void count.resumeA++).pipe(Effect.andThen(Agent.reply({ instructions: "A is back" })), Effect.asVoid)
  })
  return { a, b, count }
}

const script: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "hello", agent: "a" }, reply: { text: "A here." } },
  { when: { user: "move me" }, reply: { toolCalls: [{ name: "transfer" }] } },
  { when: { instructions: "B enters" }, reply: { text: "B here." } },
  { when: { user: "what did I say first", agent: "b" }, reply: { text: "You said hello." } },
  { when: { user: "back to a" }, reply: { toolCalls: [{ name: "back" }] } },
  { when: { instructions: "A is back" }, reply: { text: "A again." } }
]

describe("durability: resume", () => {
  it.effect("resume keeps the floor holder and its conversation; a paused agent keeps its own and gets onResume, not onEnter; a closed session cannot be resumed", () => {
    const { a, b, count } = hooks()
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const store = makeMemory()
      const first = yield* Scope.make()
      const one = yield* AgentSession.start({ agent: a, store, id: "call-1" }).pipe(Scope.provide(first))
      yield* one.run("hello")
      yield* one.run("move me")
      assert.strictEqual((yield* one.currentAgent)?.name, "b")
      const before = (yield* one.history).items
      // The process dies: its journal writes nothing more; a new one resumes the session.
      Durable.crash("call-1")
      const second = yield* Scope.make()
      const two = yield* AgentSession.resume({ id: "call-1", store, agents: [a, b] }).pipe(Scope.provide(second))
      assert.strictEqual(two.id, "call-1")
      assert.strictEqual((yield* two.currentAgent)?.name, "b")
      assert.deepStrictEqual(ids((yield* two.history).items), ids(before))
      yield* two.run("what did I say first")
      // B's model saw its whole conversation from before the restart.
      const request = model.requestsFor("b").at(-1)!
      const prompt = JSON.stringify(request.prompt.content)
      assert.include(prompt, "hello")
      assert.include(prompt, "B here.")
      // Nothing entered twice; hooks ran once in both lives together.
      assert.deepStrictEqual(count, { enterA: 1, enterB: 1, resumeA: 0, resumeB: 0 })
      // A is paused with its context: the handoff back resumes it (onResume, not onEnter).
      yield* two.run("back to a")
      assert.strictEqual((yield* two.currentAgent)?.name, "a")
      assert.deepStrictEqual(count, { enterA: 1, enterB: 1, resumeA: 1, resumeB: 0 })
      const history = yield* two.history
      assert.deepStrictEqual(texts(history.items), [
        "user:hello",
        "assistant:A here.",
        "user:move me",
        "assistant:B here.",
        "user:what did I say first",
        "assistant:You said hello.",
        "user:back to a",
        "assistant:A again."
      ])
      assertEveryCallAnswered(history)
      const stored = yield* store.load("call-1")
      assert.isTrue(stored._tag === "Some" && stored.value.meta.epoch === 2)
      yield* Scope.close(second, undefined as never)
      // The session the program closed is ended: it cannot be resumed again.
      const again = yield* AgentSession.resume({ id: "call-1", store, agents: [a, b] }).pipe(Effect.scoped, Effect.flip)
      assert.strictEqual(again._tag, "SessionNotResumable")
      yield* Scope.close(first, undefined as never)
    }).pipe(Effect.provide(ScriptedModel.layer(script)))
  })

  it.effect("a missing agent is a typed error naming it", () => {
    const { a, b } = hooks()
    return Effect.gen(function*() {
      const store = makeMemory()
      const one = yield* AgentSession.start({ agent: a, store, id: "call-2" })
      yield* one.run("move me")
      Durable.crash("call-2")
      const error = yield* AgentSession.resume({ id: "call-2", store, agents: [a] }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "AgentNotFound")
      assert.strictEqual(error._tag === "AgentNotFound" ? error.agent : "", "b")
      void b
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(script)))
  })
})
