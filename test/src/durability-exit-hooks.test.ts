/**
 * Issue 34: how often an onExit runs when the process dies around it. Its start is appended to
 * the journal before it runs (the hook waits for that append), so a crash while it runs, or after,
 * never runs it again: exactly once. When that append does not land (the store refused it), the
 * hook runs all the same, and a crash before the next append runs it again after the resume: at
 * least once (docs/durability.md, "Hooks across a crash").
 *
 * The set-up: a's onEnter is held at a gate, so the onExit of its pass to b waits behind it in a's
 * hook lane; the floor comes back to a (its onResume queued behind that onExit) before the gate
 * opens. The journal then lists a as the holder, owing that onExit.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Scope } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { makeMemory, type SessionStoreService, StoreError } from "../../services/SessionStore.ts"
import { Agent, AgentSession } from "../../src/index.ts"
import * as Durable from "../../src/internal/Durable.ts"
import * as Journal from "../../src/internal/Journal.ts"

const setUp = Effect.gen(function*() {
  const gate = yield* Deferred.make<void>()
  const count = { exitA: 0, resumeA: 0 }
  // The first onExit never ends: the process dies while it runs (one run again after the resume ends).
  const never = yield* Deferred.make<void>()
  const a: Agent.Agent = Agent.make({
    name: "a",
    instructions: "You are A.",
    onEnter: Deferred.await(gate),
    onExit: Effect.suspend(() => ++count.exitA === 1 ? Deferred.await(never) : Effect.void),
    onResume: Effect.sync(() => void count.resumeA++)
  })
  const b: Agent.Agent = Agent.make({ name: "b", instructions: "You are B." })
  let refusing = false
  const inner = makeMemory()
  const store: SessionStoreService = {
    ...inner,
    append: (claim, entries) =>
      refusing ? Effect.fail(new StoreError({ operation: "append", message: "scripted refusal" })) : inner.append(claim, entries)
  }
  const first = yield* Scope.make()
  const session = yield* AgentSession.start({ agent: a, store, id: "call-x" }).pipe(Scope.provide(first))
  yield* session.handoff(b)
  yield* session.handoff(a)
  yield* session.persist
  const owed = yield* Effect.orDie(store.load("call-x"))
  const floor = owed._tag === "Some" ? Journal.fold(owed.value.entries).floor : undefined
  return { a, b, gate, count, store, floor, refuse: () => void (refusing = true), accept: () => void (refusing = false) }
})

/** Lets the hooks woken by the gate run as far as they go. */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 50; i++) yield* Effect.yieldNow
})

describe("durability: hooks across a crash", () => {
  it.effect("an onExit whose start is in the store does not run again after a crash while it runs; the onResume queued behind it runs once, after the resume", () =>
    Effect.gen(function*() {
      const { a, b, gate, count, store, floor } = yield* setUp
      // The journal says a holds the floor and owes the onExit of its pass to b.
      assert.deepStrictEqual(floor?.exiting, [floor!.holder!])
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.strictEqual(count.exitA, 1)
      Durable.crash("call-x")
      const two = yield* AgentSession.resume({ id: "call-x", store, agents: [a, b] }).pipe(Scope.provide(yield* Scope.make()))
      yield* settle
      assert.strictEqual((yield* two.currentAgent)?.name, "a")
      assert.deepStrictEqual(count, { exitA: 1, resumeA: 1 })
    }).pipe(Effect.provide(ScriptedModel.layer([]))))

  it.effect("an onExit whose start the store refused runs all the same, and again after a crash before the next append: at least once", () =>
    Effect.gen(function*() {
      const { a, b, gate, count, store, floor, refuse, accept } = yield* setUp
      assert.deepStrictEqual(floor?.exiting, [floor!.holder!])
      refuse()
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.strictEqual(count.exitA, 1)
      Durable.crash("call-x")
      accept()
      const two = yield* AgentSession.resume({ id: "call-x", store, agents: [a, b] }).pipe(Scope.provide(yield* Scope.make()))
      yield* settle
      assert.strictEqual((yield* two.currentAgent)?.name, "a")
      assert.deepStrictEqual(count, { exitA: 2, resumeA: 1 })
    }).pipe(Effect.provide(ScriptedModel.layer([]))))
})
