/**
 * Transfers to an operator (issue 35): the offer reaches the operators online (and one who
 * connects while it rings), accept is Answered, decline Declined, and nobody online or answering
 * is NoAnswer at the ring timeout (TestClock); the caller's agent gets the floor back on each
 * outcome but Answered.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Queue } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import * as OperatorTransfer from "../../server/OperatorTransfer.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"

const cold = (to: string): Transfer.TransferRequest => ({ _tag: "Cold", to, ringTimeout: Duration.seconds(30) })
const settle = Effect.forEach(Array.from({ length: 50 }), () => Effect.yieldNow, { discard: true })

describe("operator transfers", () => {
  it.effect("an operator online gets the offer and accepts: Answered", () =>
    Effect.gen(function*() {
      const line = OperatorTransfer.make()
      const offers = yield* OperatorTransfer.connect(line, "ada")
      const fiber = yield* Effect.forkChild(OperatorTransfer.transferer(line).transfer(cold("ada")))
      const offer = yield* Queue.take(offers)
      assert.isTrue(yield* OperatorTransfer.answer(line, "ada", offer.id, true))
      assert.deepStrictEqual(yield* Fiber.join(fiber), Transfer.outcome("Answered", "ada accepted"))
      assert.isFalse(yield* OperatorTransfer.answer(line, "ada", offer.id, true))
    }).pipe(Effect.scoped))

  it.effect("an operator declines with a reason: Declined; an offer for another operator cannot be answered by this one", () =>
    Effect.gen(function*() {
      const line = OperatorTransfer.make()
      const offers = yield* OperatorTransfer.connect(line, "ada")
      yield* OperatorTransfer.connect(line, "bob")
      const fiber = yield* Effect.forkChild(OperatorTransfer.transferer(line).transfer(cold("ada")))
      const offer = yield* Queue.take(offers)
      assert.isFalse(yield* OperatorTransfer.answer(line, "bob", offer.id, true))
      assert.isTrue(yield* OperatorTransfer.answer(line, "ada", offer.id, false, "on another call"))
      assert.deepStrictEqual(yield* Fiber.join(fiber), Transfer.outcome("Declined", "ada declined: on another call"))
    }).pipe(Effect.scoped))

  it.effect("an operator who connects while it rings gets the offer (with the warm transfer's briefing)", () =>
    Effect.gen(function*() {
      const line = OperatorTransfer.make()
      const fiber = yield* Effect.forkChild(OperatorTransfer.transferer(line).transfer({
        _tag: "Warm", to: "any", ringTimeout: Duration.seconds(30), briefing: "Jane wants a refund.", acceptTimeout: Duration.seconds(60)
      }))
      yield* settle
      yield* TestClock.adjust("10 seconds")
      const offers = yield* OperatorTransfer.connect(line, "ada")
      const offer = yield* Queue.take(offers)
      assert.strictEqual(offer.briefing, "Jane wants a refund.")
      yield* OperatorTransfer.answer(line, "ada", offer.id, true)
      assert.strictEqual((yield* Fiber.join(fiber))._tag, "Answered")
    }).pipe(Effect.scoped))

  it.effect("nobody online: the session's transfer is NoAnswer at the ring timeout, not before, and the agent keeps the floor and is told", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const line = OperatorTransfer.make()
      const task = Transfer.cold("any", { ringTimeout: "30 seconds" })
      const agent = Agent.make({
        name: "front",
        instructions: "Transfer when asked.",
        tools: [Tool.make("transfer", { description: "transfer", handler: () => AgentTask.run(task).pipe(Effect.map(Transfer.describe)) })]
      })
      const session = yield* AgentSession.start({ agent }).pipe(Effect.provide(Layer.succeed(Transfer.Transferer, OperatorTransfer.transferer(line))))
      const run = yield* Effect.forkChild(session.run("transfer me"))
      yield* settle
      yield* TestClock.adjust("29 seconds")
      yield* settle
      assert.strictEqual((yield* session.currentAgent)?.name, "cold_transfer")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(run)
      assert.strictEqual((yield* session.currentAgent)?.name, "front")
      assert.include(capture.writes.at(-1)!.text, "nobody answered (no operator online)")
    }).pipe(Effect.provide(Layer.mergeAll(
      TextCapture.layer,
      ScriptedModel.layer([
        { when: { user: "transfer me", agent: "front" }, reply: { toolCalls: [{ name: "transfer" }] } },
        { when: { agent: "front" }, reply: (r) => ({ text: r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" ") : "" }) }
      ])
    ))))
})
