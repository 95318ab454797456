/**
 * Every transport's transfer ends with an outcome (issue 35): a provider that never reports (a
 * Twilio callback that never comes, a LiveKit SIP request the server never answers, an operator
 * who lets it ring) is `NoAnswer` at baton's own bound, not before, on the `TestClock`; the
 * transfer task returns it to the agent's tool (every call answered), and the agent keeps the
 * floor and tells the caller. Each provider runs on a real socket on 127.0.0.1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Option, Queue, Redacted } from "effect"
import { TestClock } from "effect/testing"
import * as SipTransfer from "../../layers/livekit/SipTransfer.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as OperatorTransfer from "../../server/OperatorTransfer.ts"
import * as TwilioTransfer from "../../server/TwilioTransfer.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"
import { assertEveryCallAnswered } from "../helpers.ts"
import * as FakeSip from "../mocks/livekit/FakeSip.ts"
import * as Mock from "../mocks/twilio-rest/transfers.ts"
import * as TwilioStream from "./twilio-stream.ts"

const model = ScriptedModel.layer([
  { when: { user: "transfer me" }, reply: { toolCalls: [{ name: "transfer" }] } },
  { when: { agent: "front" }, reply: (r) => ({ text: r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" ") : "Front desk." }) }
])

/** Real time, while the TestClock stands still: the provider's socket answers in it. */
const eventually = (check: () => boolean, what: string) =>
  Effect.promise(async () => {
    for (let i = 0; i < 250 && !check(); i++) await new Promise((r) => setTimeout(r, 20))
    if (!check()) throw new Error(`never: ${what}`)
  })

/**
 * Runs the agent's transfer tool on `transferer`, waits (real time) for `dialed`, then moves the
 * clock to just before `bound` (no outcome yet) and to it (NoAnswer). Returns the tool's output.
 */
const unanswered = (
  task: AgentTask.AgentTask<Transfer.TransferOutcome, Transfer.Transferer>,
  transferer: Transfer.TransfererService,
  dialed: () => boolean,
  bound: Duration.Input
) =>
  Effect.gen(function*() {
    const front = Agent.make({
      name: "front",
      instructions: "Transfer when asked.",
      tools: [Tool.make("transfer", { description: "transfer", handler: () => AgentTask.run(task).pipe(Effect.map(Transfer.describe)) })]
    })
    const session = yield* AgentSession.start({ agent: front }).pipe(Effect.provide(Layer.succeed(Transfer.Transferer, transferer)))
    const turn = yield* Effect.forkChild(session.run("transfer me"))
    yield* eventually(dialed, "the provider was asked")
    yield* TestClock.adjust(Duration.subtract(Duration.fromInputUnsafe(bound), Duration.millis(1)))
    assert.strictEqual((yield* session.currentAgent)?.name, task.name, "the transfer still holds the floor")
    yield* TestClock.adjust("1 millis")
    // The transport's clean-up (a request on its socket) runs in real time before the task returns.
    yield* eventually(() => turn.pollUnsafe() !== undefined, "the turn's end")
    yield* Fiber.join(turn)
    assert.strictEqual((yield* session.currentAgent)?.name, "front", "the agent has the floor back")
    const history = yield* session.history
    assertEveryCallAnswered(history)
    const said = history.items.flatMap((i) => i._tag === "Message" && i.role === "assistant" && i.agent === "front" ? [i.text] : [])
    assert.lengthOf(said, 1)
    assert.include(said[0], "The transfer failed: nobody answered", "the agent tells the caller")
    return said[0]!
  }).pipe(Effect.provide(model))

describe("a transfer whose provider never reports ends NoAnswer at baton's bound (TestClock)", () => {
  it.effect("Twilio: the person's phone rings and no callback ever comes: NoAnswer at ringTimeout + 5 s + acceptTimeout, and the caller's call goes back to the agent's stream", () =>
    Effect.gen(function*() {
      const caller = "CA" + "c".repeat(32)
      const streamUrl = "wss://baton.example.com/twilio"
      const mock = yield* Mock.make([caller], { "+15550000007": { answers: "rings" } })
      const authToken = Redacted.make(Mock.AUTH_TOKEN)
      const callbacks = TwilioTransfer.makeCallbacks(authToken)
      const service = yield* TwilioStream.callbackServer(callbacks)
      const options = {
        api: { accountSid: Mock.ACCOUNT_SID, authToken, baseUrl: mock.url, streamUrl: Option.some(streamUrl) },
        callbacks,
        callbackUrl: service.url,
        from: "+15550009999",
        callSid: caller,
        sessionId: "session_1",
        resumeToken: Effect.succeed(Option.some("resume-7"))
      }
      const transferer = TwilioTransfer.transferer(options)
      const task = Transfer.warm({ to: "+15550000007", briefing: "Jane wants a quote.", ringTimeout: "20 seconds", acceptTimeout: "10 seconds" })
      // The caller on hold and the person's leg created: two calls in the mock.
      yield* unanswered(task, transferer, () => mock.twiml.size === 2, "35 seconds")
      const back = `<Response><Connect><Stream url="${streamUrl}"><Parameter name="resumeToken" value="resume-7"/></Stream></Connect></Response>`
      assert.strictEqual(mock.twiml.get(caller)!.at(-1), back)
    }).pipe(Effect.scoped))

  it.effect("LiveKit SIP: TransferSIPParticipant is never answered by the server: NoAnswer at ringTimeout + 5 s", () =>
    Effect.gen(function*() {
      const fake = yield* FakeSip.make({ "tel:+15550000009": FakeSip.NEVER })
      const transferer = SipTransfer.transferer({
        host: fake.url,
        apiKey: FakeSip.API_KEY,
        apiSecret: Redacted.make(FakeSip.API_SECRET),
        roomName: "call-42",
        participantIdentity: "sip_caller"
      })
      const said = yield* unanswered(Transfer.cold("tel:+15550000009", { ringTimeout: "25 seconds" }), transferer, () => fake.received.length === 1, "30 seconds")
      assert.include(said, "no outcome within the ring timeout (25s)")
    }).pipe(Effect.scoped))

  it.effect("the operator desk: an operator online who lets it ring: NoAnswer at the ring timeout, and the offer stops ringing", () =>
    Effect.gen(function*() {
      const line = OperatorTransfer.make()
      const offers = yield* OperatorTransfer.connect(line, "ada")
      const said = yield* unanswered(Transfer.cold("ada", { ringTimeout: "20 seconds" }), OperatorTransfer.transferer(line), () => line.pending.size === 1, "20 seconds")
      assert.include(said, "no operator answered")
      assert.strictEqual(yield* Queue.size(offers), 1, "ada was offered it")
      assert.strictEqual(line.pending.size, 0, "nothing rings any more")
    }).pipe(Effect.scoped))
})
