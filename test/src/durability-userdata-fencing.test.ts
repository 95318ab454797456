/**
 * Issue 34: a durable session's userdata goes through its Schema (round trip across a restart;
 * refused at start without one or when it does not encode), a writer another process took the
 * session from stops, and a session without a store keeps no journal.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, Scope } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { makeMemory } from "../../services/SessionStore.ts"
import { Agent, AgentSession } from "../../src/index.ts"
import * as Durable from "../../src/internal/Durable.ts"

const Caller = Schema.Struct({ name: Schema.String, visits: Schema.Number, since: Schema.Date })
type Caller = typeof Caller.Type

const agent: Agent.Agent = Agent.make({ name: "desk", instructions: "You answer." })

const script = ScriptedModel.layer([{ when: { agent: "desk" }, reply: { text: "Noted." } }])

describe("durability: userdata and fencing", () => {
  it.effect("userdata round trip with its Schema, changes included", () =>
    Effect.gen(function*() {
      const store = makeMemory()
      const first = yield* Scope.make()
      const userdata: { name: string; visits: number; since: Date } = { name: "Ada", visits: 1, since: new Date(86_400_000) }
      const one = yield* AgentSession.start({ agent, store, id: "u-1", userdata, userdataSchema: Caller }).pipe(Scope.provide(first))
      yield* one.run("hello")
      // The program changes its userdata; the next step journals it.
      userdata.visits = 2
      yield* one.run("again")
      Durable.crash("u-1")
      const two = yield* AgentSession.resume<Caller>({ id: "u-1", store, agents: [agent], userdataSchema: Caller }).pipe(
        Scope.provide(yield* Scope.make())
      )
      assert.deepStrictEqual(two.userdata, { name: "Ada", visits: 2, since: new Date(86_400_000) })
      assert.instanceOf(two.userdata.since, Date)
      // Without the Schema, the journal's userdata cannot be read back: refused, typed.
      const refused = yield* AgentSession.resume({ id: "u-1", store, agents: [agent] }).pipe(Effect.scoped, Effect.flip)
      assert.strictEqual(refused._tag, "UserdataRefused")
      yield* Scope.close(first, undefined as never)
    }).pipe(Effect.provide(script)))

  it.effect("userdata without a Schema, or not encodable with it, is refused at start with a typed error", () =>
    Effect.gen(function*() {
      const store = makeMemory()
      const none = yield* AgentSession.start({ agent, store, id: "u-2", userdata: { name: "Ada" } }).pipe(Effect.flip)
      assert.strictEqual(none._tag, "UserdataRefused")
      assert.strictEqual(none._tag === "UserdataRefused" ? none.reason : "", "no_schema")
      const bad = yield* AgentSession.start({
        agent,
        store,
        id: "u-3",
        userdata: { name: "Ada", visits: "many", since: new Date(0) } as unknown as Caller,
        userdataSchema: Caller
      }).pipe(Effect.flip)
      assert.strictEqual(bad._tag === "UserdataRefused" ? bad.reason : "", "not_encodable")
      // Nothing was created in the store for either.
      assert.strictEqual((yield* store.list()).length, 0)
    }).pipe(Effect.scoped, Effect.provide(script)))

  it.effect("a fenced writer stops: the old process's session closes and writes nothing more", () =>
    Effect.gen(function*() {
      const store = makeMemory()
      const first = yield* Scope.make()
      const one = yield* AgentSession.start({ agent, store, id: "f-1" }).pipe(Scope.provide(first))
      yield* one.run("hello")
      // Another process resumes the session while this one still runs (no crash here).
      const two = yield* AgentSession.resume({ id: "f-1", store, agents: [agent] }).pipe(Scope.provide(yield* Scope.make()))
      yield* one.send("are you there?")
      yield* one.awaitClosed
      const log = yield* one.eventLog
      assert.isTrue(log.some((e) => e.type === "error" && e.message.includes("claimed by another writer")))
      // The old writer's appends were refused (what the user said to it is not in the store),
      // and it did not end the session: it is still live for the new writer.
      const after = yield* store.load("f-1")
      assert.isTrue(after._tag === "Some" && after.value.entries.length > 0)
      assert.notInclude(JSON.stringify(after._tag === "Some" ? after.value.entries : []), "are you there?")
      assert.strictEqual(after._tag === "Some" ? after.value.meta.status : "", "live")
      assert.isTrue((yield* one.history).items.some((item) => item._tag === "Message" && item.text === "are you there?"))
      assert.isFalse(yield* two.closed)
      yield* Scope.close(first, undefined as never)
    }).pipe(Effect.provide(script)))

  it.effect("no store = no journal: no flush, no wrapper on the session's events", () =>
    Effect.gen(function*() {
      const plain = yield* AgentSession.start({ agent })
      yield* plain.run("hello")
      assert.isFalse(Durable.journaled(plain.id))
      const durable = yield* AgentSession.start({ agent, store: makeMemory() })
      assert.isTrue(Durable.journaled(durable.id))
    }).pipe(Effect.scoped, Effect.provide(script)))
})
