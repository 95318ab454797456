/**
 * Issue 34, "On /twilio": when a call's media stream drops, the call's TwiML connects a new
 * `<Connect><Stream>` whose `<Parameter name="resumeToken">` carries the token the bridge POSTed
 * to the app's status callback; the new stream is the same call. A Twilio Media Streams client
 * as Twilio speaks it (connected, start with its start block and customParameters, dtmf, stop)
 * over a real socket, and the app's status callback as a real HTTP server on 127.0.0.1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent } from "../../src/index.ts"
import { type Client, connect, start, wait } from "./harness.ts"
import * as TwilioStream from "./twilio-stream.ts"

const CALL: TwilioStream.TwilioCall = { accountSid: "AC00000000000000000000000000000000", callSid: "CA00000000000000000000000000000001" }
const startStream = (caller: Client, streamSid: string, customParameters: Record<string, string> = {}) =>
  TwilioStream.startStream(CALL, caller, streamSid, customParameters)
const press = TwilioStream.press

const agent = Agent.make({ name: "ivr", instructions: "Ask for the account number." })
const model = ScriptedModel.layer([{ when: { agent: "ivr" }, reply: (request) => ({ text: `Got ${request.last.kind === "user" ? request.last.text : "?"}.` }) }])

const statusCallback = TwilioStream.statusCallback

const until = (what: string, check: () => boolean, ms = 10_000) =>
  wait(async () => {
    for (let waited = 0; !check(); waited += 10) {
      if (waited > ms) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 10))
    }
  })

describe("Server /twilio resume (issue 34)", () => {
  it.live("a stream cut without stop leaves its call waiting; a new stream with the resumeToken parameter is the same call, and its next turn is answered", () =>
    Effect.gen(function*() {
      const callback = yield* statusCallback
      const server = yield* start(agent, model, { resumeSeconds: 30, twilioStatusUrl: Option.some(callback.url), maxLagMs: 0 })
      const first = yield* connect(`${server.ws}/twilio`)
      startStream(first, "MZ1")
      yield* until("the status callback", () => callback.posts.length > 0)
      const status = callback.posts[0]
      assert.deepInclude(status, { event: "resume_token", callSid: "CA00000000000000000000000000000001", streamSid: "MZ1" })
      assert.match(status.resumeToken, new RegExp(`^resume\\.${status.sessionId}\\.`))
      press(first, "MZ1", "12#")
      yield* wait(() => first.waitFor((f) => f.event === "mark", "the mark after the first answer"))
      first.socket.terminate() // the media stream drops: no stop

      yield* wait(() => new Promise((r) => setTimeout(r, 200)))
      const call = server.state.resumer.find(status.sessionId)
      assert.isDefined(call, "the call waits for its stream")
      const second = yield* connect(`${server.ws}/twilio`)
      startStream(second, "MZ2", { resumeToken: status.resumeToken })
      press(second, "MZ2", "34#")
      const mark = yield* wait(() => second.waitFor((f) => f.event === "mark", "the mark after the second answer"))
      assert.strictEqual(mark.streamSid, "MZ2")
      assert.strictEqual(server.state.resumer.size(), 1, "one call, not a new one")
      const said = (yield* call!.line.session.history).items.filter((i) => i._tag === "Message").map((i) => `${i.role}: ${(i as { text: string }).text}`)
      assert.deepStrictEqual(said.slice(-4), ["user: DTMF: 12", "assistant: Got DTMF: 12.", "user: DTMF: 34", "assistant: Got DTMF: 34."])
      // the new stream's start gave the app a token for it too
      yield* until("a second status callback", () => callback.posts.some((p) => p.streamSid === "MZ2"))

      second.sendJson({ event: "stop", streamSid: "MZ2", stop: { callSid: "CA00000000000000000000000000000001" } })
      assert.strictEqual((yield* wait(() => second.closed)).code, 1000)
      yield* until("the call to end", () => server.state.registry.open() === 0 && server.state.resumer.size() === 0)
    }).pipe(Effect.scoped), 30_000)

  it.live("a stream whose resumeToken is refused is closed with the reason, and no call starts", () =>
    Effect.gen(function*() {
      const server = yield* start(agent, model, { resumeSeconds: 30 })
      const caller = yield* connect(`${server.ws}/twilio`)
      startStream(caller, "MZ9", { resumeToken: "resume.session_x.1.AAAA" })
      assert.deepStrictEqual(yield* wait(() => caller.closed), { code: 4400, reason: "resume token malformed: start a new session" })
      assert.strictEqual(server.state.resumer.size(), 0)
      assert.deepStrictEqual(caller.frames, [])
    }).pipe(Effect.scoped), 20_000)
})
