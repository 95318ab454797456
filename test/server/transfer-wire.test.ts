/**
 * Transfers wired into the service's transports (issue 35), over real sockets on 127.0.0.1: the
 * service started with its Twilio settings pointing at the REST mock (test/mocks/twilio-rest),
 * a Media Stream call as Twilio opens one, and an agent whose tool runs `Transfer.cold`. The
 * test plays Twilio's part on the stream: the call's TwiML replaced stops the stream, and the
 * TwiML the service answers a dial with opens the next one. A `/ws` call's transfer rings the
 * operator connected to `/operator`. Without settings, a transfer is `Failed` saying what to
 * configure. (maxLagMs 0: the lag refusal of new streams is not what is tested, and the machine
 * is shared.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted, Schema } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentTask, Tool } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"
import * as Mock from "../mocks/twilio-rest/transfers.ts"
import { type Client, connect, freePort, start, wait } from "./harness.ts"
import * as TwilioStream from "./twilio-stream.ts"

const CALL_SID = "CA" + "d".repeat(32)
const CALL: TwilioStream.TwilioCall = { accountSid: Mock.ACCOUNT_SID, callSid: CALL_SID }
const startStream = (caller: Client, streamSid: string, customParameters: Record<string, string> = {}) =>
  TwilioStream.startStream(CALL, caller, streamSid, customParameters)
const press = TwilioStream.press
const stop = (caller: Client, streamSid: string) => TwilioStream.stopStream(CALL, caller, streamSid)
const BUSY = "+15550000004"
const ANSWERS = "+15550000001"

const transferTool = Tool.make("transfer", {
  description: "Transfer the caller to a person",
  parameters: Schema.Struct({ to: Schema.String }),
  handler: (args) => AgentTask.run(Transfer.cold(args.to, { ringTimeout: "20 seconds" })).pipe(Effect.map(Transfer.describe))
})
const desk = Agent.make({ name: "desk", instructions: "Transfer when asked.", tools: [transferTool] })
const warmTool = Tool.make("transfer", {
  description: "Transfer the caller to a person, briefed",
  parameters: Schema.Struct({ to: Schema.String }),
  handler: (args) =>
    AgentTask.run(Transfer.warm({ to: args.to, briefing: "A caller about a double charge.", ringTimeout: "20 seconds" })).pipe(Effect.map(Transfer.describe))
})
const warmDesk = Agent.make({ name: "desk", instructions: "Transfer when asked.", tools: [warmTool] })

/** What the model was given last on each request (the caller's keys, or a tool's output). */
const model = (heard: Array<string>) =>
  ScriptedModel.layer([
    {
      when: (request) => {
        const last = request.last
        heard.push(last.kind === "user" ? `user: ${last.text}` : last.kind === "tool" ? last.outputs.map((o) => o.output).join("; ") : last.kind)
        return false
      },
      reply: {}
    },
    { when: { user: "DTMF: 1" }, reply: { toolCalls: [{ name: "transfer", arguments: { to: BUSY } }] } },
    { when: { user: "DTMF: 2" }, reply: { toolCalls: [{ name: "transfer", arguments: { to: ANSWERS } }] } },
    { when: { toolOutput: /busy/, name: "transfer" }, reply: { text: "Sales is busy; I can help you myself." } },
    { when: { agent: "desk" }, reply: { text: "Press 1 or 2." } }
  ])

/** The service's Twilio settings: the REST mock at `baseUrl`; Twilio opens the call's streams at `streamUrl`. */
const twilioApi = (baseUrl: string, streamUrl: string) =>
  Option.some({ accountSid: Mock.ACCOUNT_SID, authToken: Redacted.make(Mock.AUTH_TOKEN), baseUrl, streamUrl: Option.some(streamUrl) })

/** The resume token a TwiML `<Connect><Stream>` hands the next stream. */
const resumeTokenOf = (twiml: string) => /<Parameter name="resumeToken" value="([^"]*)"/.exec(twiml)![1]!

/**
 * Twilio's part of the call: TwiML matching `replaces` (a `<Dial>`, a `<Conference>`) stops the
 * stream that carries the call; `open` connects the next stream to the service and starts it.
 */
const twilioSide = (rest: Mock.TransferMock, ws: string, replaces: RegExp) => {
  const streams: Array<{ caller: Client; sid: string }> = []
  rest.onTwiml = (_callSid, twiml) => {
    if (!replaces.test(twiml)) return
    const { caller, sid } = streams.at(-1)!
    stop(caller, sid)
  }
  const open = (sid: string, customParameters: Record<string, string> = {}) =>
    Effect.map(connect(`${ws}/twilio`), (caller) => {
      streams.push({ caller, sid })
      startStream(caller, sid, customParameters)
      return caller
    })
  return { open }
}

const until = (what: string, check: () => boolean, ms = 10_000) =>
  wait(async () => {
    for (let waited = 0; !check(); waited += 10) {
      if (waited > ms) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 10))
    }
  })

describe("transfers wired into /twilio", () => {
  it.live("a /twilio call transfers through the REST mock: busy gives the floor back and the agent speaks on the stream Twilio reopens; answered ends the call and closes the stream with 1000", () =>
    Effect.gen(function*() {
      const heard: Array<string> = []
      const rest = yield* Mock.make([CALL_SID], { [BUSY]: { answers: "busy" }, [ANSWERS]: { answers: "press", digit: "1" } })
      const port = yield* freePort
      const server = yield* start(desk, model(heard), {
        port,
        resumeSeconds: 30,
        maxLagMs: 0,
        twilioApi: twilioApi(rest.url, `ws://127.0.0.1:${port}/twilio`)
      })
      // Twilio's part: a <Dial> replacing the call's TwiML stops the stream that carries it.
      const twilio = twilioSide(rest, server.ws, /<Dial/)
      const first = yield* twilio.open("MZ1")
      press(first, "MZ1", "1#")

      // Busy: the dial's action is answered with the stream back to the agent, which Twilio opens.
      yield* until("the stream back to the agent", () => (rest.twiml.get(CALL_SID) ?? []).some((t) => /<Connect><Stream/.test(t)))
      const streamBack = rest.twiml.get(CALL_SID)!.find((t) => /<Connect><Stream/.test(t))!
      assert.strictEqual(/<Stream url="([^"]*)"/.exec(streamBack)![1], `ws://127.0.0.1:${port}/twilio`)
      first.socket.close(1000)
      const second = yield* twilio.open("MZ2", { resumeToken: resumeTokenOf(streamBack) })
      const mark = yield* wait(() => second.waitFor((f) => f.event === "mark", "the agent's words after the busy transfer"))
      assert.strictEqual(mark.streamSid, "MZ2")
      assert.include(heard.join("\n"), "The transfer failed: the line was busy (DialCallStatus=busy)")
      assert.strictEqual(server.state.registry.open(), 1, "the same call, resumed")
      const busyDial = rest.posted.find((p) => p.params["DialCallStatus"] === "busy")!
      assert.strictEqual(busyDial.status, 200)

      // Answered: the person picks up, the call is theirs, the stream closes cleanly and the call ends.
      press(second, "MZ2", "2#")
      const closed = yield* wait(() => second.closed)
      assert.strictEqual(closed.code, 1000)
      assert.strictEqual(closed.reason, "the call was transferred (CallStatus=in-progress)")
      yield* until("the call ended", () => server.state.registry.open() === 0)
      yield* until("the dial's action", () => rest.posted.some((p) => p.params["DialCallStatus"] === "completed"))
      assert.strictEqual(rest.posted.find((p) => p.params["DialCallStatus"] === "completed")!.answer, "<Response><Hangup/></Response>")
      // Every callback was signed and accepted.
      assert.deepStrictEqual(rest.posted.map((p) => p.status), rest.posted.map(() => 200))
    }).pipe(Effect.scoped), 30_000)

  it.live("a warm transfer on /twilio: the caller waits in the conference, the person hears the briefing and declines, the caller comes back on a new stream and the agent tells them", () =>
    Effect.gen(function*() {
      const heard: Array<string> = []
      const rest = yield* Mock.make([CALL_SID], { [BUSY]: { answers: "press", digit: "2" } })
      const port = yield* freePort
      const settings = {
        port,
        resumeSeconds: 30,
        maxLagMs: 0,
        twilioApi: twilioApi(rest.url, `ws://127.0.0.1:${port}/twilio`)
      }
      const server = yield* start(warmDesk, model(heard), { ...settings, twilioFrom: Option.some("+15550009999") })
      const twilio = twilioSide(rest, server.ws, /<Conference/)
      const first = yield* twilio.open("MZ1")
      press(first, "MZ1", "1#")
      yield* until("the stream back to the agent", () => (rest.twiml.get(CALL_SID) ?? []).some((t) => /<Connect><Stream/.test(t)))
      const [hold, streamBack] = rest.twiml.get(CALL_SID)!
      assert.match(hold!, /<Conference startConferenceOnEnter="false"/)
      assert.deepStrictEqual(rest.heard.get(BUSY), ["A caller about a double charge.", "Press 1 to take the call, or any other key to decline."])
      first.socket.close(1000)
      const second = yield* twilio.open("MZ2", { resumeToken: resumeTokenOf(streamBack!) })
      yield* wait(() => second.waitFor((f) => f.event === "mark", "the agent's words after the decline"))
      assert.include(heard.join("\n"), "The person declined the transfer (the person pressed 2 after the briefing)")
    }).pipe(Effect.scoped), 30_000)

  it.live("a warm transfer on /twilio without BATON_TWILIO_FROM is Failed saying so, and the caller's call is not touched", () =>
    Effect.gen(function*() {
      const heard: Array<string> = []
      const rest = yield* Mock.make([CALL_SID], {})
      const server = yield* start(warmDesk, model(heard), {
        maxLagMs: 0,
        twilioApi: twilioApi(rest.url, "wss://voice.example.com/twilio")
      })
      const caller = yield* connect(`${server.ws}/twilio`)
      startStream(caller, "MZ1")
      press(caller, "MZ1", "1#")
      yield* until("the tool's output", () => heard.some((h) => h.startsWith("The transfer could not be made")))
      assert.include(heard.find((h) => h.startsWith("The transfer could not be made"))!, "set BATON_TWILIO_FROM")
      assert.strictEqual(rest.twiml.size, 0)
    }).pipe(Effect.scoped), 20_000)

  it.live("without Twilio's settings a /twilio transfer is Failed at once, saying what to set, and the agent keeps the floor", () =>
    Effect.gen(function*() {
      const heard: Array<string> = []
      const server = yield* start(desk, model(heard), { maxLagMs: 0 })
      const caller = yield* connect(`${server.ws}/twilio`)
      startStream(caller, "MZ1")
      press(caller, "MZ1", "1#")
      yield* until("the tool's output", () => heard.some((h) => h.startsWith("The transfer could not be made")))
      assert.include(heard.find((h) => h.startsWith("The transfer could not be made"))!, "set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN")
    }).pipe(Effect.scoped), 20_000)

  it.live("Twilio's callback route: unsigned or wrongly signed posts are refused with 403, a signed one for no transfer is 404", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const server = yield* start(desk, model([]), {
        port,
        maxLagMs: 0,
        twilioApi: twilioApi("http://127.0.0.1:9", `ws://127.0.0.1:${port}/twilio`)
      })
      const url = `${server.url}/twilio/transfer/nope/dial`
      const post = (signature: string | undefined) =>
        wait(() =>
          fetch(url, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", ...(signature ? { "x-twilio-signature": signature } : {}) },
            body: "DialCallStatus=completed"
          }).then((r) => r.status)
        )
      const { signature } = yield* Effect.promise(() => import("../../server/TwilioTransfer.ts"))
      assert.strictEqual(yield* post(undefined), 403)
      assert.strictEqual(yield* post(signature(Redacted.make("another token"), url, { DialCallStatus: "completed" })), 403)
      assert.strictEqual(yield* post(signature(Redacted.make(Mock.AUTH_TOKEN), url, { DialCallStatus: "completed" })), 404)
    }).pipe(Effect.scoped), 20_000)
})

const frontDesk = Agent.make({ name: "front", instructions: "Transfer to a person when asked.", tools: [transferTool] })
const wsModel = (heard: Array<string>) =>
  ScriptedModel.layer([
    {
      when: (request) => {
        const last = request.last
        if (last.kind === "tool") heard.push(last.outputs.map((o) => o.output).join("; "))
        return false
      },
      reply: {}
    },
    { when: { user: /person/ }, reply: { toolCalls: [{ name: "transfer", arguments: { to: "sam" } }] } },
    { when: { toolOutput: /declined/, name: "transfer" }, reply: { text: "Sam cannot take the call; I will help you." } },
    { when: { toolOutput: /answered/, name: "transfer" }, reply: { text: "Sam is with you now." } },
    { when: { agent: "front" }, reply: { text: "How can I help?" } }
  ])

describe("transfers wired into /ws", () => {
  it.live("a /ws call's transfer rings the operator on /operator: a decline gives the floor back and the agent tells the caller; an accept is Answered and the operator takes the floor", () =>
    Effect.gen(function*() {
      const heard: Array<string> = []
      const server = yield* start(frontDesk, wsModel(heard), { maxLagMs: 0 })
      const operator = yield* connect(`${server.ws}/operator/ws?name=sam`)
      const caller = yield* connect(`${server.ws}/ws`)
      const ready = yield* wait(() => caller.waitFor((f) => f.type === "ready"))

      caller.sendJson({ type: "user_text", text: "a person please" })
      const first = yield* wait(() => operator.waitFor((f) => f.type === "offer", "the first offer"))
      assert.strictEqual(first.offer.to, "sam")
      assert.strictEqual(first.offer.session, ready.sessionId)
      operator.sendJson({ type: "decline", offer: first.offer.id, reason: "on another call" })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_text" && /cannot take the call/.test(f.delta), "the agent's words after the decline"))
      assert.include(heard.join("\n"), "The person declined the transfer (sam declined: on another call)")

      caller.sendJson({ type: "user_text", text: "a person please, again" })
      const second = yield* wait(() => operator.waitFor((f) => f.type === "offer" && f.offer.id !== first.offer.id, "the second offer"))
      operator.sendJson({ type: "accept", offer: second.offer.id })
      const handoff = yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.to === "sam", "the operator taking the floor"))
      assert.strictEqual(handoff.kind, "take_over")
      // The tool has its outcome (the operator took the floor in the step the transfer returned).
      yield* wait(() => caller.waitFor(() => caller.frames.filter((f) => f.type === "function_tools_executed").length === 2, "the tool's outcome"))
      const outputs = caller.frames.filter((f) => f.type === "function_tools_executed").flatMap((f) => f.calls.map((c: any) => c.output.output))
      assert.deepStrictEqual(outputs.map((o: string) => o.split(" (")[0]), ["The person declined the transfer", "The transfer was answered"])
      assert.include(outputs[1], "(sam accepted)")
    }).pipe(Effect.scoped), 30_000)

  it.live("a /ws transfer with no operator online is NoAnswer at the ring timeout, and the agent keeps the floor", () =>
    Effect.gen(function*() {
      const heard: Array<string> = []
      const quick = Tool.make("transfer", {
        description: "Transfer the caller to a person",
        parameters: Schema.Struct({ to: Schema.String }),
        handler: (args) => AgentTask.run(Transfer.cold(args.to, { ringTimeout: "300 millis" })).pipe(Effect.map(Transfer.describe))
      })
      const server = yield* start(Agent.make({ name: "front", instructions: "Transfer when asked.", tools: [quick] }), wsModel(heard), { maxLagMs: 0 })
      const caller = yield* connect(`${server.ws}/ws`)
      yield* wait(() => caller.waitFor((f) => f.type === "ready"))
      caller.sendJson({ type: "user_text", text: "a person please" })
      yield* until("the tool's output", () => heard.length > 0)
      assert.strictEqual(heard[0], "The transfer failed: nobody answered (no operator online). Tell the caller and offer another way to help.")
    }).pipe(Effect.scoped), 20_000)
})
