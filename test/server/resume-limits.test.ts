/**
 * Issue 34 and `BATON_MAX_SESSIONS`: a resumed call counts like a new one, once. A call resumed in
 * the process that holds it (a /ws client back, a phone stream reconnected) takes no second slot,
 * so at the limit it is let in; a call restored from the store (another process wrote it) takes a
 * slot, and at the limit it is refused the way a new call on that route is: on /ws with 503 and
 * the same words, on /twilio (whose `start` names the call) by closing the stream with 1013 and
 * the same words. Real sockets on 127.0.0.1; two services on one SQLite file make a fleet.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { sessionLimitReason } from "../../server/Limits.ts"
import * as Token from "../../server/Token.ts"
import { Agent } from "../../src/index.ts"
import { type Client, connect, start, type Started, wait } from "./harness.ts"

const desk = Agent.make({ name: "desk", instructions: "Answer." })
const model = ScriptedModel.layer([{ when: { agent: "desk" }, reply: (request) => ({ text: `Got ${request.last.kind === "user" ? request.last.text : "?"}.` }) }])

const CALL_SID = "CA00000000000000000000000000000007"
/** Twilio's first two messages on a stream, with the TwiML's <Parameter>s. */
const startStream = (caller: Client, streamSid: string, customParameters: Record<string, string> = {}) => {
  caller.sendJson({ event: "connected", protocol: "Call", version: "1.0.0" })
  caller.sendJson({
    event: "start",
    sequenceNumber: "1",
    streamSid,
    start: { streamSid, callSid: CALL_SID, tracks: ["inbound"], mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 }, customParameters }
  })
}
const press = (caller: Client, streamSid: string, digits: string) => {
  for (const [i, digit] of [...digits].entries()) caller.sendJson({ event: "dtmf", streamSid, sequenceNumber: String(i + 2), dtmf: { track: "inbound_track", digit } })
}
const until = (what: string, check: () => boolean, ms = 10_000) =>
  wait(async () => {
    for (let waited = 0; !check(); waited += 10) {
      if (waited > ms) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 10))
    }
  })
const pause = (ms: number) => wait(() => new Promise((r) => setTimeout(r, ms)))
/** An upgrade request's answer when it is refused before the upgrade (status and words). */
const refusedUpgrade = (url: string) => wait(() => fetch(url).then(async (r) => ({ status: r.status, text: await r.text() })))
const sessionsOpen = (server: Started) => server.state.registry.open()

/** A session's resume token, minted by the process that holds it. */
const tokenOf = (server: Started) =>
  Effect.gen(function*() {
    const [call] = server.state.resumer.list()
    assert.isDefined(call, "a call is live")
    return (yield* call!.mint).token
  })

/** A fleet shares BATON_TOKEN: it signs the resume tokens (and the access tokens of new calls). */
const SECRET = "resume-limits-shared-secret"
const access = (route: Token.Route) => `token=${Token.mint(Redacted.make(SECRET), 600, Date.now(), route).token}`

/** Two services on one SQLite file (a fleet): `b` takes one session at most. */
const fleet = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "baton-limits-"))),
  (folder) => Effect.sync(() => rmSync(folder, { recursive: true, force: true }))
).pipe(Effect.flatMap((folder) =>
  Effect.gen(function*() {
    const store = Option.some(Redacted.make(`sqlite:${join(folder, "fleet.db")}`))
    const a = yield* start(desk, model, { store, secret: SECRET, resumeSeconds: 30, maxLagMs: 0 })
    const b = yield* start(desk, model, { store, secret: SECRET, resumeSeconds: 30, maxLagMs: 0, maxSessions: 1 })
    return { a, b }
  })
))

describe("resumed calls and BATON_MAX_SESSIONS (issue 34)", () => {
  it.live("/ws in the same process: at the limit the client is let back in (its call holds its slot) and counted once", () =>
    Effect.gen(function*() {
      const server = yield* start(desk, model, { maxSessions: 1, resumeSeconds: 30, maxLagMs: 0 })
      const first = yield* connect(`${server.ws}/ws`)
      const ready = yield* wait(() => first.waitFor((f) => f.type === "ready"))
      first.socket.terminate()
      yield* pause(200)
      assert.strictEqual(sessionsOpen(server), 1, "the call waits for its client in its slot")
      const back = yield* connect(`${server.ws}/ws?resume=${encodeURIComponent(ready.resumeToken)}`)
      assert.deepInclude(yield* wait(() => back.waitFor((f) => f.type === "ready")), { resumed: true, sessionId: ready.sessionId })
      assert.strictEqual(sessionsOpen(server), 1, "counted once")
      assert.deepStrictEqual(yield* refusedUpgrade(`${server.url}/ws`), { status: 503, text: sessionLimitReason(1) })
      back.sendJson({ type: "user_text", text: "still there?" })
      yield* wait(() => back.waitFor((f) => f.type === "speech_finished", "the answer"))
      back.socket.close(1000)
      yield* until("the slot to be free", () => sessionsOpen(server) === 0)
    }).pipe(Effect.scoped), 30_000)

  it.live("/twilio in the same process: at the limit a stream reconnecting its call is let in and counted once; a new call's stream is closed with 1013", () =>
    Effect.gen(function*() {
      const server = yield* start(desk, model, { maxSessions: 1, resumeSeconds: 30, maxLagMs: 0 })
      const first = yield* connect(`${server.ws}/twilio`)
      startStream(first, "MZ1")
      yield* until("the call", () => server.state.resumer.size() === 1)
      const token = yield* tokenOf(server)
      first.socket.terminate() // the media stream drops: no stop
      yield* pause(200)
      assert.strictEqual(sessionsOpen(server), 1)

      const second = yield* connect(`${server.ws}/twilio`)
      startStream(second, "MZ2", { resumeToken: token })
      press(second, "MZ2", "34#")
      const mark = yield* wait(() => second.waitFor((f) => f.event === "mark", "the answer on the reconnected stream"))
      assert.strictEqual(mark.streamSid, "MZ2")
      assert.strictEqual(sessionsOpen(server), 1, "one call, one slot")

      const other = yield* connect(`${server.ws}/twilio`)
      startStream(other, "MZ3")
      assert.deepStrictEqual(yield* wait(() => other.closed), { code: 1013, reason: sessionLimitReason(1) })
      assert.deepStrictEqual(other.frames, [], "a refused stream is sent nothing")
      assert.strictEqual(server.state.resumer.size(), 1)

      second.sendJson({ event: "stop", streamSid: "MZ2" })
      assert.strictEqual((yield* wait(() => second.closed)).code, 1000)
      yield* until("the slot to be free", () => sessionsOpen(server) === 0)
    }).pipe(Effect.scoped), 30_000)

  it.live("/ws from the store: at the limit the resume is refused with the 503 and words a new call gets; with a slot free it is resumed and holds that slot", () =>
    Effect.gen(function*() {
      const { a, b } = yield* fleet
      const caller = yield* connect(`${a.ws}/ws?${access("ws")}`)
      const ready = yield* wait(() => caller.waitFor((f) => f.type === "ready"))
      caller.sendJson({ type: "user_text", text: "hello" })
      yield* wait(() => caller.waitFor((f) => f.type === "speech_finished", "the answer on a"))
      caller.socket.terminate()
      const occupant = yield* connect(`${b.ws}/ws?${access("ws")}`)
      yield* wait(() => occupant.waitFor((f) => f.type === "ready"))

      const fresh = yield* refusedUpgrade(`${b.url}/ws?${access("ws")}`)
      assert.deepStrictEqual(fresh, { status: 503, text: sessionLimitReason(1) })
      const resume = yield* refusedUpgrade(`${b.url}/ws?resume=${encodeURIComponent(ready.resumeToken)}`)
      assert.deepStrictEqual(resume, fresh, "refused as a new call is")
      assert.strictEqual(b.state.resumer.size(), 1, "nothing was restored")

      occupant.socket.close(1000)
      yield* until("b's slot to be free", () => sessionsOpen(b) === 0)
      const back = yield* connect(`${b.ws}/ws?resume=${encodeURIComponent(ready.resumeToken)}`)
      assert.deepInclude(yield* wait(() => back.waitFor((f) => f.type === "ready")), { resumed: true, sessionId: ready.sessionId })
      assert.strictEqual(sessionsOpen(b), 1, "the restored call holds a slot")
      assert.deepStrictEqual(yield* refusedUpgrade(`${b.url}/ws?${access("ws")}`), fresh)
      // the client drops and comes back to b: the call it holds is not counted again
      back.socket.terminate()
      yield* pause(200)
      const again = yield* connect(`${b.ws}/ws?resume=${encodeURIComponent(ready.resumeToken)}`)
      assert.deepInclude(yield* wait(() => again.waitFor((f) => f.type === "ready")), { resumed: true })
      assert.strictEqual(sessionsOpen(b), 1)
      again.socket.close(1000)
      yield* until("the restored call's slot to be given back", () => sessionsOpen(b) === 0)
    }).pipe(Effect.scoped), 40_000)

  it.live("/twilio from the store: at the limit the reconnecting stream is closed with the 1013 and words a new call's stream gets; with a slot free it is the same call", () =>
    Effect.gen(function*() {
      const { a, b } = yield* fleet
      const first = yield* connect(`${a.ws}/twilio?${access("twilio")}`)
      startStream(first, "MZ1")
      press(first, "MZ1", "12#")
      yield* wait(() => first.waitFor((f) => f.event === "mark", "the answer on a"))
      const token = yield* tokenOf(a)
      first.socket.terminate()
      const occupant = yield* connect(`${b.ws}/ws?${access("ws")}`)
      yield* wait(() => occupant.waitFor((f) => f.type === "ready"))

      const fresh = yield* connect(`${b.ws}/twilio?${access("twilio")}`)
      startStream(fresh, "MZ8")
      const freshClosed = yield* wait(() => fresh.closed)
      assert.deepStrictEqual(freshClosed, { code: 1013, reason: sessionLimitReason(1) })
      const refused = yield* connect(`${b.ws}/twilio?${access("twilio")}`)
      startStream(refused, "MZ2", { resumeToken: token })
      assert.deepStrictEqual(yield* wait(() => refused.closed), freshClosed, "refused as a new call's stream is")
      assert.strictEqual(b.state.resumer.size(), 1, "nothing was restored")

      occupant.socket.close(1000)
      yield* until("b's slot to be free", () => sessionsOpen(b) === 0)
      const second = yield* connect(`${b.ws}/twilio?${access("twilio")}`)
      startStream(second, "MZ3", { resumeToken: token })
      press(second, "MZ3", "34#")
      const mark = yield* wait(() => second.waitFor((f) => f.event === "mark", "the answer on b"))
      assert.strictEqual(mark.streamSid, "MZ3")
      assert.strictEqual(sessionsOpen(b), 1, "the restored call holds a slot")
      const [call] = b.state.resumer.list()
      const said = (yield* call!.line.session.history).items.flatMap((i) => i._tag === "Message" ? [`${i.role}: ${i.text}`] : [])
      assert.includeMembers(said, ["user: DTMF: 12", "user: DTMF: 34", "assistant: Got DTMF: 34."], "the same call, resumed")
      second.sendJson({ event: "stop", streamSid: "MZ3" })
      yield* until("the restored call's slot to be given back", () => sessionsOpen(b) === 0)
    }).pipe(Effect.scoped), 40_000)
})
