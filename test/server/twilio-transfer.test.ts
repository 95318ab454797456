/**
 * Transfers on Twilio (issue 35), against a protocol-faithful mock of the REST endpoints that
 * posts signed callbacks as each person would answer; the service's callback listener runs on a
 * real socket and checks every signature.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Option, Redacted } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import * as TwilioTransfer from "../../server/TwilioTransfer.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"
import * as Mock from "../mocks/twilio-rest/transfers.ts"
import { callbackServer } from "./twilio-stream.ts"

const CALLER = "CA" + "c".repeat(32)
const STREAM_URL = "wss://baton.example.com/twilio"

const people: Record<string, Mock.Person> = {
  "+15550000001": { answers: "press", digit: "1" },
  "+15550000002": { answers: "press", digit: "2" },
  "+15550000003": { answers: "no-answer" },
  "+15550000004": { answers: "busy" },
  "+15550000005": { answers: "machine" },
  "+15550000006": { answers: "hangs-up" },
  "+15550000007": { answers: "rings" }
}

const setup = Effect.gen(function*() {
  const mock = yield* Mock.make([CALLER], people)
  const authToken = Redacted.make(Mock.AUTH_TOKEN)
  const callbacks = TwilioTransfer.makeCallbacks(authToken)
  const service = yield* callbackServer(callbacks)
  const transferer = TwilioTransfer.transferer({
    api: { accountSid: Mock.ACCOUNT_SID, authToken, baseUrl: mock.url, streamUrl: Option.some(STREAM_URL) },
    callbacks,
    callbackUrl: service.url,
    from: "+15550009999",
    callSid: CALLER,
    sessionId: "session_1",
    resumeToken: Effect.succeed(Option.some("resume-123"))
  })
  return { mock, transferer, service, callbacks }
})

const warm = (to: string): Transfer.TransferRequest => ({
  _tag: "Warm",
  to,
  ringTimeout: Duration.seconds(20),
  briefing: "Jane Doe wants a quote for 12 seats.",
  holdAudio: "https://baton.example.com/hold.mp3",
  acceptTimeout: Duration.seconds(60)
})
const cold = (to: string): Transfer.TransferRequest => ({ _tag: "Cold", to, ringTimeout: Duration.seconds(20) })

const backToAgent = `<Response><Connect><Stream url="${STREAM_URL}"><Parameter name="resumeToken" value="resume-123"/></Stream></Connect></Response>`

/** Waits (real time) until `check` holds: Twilio's last callbacks arrive after the outcome. */
const eventually = (check: () => boolean) =>
  Effect.promise(async () => {
    for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20))
  })

describe("Twilio transfers", () => {
  it.live("warm transfer answered: the caller waits in the conference with the hold audio, the person hears the briefing, presses 1 and joins: Answered, the agent does not come back", () =>
    Effect.gen(function*() {
      const { mock, transferer } = yield* setup
      const result = yield* transferer.transfer(warm("+15550000001"))
      assert.deepStrictEqual(result, Transfer.outcome("Answered", "the person pressed 1 after the briefing"))
      const caller = mock.twiml.get(CALLER)!
      assert.strictEqual(caller.length, 1)
      const room = /<Conference[^>]*>([^<]+)</.exec(caller[0]!)![1]!
      assert.match(caller[0]!, /startConferenceOnEnter="false"[^>]*waitUrl="https:\/\/baton.example.com\/hold.mp3"/)
      assert.deepStrictEqual(mock.heard.get("+15550000001"), ["Jane Doe wants a quote for 12 seats.", "Press 1 to take the call, or any other key to decline."])
      yield* eventually(() => mock.posted.some((p) => p.params["Digits"] === "1"))
      const gatherAnswer = mock.posted.find((p) => p.params["Digits"] === "1")!.answer
      assert.include(gatherAnswer, `startConferenceOnEnter="true"`)
      assert.include(gatherAnswer, `>${room}</Conference>`)
    }).pipe(Effect.scoped))

  it.live("warm transfer declined: the person presses 2 after the briefing: Declined, the caller is back on the stream with its resume token, once (the leg's later completion changes nothing)", () =>
    Effect.gen(function*() {
      const { mock, transferer } = yield* setup
      const result = yield* transferer.transfer(warm("+15550000002"))
      assert.deepStrictEqual(result, Transfer.outcome("Declined", "the person pressed 2 after the briefing"))
      yield* eventually(() => mock.posted.some((p) => p.params["CallStatus"] === "completed"))
      assert.deepStrictEqual(mock.twiml.get(CALLER)!.slice(1), [backToAgent])
    }).pipe(Effect.scoped))

  it.live("warm transfer unanswered: the status callback's no-answer is NoAnswer and the caller goes back to the agent; the person's leg rang for the ring timeout", () =>
    Effect.gen(function*() {
      const { mock, transferer } = yield* setup
      const result = yield* transferer.transfer(warm("+15550000003"))
      assert.deepStrictEqual(result, Transfer.outcome("NoAnswer", "DialCallStatus=no-answer"))
      assert.deepStrictEqual(mock.twiml.get(CALLER)!.slice(1), [backToAgent])
    }).pipe(Effect.scoped))

  it.live("warm transfer to voicemail: AnsweredBy=machine_start is Voicemail, that leg is hung up, the caller goes back to the agent", () =>
    Effect.gen(function*() {
      const { mock, transferer } = yield* setup
      const result = yield* transferer.transfer(warm("+15550000005"))
      assert.deepStrictEqual(result, Transfer.outcome("Voicemail", "AnsweredBy=machine_start"))
      assert.strictEqual(mock.hungUp.length, 1)
      assert.deepStrictEqual(mock.twiml.get(CALLER)!.slice(1), [backToAgent])
    }).pipe(Effect.scoped))

  it.live("warm transfer: a person who hangs up after the briefing has Declined", () =>
    Effect.gen(function*() {
      const { transferer } = yield* setup
      const result = yield* transferer.transfer(warm("+15550000006"))
      assert.deepStrictEqual(result, Transfer.outcome("Declined", "the person hung up before accepting"))
    }).pipe(Effect.scoped))

  it.live("warm transfer to a number Twilio refuses (21211): Failed with Twilio's code, and the caller, already on hold, goes back to the agent", () =>
    Effect.gen(function*() {
      const { mock, transferer } = yield* setup
      const result = yield* transferer.transfer(warm("555-not-e164"))
      assert.strictEqual(result._tag, "Failed")
      assert.include(result.reason, "(error 21211)")
      assert.deepStrictEqual(mock.twiml.get(CALLER)!.slice(1), [backToAgent])
    }).pipe(Effect.scoped))

  it.live("a transfer interrupted while the person's phone rings (baton's own timeout, a closed session) gives the caller back to the agent", () =>
    Effect.gen(function*() {
      const { mock, transferer } = yield* setup
      const fiber = yield* Effect.forkChild(transferer.transfer(warm("+15550000007")))
      yield* eventually(() => [...mock.twiml.keys()].length === 2)
      assert.strictEqual(mock.twiml.get(CALLER)!.length, 1)
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(mock.twiml.get(CALLER)!.slice(1), [backToAgent])
    }).pipe(Effect.scoped))

  it.live("cold transfer answered: <Dial action timeout><Number statusCallbackEvent=answered> on the caller; the person picking up (CallStatus=in-progress) is Answered, before the dial's action, which hangs up once the bridged call ends", () =>
    Effect.gen(function*() {
      const { mock, transferer } = yield* setup
      const result = yield* transferer.transfer(cold("+15550000001"))
      assert.deepStrictEqual(result, Transfer.outcome("Answered", "CallStatus=in-progress"))
      assert.match(
        mock.twiml.get(CALLER)![0]!,
        /^<Response><Dial action="http:\/\/127\.0\.0\.1:\d+\/twilio\/transfer\/([^/]+)\/dial" timeout="20"><Number statusCallbackEvent="answered" statusCallback="http:\/\/127\.0\.0\.1:\d+\/twilio\/transfer\/\1\/status">\+15550000001<\/Number><\/Dial><\/Response>$/
      )
      yield* eventually(() => mock.posted.some((p) => p.params["DialCallStatus"] !== undefined))
      assert.deepStrictEqual(mock.posted.map((p) => p.params["CallStatus"] ?? `DialCallStatus=${p.params["DialCallStatus"]}`), ["in-progress", "DialCallStatus=completed"])
      assert.strictEqual(mock.posted.at(-1)!.answer, "<Response><Hangup/></Response>")
    }).pipe(Effect.scoped))

  it.live("cold transfer busy: DialCallStatus=busy is Busy and the action's answer is the stream back to the agent", () =>
    Effect.gen(function*() {
      const { mock, transferer } = yield* setup
      const result = yield* transferer.transfer(cold("+15550000004"))
      assert.deepStrictEqual(result, Transfer.outcome("Busy", "DialCallStatus=busy"))
      yield* eventually(() => mock.posted.length > 0)
      assert.strictEqual(mock.posted.at(-1)!.answer, backToAgent)
    }).pipe(Effect.scoped))

  it.live("a callback without Twilio's signature, or signed with another token, is refused with 403 and settles nothing", () =>
    Effect.gen(function*() {
      const { service } = yield* setup
      const post = (signature: string | undefined) =>
        Effect.promise(() =>
          fetch(`${service.url}/twilio/transfer/x/dial`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", ...(signature ? { "x-twilio-signature": signature } : {}) },
            body: "DialCallStatus=completed"
          }).then((r) => r.status)
        )
      assert.strictEqual(yield* post(undefined), 403)
      assert.strictEqual(yield* post(TwilioTransfer.signature(Redacted.make("other"), `${service.url}/twilio/transfer/x/dial`, { DialCallStatus: "completed" })), 403)
      assert.strictEqual(yield* post(TwilioTransfer.signature(Redacted.make(Mock.AUTH_TOKEN), `${service.url}/twilio/transfer/x/dial`, { DialCallStatus: "completed" })), 404)
    }).pipe(Effect.scoped))

  it.live("through a session: the agent's tool runs Transfer.cold on Twilio, the line is busy, the agent keeps the floor and tells the caller", () =>
    Effect.gen(function*() {
      const { transferer } = yield* setup
      const capture = yield* TextCapture.TextCapture
      const task = Transfer.cold("+15550000004")
      const agent = Agent.make({
        name: "front",
        instructions: "Transfer when asked.",
        tools: [Tool.make("transfer", { description: "transfer", handler: () => AgentTask.run(task).pipe(Effect.map(Transfer.describe)) })]
      })
      const session = yield* AgentSession.start({ agent }).pipe(Effect.provide(Layer.succeed(Transfer.Transferer, transferer)))
      yield* session.run("transfer me")
      assert.strictEqual((yield* session.currentAgent)?.name, "front")
      assert.include(capture.writes.at(-1)!.text, "busy (DialCallStatus=busy)")
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(
        TextCapture.layer,
        ScriptedModel.layer([
          { when: { user: "transfer me", agent: "front" }, reply: { toolCalls: [{ name: "transfer" }] } },
          { when: { agent: "front" }, reply: (r) => ({ text: r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" ") : "" }) }
        ])
      ))
    ))
})
