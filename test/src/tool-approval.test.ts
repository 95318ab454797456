/**
 * Tool approval (issue 37): a tool made with `needsApproval` waits for `session.approve` /
 * `session.reject` before its handler runs; the session stays busy meanwhile (rule 10), and a
 * close, a barge-in or a handoff answers it (rule 4). Under TestClock with the scripted model.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, type SessionEvent, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

const model = ScriptedModel.layer([
  { when: { user: "pay" }, reply: { toolCalls: [{ name: "pay", arguments: { amount: 50 } }] } },
  { when: { user: "big" }, reply: { toolCalls: [{ name: "pay", arguments: { amount: 5000 } }] } },
  { when: { user: "both" }, reply: { toolCalls: [{ name: "pay", arguments: { amount: 5000 } }, { name: "lookup" }] } },
  { when: { user: "transfer" }, reply: { toolCalls: [{ name: "pay", arguments: { amount: 5000 } }, { name: "to_billing" }] } },
  { when: { toolOutput: "not approved" }, reply: (r) => ({ text: `Refused: ${r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" | ") : ""}` }) },
  { when: { toolOutput: /./ }, reply: (r) => ({ text: `Done: ${r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" | ") : ""}` }) },
  { when: { user: /./ }, reply: { text: "Hello." } }
])

const payTool = (paid: Array<number>, needsApproval: Tool.NeedsApproval<{ readonly amount: number }, never> = true) =>
  Tool.make("pay", {
    description: "Pays an amount",
    parameters: Schema.Struct({ amount: Schema.Number }),
    needsApproval,
    handler: ({ amount }) => Effect.sync(() => paid.push(amount)).pipe(Effect.as(`paid ${amount}`))
  })
const lookup = Tool.make("lookup", { description: "Looks up", handler: () => Effect.succeed("found it") })

/** Moves the clock until a call waits for approval, and returns its id. */
const pendingApproval = (session: AgentSession.AgentSession) =>
  Effect.gen(function*() {
    for (let step = 0; step < 500; step++) {
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      const ids = yield* session.pendingApprovals
      if (ids.length > 0) return ids[0]!
      yield* TestClock.adjust("10 millis")
    }
    return yield* Effect.die(new Error("no call waited for approval"))
  })

const ofType = <T extends SessionEvent["type"]>(events: ReadonlyArray<SessionEvent>, type: T) =>
  events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type)

describe("tool approval", () => {
  it.effect("approval: rule 10: the call waits, emits tool_approval_requested, and runs once approved; run resolves only after", () =>
    Effect.gen(function*() {
      const paid: Array<number> = []
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", tools: [payTool(paid)] }) })
      const run = yield* Effect.forkChild(drive(session.run("pay")))
      const callId = yield* pendingApproval(session)
      // Waiting for approval keeps the session busy (rule 10): the run has not resolved.
      yield* TestClock.adjust("1 minute")
      assert.isUndefined(run.pollUnsafe(), "run resolved while a call waited for approval")
      assert.deepStrictEqual(paid, [], "the handler ran before approval")
      const requested = ofType(yield* session.eventLog, "tool_approval_requested")
      assert.strictEqual(requested.length, 1)
      assert.strictEqual(requested[0]!.callId, callId)
      assert.strictEqual(requested[0]!.tool, "pay")
      assert.deepStrictEqual(JSON.parse(requested[0]!.arguments), { amount: 50 })
      yield* session.approve(callId)
      const result = yield* Fiber.join(run)
      assert.deepStrictEqual(paid, [50])
      result.expect.containsFunctionCallOutput({ name: "pay", output: "paid 50", isError: false })
      result.expect.containsMessage({ role: "assistant", content: "Done: paid 50" })
      const answered = ofType(result.sessionEvents, "tool_approval_answered")
      assert.deepStrictEqual(answered.map((e) => [e.callId, e.approved, e.by]), [[callId, true, "app"]])
      assert.deepStrictEqual(yield* session.pendingApprovals, [])
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(model)))

  it.effect("approval: a rejected call does not run; the model reads that it was not approved, with the reason", () =>
    Effect.gen(function*() {
      const paid: Array<number> = []
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", tools: [payTool(paid)] }) })
      const run = yield* Effect.forkChild(drive(session.run("pay")))
      const callId = yield* pendingApproval(session)
      yield* session.reject(callId, { reason: "over the daily limit" })
      const result = yield* Fiber.join(run)
      assert.deepStrictEqual(paid, [])
      const output = result.expect.containsFunctionCallOutput({ name: "pay", isError: true })
      assert.strictEqual(output.output, "pay was not approved: over the daily limit. It did not run.")
      result.expect.containsMessage({ role: "assistant", content: "Refused: pay was not approved: over the daily limit. It did not run." })
      const answered = ofType(result.sessionEvents, "tool_approval_answered")
      assert.deepStrictEqual(answered.map((e) => [e.approved, e.by, e.reason]), [[false, "app", "over the daily limit"]])
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(model)))

  it.effect("approval: a predicate asks only for the calls it picks; the others run at once", () =>
    Effect.gen(function*() {
      const paid: Array<number> = []
      const tool = payTool(paid, ({ amount }) => Effect.succeed(amount > 1000))
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", tools: [tool] }) })
      const small = yield* drive(session.run("pay"))
      assert.deepStrictEqual(paid, [50])
      assert.strictEqual(ofType(small.sessionEvents, "tool_approval_requested").length, 0)
      const run = yield* Effect.forkChild(drive(session.run("big")))
      const callId = yield* pendingApproval(session)
      yield* session.approve(callId)
      yield* Fiber.join(run)
      assert.deepStrictEqual(paid, [50, 5000])
    }).pipe(Effect.provide(model)))

  it.effect("approval: rule 4: closing the session while a call waits answers it as cancelled, and it never runs", () =>
    Effect.gen(function*() {
      const paid: Array<number> = []
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", tools: [payTool(paid), lookup] }) })
      const run = yield* Effect.forkChild(drive(session.run("both")))
      yield* pendingApproval(session)
      yield* session.close
      const exit = yield* Fiber.await(run)
      assert.isTrue(Exit.isExit(exit))
      assert.deepStrictEqual(paid, [])
      const history = yield* session.history
      assertEveryCallAnswered(history)
      const outputs = history.items.filter((i) => i._tag === "FunctionCallOutput")
      assert.deepStrictEqual(outputs.map((o) => [o.name, o.status]), [["pay", "cancelled"], ["lookup", "ok"]])
      assert.deepStrictEqual(yield* session.pendingApprovals, [])
    }).pipe(Effect.provide(model)))

  it.effect("approval: the user speaking over a waiting call rejects it (barge-in), and their turn is answered", () =>
    Effect.gen(function*() {
      const paid: Array<number> = []
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", tools: [payTool(paid)] }) })
      yield* session.send("pay")
      yield* pendingApproval(session)
      yield* session.send("hello again")
      yield* drive(session.idle)
      assert.deepStrictEqual(paid, [])
      const events = yield* session.eventLog
      const answered = ofType(events, "tool_approval_answered")
      assert.deepStrictEqual(answered.map((e) => [e.approved, e.by]), [[false, "barge_in"]])
      const history = yield* session.history
      assertEveryCallAnswered(history)
      const output = history.items.find((i) => i._tag === "FunctionCallOutput")!
      assert.strictEqual(output.output, "pay was not approved: the user spoke before it was. It did not run.")
      assert.deepStrictEqual(yield* session.pendingApprovals, [])
    }).pipe(Effect.provide(model)))

  it.effect("approval: a handoff while a call waits rejects it; the new agent holds the floor", () =>
    Effect.gen(function*() {
      const paid: Array<number> = []
      const billing = Agent.make({ name: "billing", instructions: "B" })
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", tools: [payTool(paid)] }) })
      yield* session.send("pay")
      yield* pendingApproval(session)
      yield* session.handoff(billing)
      yield* drive(session.idle)
      assert.deepStrictEqual(paid, [])
      const answered = ofType(yield* session.eventLog, "tool_approval_answered")
      assert.deepStrictEqual(answered.map((e) => [e.approved, e.by]), [[false, "handoff"]])
      assert.strictEqual((yield* session.currentAgent)?.name, "billing")
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(model)))

  it.effect("approval: approving an id that waits for nothing is a clear error naming what does wait", () =>
    Effect.gen(function*() {
      const paid: Array<number> = []
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", tools: [payTool(paid)] }) })
      const run = yield* Effect.forkChild(drive(session.run("pay")))
      const callId = yield* pendingApproval(session)
      const error = yield* Effect.flip(session.approve("nope"))
      assert.strictEqual(error._tag, "InvalidInput")
      assert.include(error.message, `waiting: ${callId}`)
      yield* session.approve(callId)
      yield* Fiber.join(run)
      // Answered once: a second answer is refused, not applied twice.
      const again = yield* Effect.flip(session.reject(callId))
      assert.include(again.message, "waiting: none")
      assert.deepStrictEqual(paid, [50])
    }).pipe(Effect.provide(model)))
})
