/**
 * `session.takeOver(human, { afterTask: true })` (issue 35, an operator accepting a transfer):
 * the task holding the floor is not cancelled; when it returns, the human takes the floor in
 * that same step, so the task's result reaches the agent's tool (rule 4) but the agent's model
 * is never asked to reply to it (rule 2), and a hand back gives the agent the floor again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { drive, until } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Human, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

const script = ScriptedModel.layer([
  { when: { user: "a person please" }, reply: { toolCalls: [{ name: "ring" }] } },
  { when: { toolOutput: "answered" }, reply: { text: "You are through now, goodbye." } },
  { when: { user: "thanks" }, reply: { text: "Desk again." } }
])

/** A task that holds the floor until its outcome is known (as a transfer does): "answered by ada"
 * once `answered` opens. */
const ringTask = (answered: Deferred.Deferred<void>) => {
  const ring: AgentTask.AgentTask<string> = AgentTask.make<string>({
    name: "ring",
    instructions: "Say nothing.",
    context: "none",
    onEnter: Effect.suspend(() => Effect.andThen(Deferred.await(answered), AgentTask.complete(ring, "answered by ada")))
  })
  return ring
}

/** Once the session's first turn asked the desk's model (its tool call), until `ring` holds the floor. */
const untilRinging = (model: ScriptedModel.ScriptedModelService, session: AgentSession.AgentSession) =>
  Effect.gen(function*() {
    yield* until(() => model.requestsFor("desk").length === 1)
    yield* drive(Effect.gen(function*() {
      while ((yield* session.currentAgent)?.name !== "ring") yield* Effect.yieldNow
    }))
  })

const setup = Effect.gen(function*() {
  const answered = yield* Deferred.make<void>()
  const ring = ringTask(answered)
  const agent = Agent.make({
    name: "desk",
    instructions: "You are the front desk.",
    tools: [Tool.make("ring", { description: "rings a person", handler: () => AgentTask.run(ring) })]
  })
  return { answered, agent }
})

/** The session with its task `ring` holding the floor (the desk's tool waits for it). */
const ringing = Effect.gen(function*() {
  const model = yield* ScriptedModel.ScriptedModel
  const { agent, answered } = yield* setup
  const session = yield* AgentSession.start({ agent })
  yield* Effect.forkChild(session.run("a person please"))
  yield* untilRinging(model, session)
  return { model, agent, answered, session }
})

const moves = (session: AgentSession.AgentSession) =>
  Effect.map(session.eventLog, (events) => events.flatMap((e) => e.type === "agent_handoff" ? [`${e.kind}:${e.from}>${e.to}`] : []))

describe("take over after a task returns", () => {
  it.effect("the human takes the floor in the step the task returns: its result answers the tool, the agent never replies", () =>
    Effect.gen(function*() {
      const { model, agent, answered, session } = yield* ringing
      const ada = yield* Human.make({ name: "ada" })
      const taken = yield* Effect.forkChild(session.takeOver(ada, { afterTask: true }), { startImmediately: true })
      yield* Effect.yieldNow
      // Not applied yet, and the task not cancelled: it still holds the floor.
      assert.strictEqual((yield* session.currentAgent)?.name, "ring")
      yield* Deferred.succeed(answered, undefined)
      assert.deepStrictEqual(yield* drive(Fiber.join(taken)), { _tag: "Applied", to: "ada" })
      yield* drive(session.idle)
      const history = yield* session.history
      assertEveryCallAnswered(history)
      const output = history.items.find((i) => i._tag === "FunctionCallOutput" && i.name === "ring")
      assert.isTrue(output?._tag === "FunctionCallOutput" && !output.isError && JSON.stringify(output.output).includes("answered by ada"))
      // The tool's output never prompted the desk's model: no reply to it, nothing said.
      assert.strictEqual(model.requestsFor("desk").length, 1)
      assert.isFalse(history.items.some((i) => i._tag === "Message" && i.role === "assistant" && i.agent === "desk"))
      const moves = (yield* session.eventLog).flatMap((e) => e.type === "agent_handoff" ? [`${e.kind}:${e.from}>${e.to}`] : [])
      assert.deepStrictEqual(moves.slice(-2), ["return:ring>desk", "take_over:desk>ada"])
      // Handed back, the desk speaks again.
      assert.strictEqual((yield* session.handBack(agent, { reply: false }))._tag, "Applied")
      yield* drive(session.run("thanks"))
      assert.strictEqual(model.requestsFor("desk").length, 2)
    }).pipe(Effect.provide(script)))

  it.effect("a task that does not return within the timeout: the take-over is NotApplied at the timeout, not before; the task returning later gives the agent the floor and it replies", () =>
    Effect.gen(function*() {
      const { model, answered, session } = yield* ringing
      const ada = yield* Human.make({ name: "ada" })
      const taken = yield* Effect.forkChild(session.takeOver(ada, { afterTask: true, timeout: "5 seconds" }), { startImmediately: true })
      yield* TestClock.adjust("4999 millis")
      assert.isUndefined(taken.pollUnsafe(), "still waiting for the return before the timeout")
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(yield* Fiber.join(taken), { _tag: "NotApplied", reason: "the task did not return within 5s" })
      assert.strictEqual((yield* session.currentAgent)?.name, "ring", "the task was not cancelled")
      yield* Deferred.succeed(answered, undefined)
      yield* drive(session.idle)
      // Rule 2 with nobody claiming: the desk holds the floor again and may speak.
      assert.strictEqual((yield* session.currentAgent)?.name, "desk")
      assert.isUndefined(yield* session.currentHuman)
      assert.isUndefined(ada.holding())
      assert.strictEqual(model.requestsFor("desk").length, 2)
      const history = yield* session.history
      assertEveryCallAnswered(history)
      assert.isTrue(history.items.some((i) => i._tag === "Message" && i.role === "assistant" && i.agent === "desk" && i.text === "You are through now, goodbye."))
      assert.isFalse((yield* moves(session)).some((m) => m.startsWith("take_over")))
    }).pipe(Effect.provide(script)))

  it.effect("an interrupted take-over is withdrawn: another person's claim is then accepted and applied on the return", () =>
    Effect.gen(function*() {
      const { answered, session } = yield* ringing
      const ada = yield* Human.make({ name: "ada" })
      const bob = yield* Human.make({ name: "bob" })
      const taken = yield* Effect.forkChild(session.takeOver(ada, { afterTask: true }), { startImmediately: true })
      yield* Effect.yieldNow
      yield* Fiber.interrupt(taken)
      // Without the withdrawal bob would be refused: "ada takes the floor when ring returns".
      const second = yield* Effect.forkChild(session.takeOver(bob, { afterTask: true }), { startImmediately: true })
      yield* Effect.yieldNow
      assert.isUndefined(second.pollUnsafe())
      yield* Deferred.succeed(answered, undefined)
      assert.deepStrictEqual(yield* drive(Fiber.join(second)), { _tag: "Applied", to: "bob" })
      assert.isUndefined(ada.holding())
      assert.deepStrictEqual((yield* moves(session)).slice(-2), ["return:ring>desk", "take_over:desk>bob"])
    }).pipe(Effect.provide(script)))

  it.effect("a session closed while a take-over waits for its task: the take-over is NotApplied, the session is closed", () =>
    Effect.gen(function*() {
      const { session } = yield* ringing
      const ada = yield* Human.make({ name: "ada" })
      // (A long timeout: the answer is the close's, not the timeout's.)
      const taken = yield* Effect.forkChild(session.takeOver(ada, { afterTask: true, timeout: "1 hour" }), { startImmediately: true })
      yield* Effect.yieldNow
      yield* drive(session.close, { limit: "1 second" })
      assert.deepStrictEqual(yield* drive(Fiber.join(taken), { limit: "1 second" }), { _tag: "NotApplied", reason: "the session is closed" })
      assert.isUndefined(ada.holding())
    }).pipe(Effect.provide(script)))

  it.effect("a claim refused when the task returns (the person took another session meanwhile): the agent keeps the floor and its next task request starts", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const answered = yield* Deferred.make<void>()
      const ring = ringTask(answered)
      const page: AgentTask.AgentTask<string> = AgentTask.make<string>({
        name: "page",
        instructions: "Say nothing.",
        context: "none",
        onEnter: Effect.suspend(() => AgentTask.complete(page, "paged"))
      })
      const agent = Agent.make({
        name: "desk",
        instructions: "You are the front desk.",
        tools: [
          Tool.make("ring", { description: "rings a person", handler: () => AgentTask.run(ring) }),
          Tool.make("page", { description: "pages a person", handler: () => AgentTask.run(page) })
        ]
      })
      const ada = yield* Human.make({ name: "ada" })
      const session = yield* AgentSession.start({ agent })
      const other = yield* AgentSession.start({ agent })
      yield* Effect.forkChild(session.run("two please"))
      yield* untilRinging(model, session)
      const taken = yield* Effect.forkChild(session.takeOver(ada, { afterTask: true, timeout: "1 hour" }), { startImmediately: true })
      yield* Effect.yieldNow
      // Meanwhile ada takes the floor of another session.
      assert.strictEqual((yield* drive(other.takeOver(ada)))._tag, "Applied")
      yield* Deferred.succeed(answered, undefined)
      assert.deepStrictEqual(yield* drive(Fiber.join(taken), { limit: "1 minute" }), { _tag: "NotApplied", reason: `ada holds the floor of session ${other.id}` })
      // The page task the desk's second call asked for runs, and the desk answers both.
      yield* drive(session.idle, { limit: "1 minute" })
      const history = yield* session.history
      assertEveryCallAnswered(history)
      const outputs = history.items.flatMap((i) => i._tag === "FunctionCallOutput" ? [JSON.stringify(i.output)] : [])
      assert.isTrue(outputs.some((o) => o.includes("answered by ada")) && outputs.some((o) => o.includes("paged")), outputs.join(" | "))
      assert.strictEqual((yield* session.currentAgent)?.name, "desk")
      assert.isTrue(history.items.some((i) => i._tag === "Message" && i.role === "assistant" && i.agent === "desk" && i.text === "Both done."))
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "two please" }, reply: { toolCalls: [{ name: "ring" }, { name: "page" }] } },
      { when: { agent: "desk" }, reply: { text: "Both done." } }
    ]))))
})
