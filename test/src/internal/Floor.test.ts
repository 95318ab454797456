/**
 * The floor's handler alone (src/internal/Floor.ts), fed messages with recording fake actors and a fake
 * session core: what it sends each actor and what it emits, without the runtime around it.
 * Rule 1 (one floor, one atomic step) and the handoff protocol's refusals, message by message.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Option } from "effect"
import type { Actor } from "../../../src/internal/actor/Actor.ts"
import { ChatContext } from "../../../src/ChatContext.ts"
import { Agent, AgentTask } from "../../../src/index.ts"
import * as Floor from "../../../src/internal/Floor.ts"
import type { HandoffOutcome, SessionCore } from "../../../src/internal/SessionCore.ts"

interface Fake {
  readonly actor: Actor
  readonly sent: Array<{ readonly _tag: string; readonly [key: string]: unknown }>
}

const fakeActor = (agent: Agent.Agent, status: "active" | "paused" = "active"): Fake => {
  const sent: Fake["sent"] = []
  const actor = {
    name: agent.name,
    agent,
    lifecycle: { _tag: status === "active" ? "Active" : "Paused" },
    task: undefined,
    chat: ChatContext.empty,
    realtime: undefined,
    send: (msg: Fake["sent"][number]) => void sent.push(msg),
    start: Effect.void
  } as unknown as Actor
  return { actor, sent }
}

const fakeCore = () => {
  const events: Array<{ readonly type: string; readonly [key: string]: unknown }> = []
  const records: Array<unknown> = []
  const core = {
    emit: (event: (typeof events)[number]) => void events.push(event),
    record: (item: unknown) => void records.push(item),
    work: { acquire: () => {}, release: () => {} },
    sessionDeliveries: []
  } as unknown as SessionCore
  return { core, events, records }
}

const greeter = Agent.make({ name: "greeter", instructions: "Greet." })
const weather = Agent.make({ name: "weather", instructions: "Weather." })
const verify = AgentTask.make<string>({ name: "verify", instructions: "Verify." })

/** A floor held by the greeter, with the weather agent's actor paused (resumable). */
const setup = () => {
  const { core, events, records } = fakeCore()
  const state = Floor.makeState()
  const front = fakeActor(greeter)
  const back = fakeActor(weather, "paused")
  state.holder = front.actor
  state.actors.set(greeter, front.actor)
  state.actors.set(weather, back.actor)
  return { core, events, records, state, front, back }
}

const handoff = (from: Actor | undefined, target: Agent.Agent) =>
  Effect.gen(function*() {
    const reply = yield* Deferred.make<HandoffOutcome>()
    return { msg: { _tag: "Handoff" as const, from, target, options: {}, reply }, reply }
  })

describe("Floor.handle (fake actors)", () => {
  it.effect("rule 1: user input goes to the holder only; with no holder it is an error event", () =>
    Effect.gen(function*() {
      const { core, events, state, front, back } = setup()
      yield* Floor.handle(core, state, { _tag: "Input", text: "hello" })
      assert.deepStrictEqual(front.sent, [{ _tag: "UserInput", text: "hello" }])
      assert.lengthOf(back.sent, 0)
      state.holder = undefined
      yield* Floor.handle(core, state, { _tag: "Input", text: "anyone?" })
      assert.strictEqual(events.at(-1)?.type, "error")
      assert.lengthOf(front.sent, 1)
    }))

  it.effect("rule 1: a handoff is one step: holder, record and event together; then deactivate and resume", () =>
    Effect.gen(function*() {
      const { core, events, records, state, front, back } = setup()
      const { msg, reply } = yield* handoff(front.actor, weather)
      yield* Floor.handle(core, state, msg)
      assert.strictEqual(state.holder, back.actor)
      assert.lengthOf(records, 1)
      assert.deepStrictEqual(events.map((e) => e.type), ["agent_handoff"])
      assert.include(events[0], { from: "greeter", to: "weather", kind: "handoff", resumed: true })
      assert.deepStrictEqual(front.sent.map((m) => m._tag), ["Deactivate"])
      assert.deepStrictEqual(back.sent.map((m) => m._tag), ["Activate"])
      assert.strictEqual(back.sent[0]!["mode"], "resume")
      assert.deepStrictEqual(yield* Deferred.await(reply), { _tag: "Applied", to: "weather" })
    }))

  it.effect("a handoff asked by an agent that does not hold the floor is refused, said, and answered", () =>
    Effect.gen(function*() {
      const { core, events, state, front, back } = setup()
      const { msg, reply } = yield* handoff(back.actor, greeter)
      yield* Floor.handle(core, state, msg)
      assert.strictEqual(state.holder, front.actor)
      assert.strictEqual(events.at(-1)?.type, "handoff_not_applied")
      // A paused actor cannot be passing a floor it does not hold; the refusal leaves it paused.
      assert.strictEqual(back.actor.lifecycle._tag, "Paused")
      assert.deepStrictEqual(back.sent.map((m) => m._tag), ["Kick"])
      const outcome = yield* Deferred.await(reply)
      assert.strictEqual(outcome._tag, "NotApplied")
    }))

  it.effect("a handoff to a task, or to the holder itself, is refused", () =>
    Effect.gen(function*() {
      const { core, state, front } = setup()
      const toTask = yield* handoff(front.actor, verify)
      yield* Floor.handle(core, state, toTask.msg)
      const task = yield* Deferred.await(toTask.reply)
      assert.isTrue(task._tag === "NotApplied" && /is a task: start it with AgentTask.run/.test(task.reason))
      const toSelf = yield* handoff(front.actor, greeter)
      yield* Floor.handle(core, state, toSelf.msg)
      const self = yield* Deferred.await(toSelf.reply)
      assert.isTrue(self._tag === "NotApplied" && /already holds the floor/.test(self.reason))
      assert.strictEqual(state.holder, front.actor)
    }))

  it.effect("a handoff asked from outside: the holder is asked to end what it says and release the floor first", () =>
    Effect.gen(function*() {
      const { core, events, state, front } = setup()
      const { msg } = yield* handoff(undefined, weather)
      yield* Floor.handle(core, state, msg)
      assert.deepStrictEqual(front.sent.map((m) => m._tag), ["Release"])
      assert.strictEqual(state.holder, front.actor)
      assert.lengthOf(events, 0)
    }))

  it.effect("a task asked by an agent that does not hold the floor waits for it", () =>
    Effect.gen(function*() {
      const { core, events, state, back } = setup()
      const result = yield* Deferred.make<unknown, never>()
      yield* Floor.handle(core, state, {
        _tag: "StartTask",
        caller: back.actor,
        task: verify,
        result: result as never,
        handover: { pending: false },
        extraTools: []
      })
      assert.lengthOf(state.pending.get(back.actor) ?? [], 1)
      assert.lengthOf(events, 0)
      assert.isTrue(Option.isNone(yield* Deferred.poll(result)))
    }))

  it.effect("barge-in: the user starting to speak interrupts the holder's speech of older turns", () =>
    Effect.gen(function*() {
      const { core, state, front, back } = setup()
      yield* Floor.handle(core, state, { _tag: "UserSpeaking", speaking: true, userTurn: 3 })
      yield* Floor.handle(core, state, { _tag: "UserSpeaking", speaking: false, userTurn: 3 })
      assert.deepStrictEqual(front.sent, [{ _tag: "Interrupt", userTurn: 3 }, { _tag: "Kick" }])
      assert.lengthOf(back.sent, 0)
    }))
})
