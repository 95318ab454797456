/**
 * The agent ends the call and presses keys (issue 37), over real sockets on 127.0.0.1: on `/ws`
 * the goodbye arrives and then the socket closes with 1000 and the reason, and DTMF is refused
 * with a clear error the model is told; on `/twilio` the hang-up completes the call through
 * Twilio's REST API (a protocol-faithful mock of the call-update endpoint) and the stream closes,
 * and DTMF replaces the call's TwiML with `<Play digits>` and a `<Connect><Stream>` carrying the
 * resume token, on which a new stream (as Twilio opens it) goes on with the same call.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, CallTools } from "../../src/index.ts"
import * as TwilioRest from "../mocks/twilio-rest/calls.ts"
import { type Client, connect, start, wait } from "./harness.ts"
import * as TwilioStream from "./twilio-stream.ts"

const CALL_SID = "CA00000000000000000000000000000001"
const CALL: TwilioStream.TwilioCall = { accountSid: TwilioRest.ACCOUNT_SID, callSid: CALL_SID }
const startStream = (caller: Client, streamSid: string, customParameters: Record<string, string> = {}) =>
  TwilioStream.startStream(CALL, caller, streamSid, customParameters)
const press = TwilioStream.press
const desk = Agent.make({
  name: "desk",
  instructions: "Help; end the call when the caller is done; press keys when asked.",
  tools: [CallTools.endCall({ goodbye: "Thanks for calling, goodbye!" }), CallTools.sendDtmf()]
})
/** What the model was given last on each request (user text, or a tool's output). */
const heard: Array<string> = []
const model = ScriptedModel.layer([
  {
    when: (request) => {
      const last = request.last
      heard.push(last.kind === "user" ? `user: ${last.text}` : last.kind === "tool" ? last.outputs.map((o) => `tool ${o.name} ${o.isError ? "error: " : ""}${o.output}`).join("; ") : last.kind)
      return false
    },
    reply: {}
  },
  { when: { user: /bye|DTMF: 9/ }, reply: { toolCalls: [{ name: "end_call" }] } },
  { when: { user: /press 1|DTMF: 1/ }, reply: { toolCalls: [{ name: "send_dtmf", arguments: { digits: "2#" } }] } },
  { when: { toolOutput: /./, name: "send_dtmf" }, reply: { text: "I pressed them." } },
  { when: { agent: "desk" }, reply: (request) => ({ text: `Got ${request.last.kind === "user" ? request.last.text : "?"}.` }) }
])

const twilioApi = (url: string, streamUrl?: string) =>
  Option.some({
    accountSid: TwilioRest.ACCOUNT_SID,
    authToken: Redacted.make(TwilioRest.AUTH_TOKEN),
    baseUrl: url,
    streamUrl: streamUrl === undefined ? Option.none() : Option.some(streamUrl)
  })

describe("end call", () => {
  it.live("end call: on /ws the goodbye reaches the client, then the socket closes with 1000 and the agent's reason", () =>
    Effect.gen(function*() {
      const server = yield* start(desk, model)
      const client = yield* connect(`${server.ws}/ws`)
      yield* wait(() => client.waitFor((f) => f.type === "ready"))
      client.sendJson({ type: "user_text", text: "that's all, bye" })
      const closed = yield* wait(() => client.closed)
      assert.deepStrictEqual(closed, { code: 1000, reason: "the agent ended the call" })
      const said = client.frames.filter((f) => f.type === "agent_text").map((f) => f.delta).join("")
      assert.strictEqual(said, "Thanks for calling, goodbye!")
      const at = (match: (f: any) => boolean) => client.frames.findIndex(match)
      assert.isBelow(at((f) => f.type === "speech_finished"), at((f) => f.type === "close"))
      assert.deepInclude(client.frames.at(-1), { type: "close", reason: "the agent ended the call" })
    }).pipe(Effect.scoped), 20_000)

  it.live("end call: on /twilio the goodbye is marked, the call is completed through Twilio's REST API, and the stream closes", () =>
    Effect.gen(function*() {
      const rest = yield* TwilioRest.make([CALL_SID])
      const server = yield* start(desk, model, { twilioApi: twilioApi(rest.url) })
      const caller = yield* connect(`${server.ws}/twilio`)
      startStream(caller, "MZ1")
      press(caller, "MZ1", "9#")
      const closed = yield* wait(() => caller.closed)
      assert.deepStrictEqual(closed, { code: 1000, reason: "the agent ended the call" })
      assert.deepStrictEqual(rest.updates, [{ callSid: CALL_SID, params: { Status: "completed" } }])
      assert.isTrue(caller.frames.some((f) => f.event === "mark"), "the goodbye's mark")
      yield* wait(async () => {
        for (let i = 0; i < 200 && server.state.registry.open() > 0; i++) await new Promise((r) => setTimeout(r, 10))
      })
      assert.strictEqual(server.state.registry.open(), 0)
    }).pipe(Effect.scoped), 20_000)
})

describe("DTMF out", () => {
  it.live("DTMF out: on /twilio the call's TwiML plays the digits and reconnects with the resume token; the new stream is the same call", () =>
    Effect.gen(function*() {
      const rest = yield* TwilioRest.make([CALL_SID])
      const streamUrl = "wss://voice.example.com/twilio"
      const server = yield* start(desk, model, { twilioApi: twilioApi(rest.url, streamUrl), resumeSeconds: 30 })
      const first = yield* connect(`${server.ws}/twilio`)
      let second: Client | undefined
      // Twilio's part: the new TwiML stops this stream, plays the tones, opens the <Stream> it names.
      const reconnected = new Promise<Record<string, string>>((resolve) => {
        rest.onUpdate = ({ params }) => resolve(TwilioRest.readDtmfTwiml(params["Twiml"] ?? "").parameters)
      })
      startStream(first, "MZ1")
      press(first, "MZ1", "1#")
      const parameters = yield* wait(() => reconnected)
      const twiml = TwilioRest.readDtmfTwiml(rest.updates[0]!.params["Twiml"]!)
      assert.strictEqual(twiml.digits, "2#")
      assert.strictEqual(twiml.streamUrl, streamUrl)
      assert.match(parameters["resumeToken"]!, /^resume\./)
      // Twilio sends stop and closes the stream's socket itself.
      first.sendJson({ event: "stop", sequenceNumber: "9", streamSid: "MZ1", stop: { accountSid: TwilioRest.ACCOUNT_SID, callSid: CALL_SID } })
      first.socket.close(1000)
      yield* wait(() => first.closed)
      second = yield* connect(`${server.ws}/twilio`)
      startStream(second, "MZ2", parameters)
      press(second, "MZ2", "34#")
      const mark = yield* wait(() => second!.waitFor((f) => f.event === "mark", "the answer on the new stream"))
      assert.strictEqual(mark.streamSid, "MZ2")
      assert.strictEqual(server.state.resumer.size(), 1, "one call, not a new one")
      assert.deepStrictEqual(heard.slice(-1), ["user: DTMF: 34"], "the new stream's keys reach the same session")
    }).pipe(Effect.scoped), 30_000)

  it.live("DTMF out: on /twilio without API credentials the model is told how to enable it, and nothing is sent", () =>
    Effect.gen(function*() {
      heard.length = 0
      const server = yield* start(desk, model)
      const caller = yield* connect(`${server.ws}/twilio`)
      startStream(caller, "MZ1")
      press(caller, "MZ1", "1#")
      yield* wait(() => caller.waitFor((f) => f.event === "mark", "the reply after the refused tool"))
      const told = heard.findLast((h) => h.startsWith("tool send_dtmf error: "))
      assert.include(told, "twilio: DTMF needs Twilio's REST API: set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN")
    }).pipe(Effect.scoped), 20_000)

  it.live("DTMF out: on /ws the tool answers the model that /ws cannot send tones, and the session goes on", () =>
    Effect.gen(function*() {
      const server = yield* start(desk, model)
      const client = yield* connect(`${server.ws}/ws`)
      yield* wait(() => client.waitFor((f) => f.type === "ready"))
      client.sendJson({ type: "user_text", text: "press 1" })
      const output = yield* wait(() =>
        client.waitFor((f) => f.type === "conversation_item_added" && f.item._tag === "FunctionCallOutput", "the tool's output")
      )
      assert.isTrue(output.item.isError)
      assert.include(output.item.output, "/ws cannot send DTMF tones")
      yield* wait(() => client.waitFor((f) => f.type === "agent_text" && f.delta.includes("I pressed them"), "the reply"))
      client.sendJson({ type: "user_text", text: "hello" })
      yield* wait(() => client.waitFor((f) => f.type === "agent_text" && f.delta.includes("Got hello"), "the next answer"))
    }).pipe(Effect.scoped), 20_000)
})
