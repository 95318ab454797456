/**
 * Transfers as typed tasks (issue 35): the caller's tool gets the outcome only once the
 * transport knows it, the task holds the floor while the call rings, any outcome but Answered
 * gives the floor back to the agent with an output saying why, and the ring timeout is honoured
 * (TestClock). A fake Transferer plays the transport.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"

const front = (task: AgentTask.AgentTask<Transfer.TransferOutcome, Transfer.Transferer>) =>
  Agent.make({
    name: "front",
    instructions: "Transfer when asked.",
    tools: [Tool.make("transfer", {
      description: "transfer",
      handler: () => AgentTask.run(task).pipe(Effect.map(Transfer.describe))
    })]
  })

const toolOutput = (r: ScriptedModel.RecordedRequest) => r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" ") : ""

const model = ScriptedModel.layer([
  { when: { user: "transfer me", agent: "front" }, reply: { toolCalls: [{ name: "transfer" }] } },
  { when: { agent: "front" }, reply: (r) => ({ text: `front: ${toolOutput(r)}` }) }
])

/** A transport that records each request and answers with what `answer` gives. */
const fake = (answer: (request: Transfer.TransferRequest) => Effect.Effect<Transfer.TransferOutcome>) => {
  const requests: Array<Transfer.TransferRequest> = []
  const layer = Layer.succeed(Transfer.Transferer, {
    transport: "fake",
    transfer: (request) => Effect.suspend(() => (requests.push(request), answer(request)))
  })
  return { requests, layer }
}

/** Lets the session's fibers run (the model call, the task's start) without moving the clock. */
const settle = Effect.forEach(Array.from({ length: 50 }), () => Effect.yieldNow, { discard: true })

const said = (capture: TextCapture.TextCaptureService) => capture.writes.map((w) => w.text)

describe("Transfer tasks", () => {
  it.effect("cold transfer answered: the tool gets Answered only after the transport reports it, and the task held the floor meanwhile", () => {
    const gate = Deferred.makeUnsafe<Transfer.TransferOutcome>()
    const transport = fake(() => Deferred.await(gate))
    return Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: front(Transfer.cold("+15105550100")) })
      const run = yield* Effect.forkChild(session.run("transfer me"))
      yield* settle
      assert.strictEqual((yield* session.currentAgent)?.name, "cold_transfer")
      assert.deepStrictEqual(said(capture), [])
      assert.deepStrictEqual(transport.requests.map((r) => [r._tag, r.to]), [["Cold", "+15105550100"]])
      yield* Deferred.succeed(gate, Transfer.outcome("Answered", "completed"))
      yield* Fiber.join(run)
      assert.match(said(capture).at(-1)!, /^front: The transfer was answered \(completed\)/)
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, model, transport.layer)))
  })

  it.effect("cold transfer busy: the floor goes back to the agent and its model is told the line was busy, with the provider's reason", () => {
    const transport = fake(() => Effect.succeed(Transfer.outcome("Busy", "sip status 486: Busy Here")))
    return Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: front(Transfer.cold("sip:sales@example.com")) })
      yield* session.run("transfer me")
      assert.strictEqual((yield* session.currentAgent)?.name, "front")
      assert.strictEqual(said(capture).at(-1), "front: " + Transfer.describe(Transfer.outcome("Busy", "sip status 486: Busy Here")))
      assert.include(said(capture).at(-1)!, "busy (sip status 486: Busy Here)")
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, model, transport.layer)))
  })

  it.effect("ring timeout honoured: a transport that never reports is NoAnswer at ringTimeout plus the grace, not before", () => {
    const transport = fake(() => Effect.never)
    return Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: front(Transfer.cold("+15105550100", { ringTimeout: "20 seconds" })) })
      const run = yield* Effect.forkChild(session.run("transfer me"))
      yield* settle
      yield* TestClock.adjust("24 seconds")
      yield* settle
      assert.strictEqual((yield* session.currentAgent)?.name, "cold_transfer")
      assert.deepStrictEqual(said(capture), [])
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(run)
      assert.strictEqual((yield* session.currentAgent)?.name, "front")
      assert.include(said(capture).at(-1)!, "nobody answered (no outcome within the ring timeout (20s))")
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, model, transport.layer)))
  })

  it.effect("warm transfer: the timeout also covers the briefing (acceptTimeout): NoAnswer only at ringTimeout + grace + acceptTimeout", () => {
    const transport = fake(() => Effect.never)
    return Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const task = Transfer.warm({ to: "+15105550100", briefing: "b", ringTimeout: "20 seconds", acceptTimeout: "30 seconds" })
      const session = yield* AgentSession.start({ agent: front(task) })
      const run = yield* Effect.forkChild(session.run("transfer me"))
      yield* settle
      yield* TestClock.adjust("54 seconds")
      yield* settle
      assert.strictEqual((yield* session.currentAgent)?.name, "warm_transfer")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(run)
      assert.include(said(capture).at(-1)!, "nobody answered")
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, model, transport.layer)))
  })

  it.effect("warm transfer declined: the transport gets the briefing and hold audio, the floor returns to the agent with Declined", () => {
    const transport = fake(() => Effect.succeed(Transfer.outcome("Declined", "the person declined after the briefing")))
    return Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const task = Transfer.warm({ to: "+15105550100", briefing: "Jane wants a quote.", holdAudio: "https://example.com/hold.mp3", ringTimeout: "15 seconds" })
      const session = yield* AgentSession.start({ agent: front(task) })
      yield* session.run("transfer me")
      const request = transport.requests[0]!
      assert.strictEqual(request._tag, "Warm")
      assert.deepStrictEqual(request._tag === "Warm" && [request.briefing, request.holdAudio], ["Jane wants a quote.", "https://example.com/hold.mp3"])
      assert.include(said(capture).at(-1)!, "The person declined the transfer (the person declined after the briefing)")
      assert.strictEqual((yield* session.currentAgent)?.name, "front")
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, model, transport.layer)))
  })
})
