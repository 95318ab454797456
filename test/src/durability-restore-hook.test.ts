/**
 * Issue 34 with issue 35: a task restored holding the floor after its process died while its
 * `onEnter` ran (a transfer dialing and waiting for its outcome) runs no hook again, so nothing
 * would complete it. Its `onRestore` runs then, once: its start is in the store before it runs, so
 * a second resume does not run it again, and what it completes the task with reaches the caller's
 * tool call as its output.
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Deferred, Effect, Scope } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { makeMemory, type SessionStoreService } from "../../services/SessionStore.ts"
import * as SessionStoreSqlite from "../../services/SessionStoreSqlite.ts"
import type { FunctionCallOutput } from "../../src/ChatContext.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../src/index.ts"
import * as Durable from "../../src/internal/Durable.ts"
import * as Journal from "../../src/internal/Journal.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

const outputs = (items: ReadonlyArray<{ readonly _tag: string }>) =>
  items.filter((item): item is FunctionCallOutput => item._tag === "FunctionCallOutput")

/** Lets the hooks the resume started run as far as they go. */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 50; i++) yield* Effect.yieldNow
})

/** Yields until `check` holds (a bounded number of times: the test fails rather than hangs). */
const eventually = (what: string, check: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 2000; i++) {
      if (yield* check) return
      yield* Effect.yieldNow
    }
    assert.fail(`never: ${what}`)
  })

const agents = Effect.gen(function*() {
  const count = { enter: 0, restore: 0 }
  // The onEnter never ends in the first process (it dies while the task waits for an outcome).
  const never = yield* Deferred.make<void>()
  /** Opened to let the onRestore complete the task (the second scenario holds it). */
  const release = yield* Deferred.make<void>()
  const lookup: AgentTask.AgentTask<string> = AgentTask.make<string>({
    name: "lookup",
    instructions: "Say nothing while the lookup runs.",
    onEnter: Effect.suspend(() => (count.enter++, Deferred.await(never))),
    onRestore: Effect.suspend(() => {
      count.restore++
      return Effect.andThen(Deferred.await(release), AgentTask.complete(lookup, "found it after the restart"))
    })
  })
  const host: Agent.Agent = Agent.make({
    name: "host",
    instructions: "You look things up.",
    tools: [Tool.make("look_up", { description: "Look it up", handler: () => AgentTask.run(lookup) })]
  })
  return { host, lookup, count, release }
})

const model = ScriptedModel.layer([
  { when: { user: "look it up" }, reply: { toolCalls: [{ name: "look_up" }] } },
  { when: { toolOutput: "found it after the restart", name: "look_up" }, reply: { text: "Here is what I found." } }
])

/** The first process: the host lends the floor to the task, whose onEnter is running when it dies. */
const firstLife = (store: SessionStoreService, id: string, host: Agent.Agent) =>
  Effect.gen(function*() {
    const one = yield* AgentSession.start({ agent: host, store, id }).pipe(Scope.provide(yield* Scope.make()))
    // The task's onEnter never ends: the turn is sent, not run to its end.
    yield* one.send("look it up")
    yield* eventually("the task holds the floor", Effect.map(one.currentAgent, (agent) => agent?.name === "lookup"))
    // Its onEnter starts (and the caller lends it the floor) in the actors' next steps.
    yield* settle
    yield* one.persist
    const stored = yield* Effect.orDie(store.load(id))
    const floor = stored._tag === "Some" ? Journal.fold(stored.value.entries).floor : undefined
    // The journal says the holder's onEnter started and had not ended.
    assert.deepStrictEqual(floor?.activating, [floor!.holder!])
    Durable.crash(id)
  })

const stores: ReadonlyArray<readonly [string, Effect.Effect<SessionStoreService, unknown, Scope.Scope>]> = [
  ["in memory", Effect.sync(() => makeMemory())],
  ["SQLite", Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "baton-restore-"))), (dir) =>
      Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
    return yield* SessionStoreSqlite.make(join(dir, "sessions.db"))
  })]
]

describe("durability: onRestore across a crash", () => {
  for (const [kind, makeStore] of stores) {
    it.effect(`${kind}: a task whose onEnter ran when the process died runs its onRestore once, and its result answers the caller's tool call`, () =>
      Effect.gen(function*() {
        const store = yield* makeStore
        const { count, host, lookup, release } = yield* agents
        yield* Deferred.succeed(release, undefined)
        yield* firstLife(store, "call-r", host)
        assert.deepStrictEqual(count, { enter: 1, restore: 0 })
        const two = yield* AgentSession.resume({ id: "call-r", store, agents: [host, lookup] }).pipe(Scope.provide(yield* Scope.make()))
        yield* eventually("the host replied", Effect.map(two.history, (history) => history.items.at(-1)?._tag === "Message"))
        assert.deepStrictEqual(count, { enter: 1, restore: 1 })
        assert.strictEqual((yield* two.currentAgent)?.name, "host")
        const history = yield* two.history
        const answer = outputs(history.items).find((o) => o.name === "look_up")
        assert.strictEqual(answer?.output, "found it after the restart")
        assert.strictEqual(answer?.status, "ok")
        assertEveryCallAnswered(history)
        const last = history.items.at(-1)
        assert.deepStrictEqual(last?._tag === "Message" ? [last.agent, last.text] : [], ["host", "Here is what I found."])
      }).pipe(Effect.scoped, Effect.provide(model)))

    it.effect(`${kind}: an onRestore whose start is in the store does not run again after a second crash`, () =>
      Effect.gen(function*() {
        const store = yield* makeStore
        const { count, host, lookup, release } = yield* agents
        yield* firstLife(store, "call-s", host)
        // The second process dies while the onRestore runs (it waits for `release`).
        yield* AgentSession.resume({ id: "call-s", store, agents: [host, lookup] }).pipe(Scope.provide(yield* Scope.make()))
        yield* settle
        assert.deepStrictEqual(count, { enter: 1, restore: 1 })
        Durable.crash("call-s")
        const three = yield* AgentSession.resume({ id: "call-s", store, agents: [host, lookup] }).pipe(Scope.provide(yield* Scope.make()))
        yield* settle
        yield* Deferred.succeed(release, undefined)
        yield* settle
        // Neither hook ran in the third process: the task still holds the floor.
        assert.deepStrictEqual(count, { enter: 1, restore: 1 })
        assert.strictEqual((yield* three.currentAgent)?.name, "lookup")
      }).pipe(Effect.scoped, Effect.provide(model)))
  }
})
