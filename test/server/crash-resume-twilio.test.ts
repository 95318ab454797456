/**
 * Issue 34 for a phone call: the real service (`baton serve --voice local` with a phone desk's
 * agents, test/server/fixtures/phone-desk.ts) twice on one SQLite file, SIGKILL between. The
 * call's Twilio Media Stream reconnects to the second process with its `resumeToken` parameter
 * (the token the first one POSTed to the app's status callback), and the call restored there is
 * a phone call as a new one would be: the agent's speech comes back as 20 ms µ-law frames with a
 * mark after each reply, the caller talking over it clears the line, the agent presses keys and
 * hangs up through Twilio's REST API (a protocol-faithful mock), and a drain leaves the line its
 * wait instead of moving it as a /ws call is moved.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { accessToken, type Service, type ServiceOptions, startService } from "../../examples/resume/service.ts"
import * as FliteTts from "../../layers/local/FliteTts.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as Mulaw from "../../services/Mulaw.ts"
import * as TwilioRest from "../mocks/twilio-rest/calls.ts"
import { speak } from "../voice/harness.ts"
import { type Client, connect, wait } from "./harness.ts"
import * as TwilioStream from "./twilio-stream.ts"

const SECRET = "crash-resume-twilio-secret"
const CALL_SID = "CA00000000000000000000000000000042"
const CALL: TwilioStream.TwilioCall = { accountSid: TwilioRest.ACCOUNT_SID, callSid: CALL_SID }
const startStream = (caller: Client, streamSid: string, customParameters: Record<string, string> = {}) =>
  TwilioStream.startStream(CALL, caller, streamSid, customParameters)
const press = TwilioStream.press
const STREAM_URL = "wss://voice.example.com/twilio"

const statusCallback = TwilioStream.statusCallback

/** A folder for the SQLite file, and the services started in it (killed at the end). */
const fixture = Effect.acquireRelease(
  Effect.sync(() => ({ folder: mkdtempSync(join(tmpdir(), "baton-crash-twilio-")), running: [] as Array<Service> })),
  ({ folder, running }) =>
    Effect.sync(() => {
      for (const service of running) service.child.kill("SIGKILL")
      rmSync(folder, { recursive: true, force: true })
    })
)

/** Starts `baton serve` with the phone desk's agents on the fixture's SQLite file `db` (killed at the end). */
const serveOn = (running: Array<Service>, options: Omit<ServiceOptions, "token" | "agents">) => () =>
  wait(async () => {
    const service = await startService({ ...options, token: SECRET, agents: "test/server/fixtures/phone-desk.ts" })
    running.push(service)
    return service
  })

/** A Twilio Media Stream socket to `service`'s /twilio, with a token for it. */
const stream = (service: Service) =>
  Effect.flatMap(wait(() => accessToken(service, SECRET, "twilio")), (token) => connect(`${service.ws}/twilio?token=${token}`))

/** The call on the first process: stream MZ1, keys 12# answered (its mark), then SIGKILL; what
 * the bridge POSTed to the status callback for MZ1 (its resume token). */
const callThenCrash = (serve: () => Effect.Effect<Service>, callback: { readonly posts: Array<any> }) =>
  Effect.gen(function*() {
    const first = yield* serve()
    const before = yield* stream(first)
    startStream(before, "MZ1")
    press(before, "MZ1", "12#")
    yield* wait(() => before.waitFor((f) => f.event === "mark", "the first answer's mark", 30_000))
    const status = callback.posts.findLast((p) => p.streamSid === "MZ1")
    assert.isDefined(status, "the bridge POSTed the call's resume token")
    yield* wait(() => first.crash())
    return status
  })

/** The call's stream reconnected to `service` as MZ2 with `resumeToken`, and keys 34# pressed. */
const resumed = (service: Service, resumeToken: string) =>
  Effect.map(stream(service), (caller) => {
    startStream(caller, "MZ2", { resumeToken })
    press(caller, "MZ2", "34#")
    return caller
  })

const until = (what: string, check: () => boolean, ms = 20_000) =>
  wait(async () => {
    for (let waited = 0; !check(); waited += 20) {
      if (waited > ms) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  })
/** The frames after index `from` that match. */
const after = (caller: Client, from: number, match: (f: any) => boolean) => caller.frames.slice(from).filter(match)

/** 16 kHz to the phone's 8 kHz: each pair of samples averaged (a crude low-pass, enough for speech). */
const toPhoneBand = (audio: AudioFrame.AudioFrame): AudioFrame.AudioFrame => {
  const out = new Int16Array(Math.floor(audio.data.length / 2))
  for (let i = 0; i < out.length; i++) out[i] = Math.round((audio.data[2 * i]! + audio.data[2 * i + 1]!) / 2)
  return AudioFrame.make(out, 8000)
}

describe("a phone call outlives its process (issue 34)", () => {
  it.live("a Twilio stream reconnected to another process is set up as a phone call: µ-law frames and marks, clear on barge-in, keys and hang-up through Twilio's REST API", () =>
    Effect.gen(function*() {
      const interruption = toPhoneBand(yield* speak("Wait, I only need the hours for Saturday please.").pipe(Effect.provide(FliteTts.layer({ voice: "rms" }))))
      const { folder, running } = yield* fixture
      const rest = yield* TwilioRest.make([CALL_SID])
      const callback = yield* statusCallback
      const serve = serveOn(running, {
        store: `sqlite:${join(folder, "phone.db")}`,
        voice: "local",
        env: {
          BATON_TWILIO_STATUS_URL: callback.url,
          TWILIO_ACCOUNT_SID: TwilioRest.ACCOUNT_SID,
          TWILIO_AUTH_TOKEN: TwilioRest.AUTH_TOKEN,
          BATON_TWILIO_API_URL: rest.url,
          BATON_TWILIO_STREAM_URL: STREAM_URL
        }
      })
      const status = yield* callThenCrash(serve, callback)

      const caller = yield* resumed(yield* serve(), status.resumeToken)
      const mark = yield* wait(() => caller.waitFor((f) => f.event === "mark", "the answer's mark on the new stream", 30_000))
      // the answer came as Twilio's media: 8 kHz µ-law, 20 ms a message, on this stream, then its mark
      const media = caller.frames.slice(0, caller.frames.indexOf(mark)).filter((f) => f.event === "media")
      assert.isAbove(media.length, 25, "at least half a second of the agent's voice")
      assert.isTrue(media.every((f) => f.streamSid === "MZ2"))
      const sizes = media.map((f) => Buffer.from(f.media.payload, "base64").length)
      assert.isTrue(sizes.every((n) => n > 0 && n <= 160), "never more than 20 ms a message")
      assert.isAbove(sizes.filter((n) => n === 160).length, sizes.length * 0.8, "20 ms of µ-law a message (a write's last one shorter)")
      assert.strictEqual(mark.streamSid, "MZ2")
      assert.match(mark.mark.name, /^speech:/)

      // barge-in: the agent reads a long list; half a second into its audio the caller talks over it (in real time)
      const atLong = caller.frames.length
      press(caller, "MZ2", "5#")
      yield* until("the long answer's audio", () => after(caller, atLong, (f) => f.event === "media").length > 0)
      yield* wait(() => new Promise((r) => setTimeout(r, 500)))
      const atTalk = caller.frames.length
      for (const frame of AudioFrame.split(AudioFrame.concat([interruption, AudioFrame.silence(1000, 8000)]), 20)) {
        caller.sendJson({ event: "media", streamSid: "MZ2", media: { track: "inbound", payload: Buffer.from(Mulaw.encode(frame.data)).toString("base64") } })
        yield* wait(() => new Promise((r) => setTimeout(r, 20)))
        if (after(caller, atTalk, (f) => f.event === "clear").length > 0) break
      }
      const clear = yield* wait(() => caller.waitFor((f) => caller.frames.indexOf(f) >= atTalk && f.event === "clear", "clear: the caller barged in", 20_000))
      assert.strictEqual(clear.streamSid, "MZ2")

      // the agent presses keys on the call: Twilio's REST API gets TwiML that plays them and reconnects the stream with a token
      press(caller, "MZ2", "1#")
      yield* until("the keys' update through the REST API", () => rest.updates.some((u) => u.params["Twiml"] !== undefined))
      const twiml = TwilioRest.readDtmfTwiml(rest.updates.find((u) => u.params["Twiml"] !== undefined)!.params["Twiml"]!)
      assert.deepInclude(twiml, { digits: "2#", streamUrl: STREAM_URL })
      assert.match(twiml.parameters["resumeToken"]!, new RegExp(`^resume\\.${status.sessionId}\\.`))

      // and hangs up: the call is completed through the REST API and the stream closed with the reason
      press(caller, "MZ2", "9#")
      assert.deepStrictEqual(yield* wait(() => caller.closed), { code: 1000, reason: "the agent ended the call" })
      assert.deepInclude(rest.updates.at(-1), { callSid: CALL_SID, params: { Status: "completed" } })
    }).pipe(Effect.scoped), 150_000)

  it.live("a phone call restored from the store keeps the drain's wait: its stream away, SIGTERM closes it after BATON_DRAIN_S instead of moving it", () =>
    Effect.gen(function*() {
      const { folder, running } = yield* fixture
      const callback = yield* statusCallback
      const serve = serveOn(running, { store: `sqlite:${join(folder, "drain.db")}`, env: { BATON_DRAIN_S: "1", BATON_TWILIO_STATUS_URL: callback.url } })
      const token = (yield* callThenCrash(serve, callback)).resumeToken
      assert.isString(token, "the bridge POSTed the call's resume token")

      const second = yield* serve()
      const caller = yield* resumed(second, token)
      yield* wait(() => caller.waitFor((f) => f.event === "mark", "the answer on the new stream", 30_000))
      caller.socket.terminate() // the stream drops without stop: the call waits for Twilio to reconnect it
      yield* wait(() => new Promise((r) => setTimeout(r, 300)))
      second.child.kill("SIGTERM")
      assert.strictEqual(yield* wait(() => second.exited), 0)
      assert.include(second.output(), "drained: 0 finished, 1 closed")
      assert.notInclude(second.output(), "moved to another node")
    }).pipe(Effect.scoped), 90_000)
})
