/**
 * Issue 34, "On /ws": a client that loses its socket comes back with its resume token and keeps
 * its call. Real sockets on 127.0.0.1: the session goes on while the client is away, the next
 * client gets the conversation so far and the floor holder answers it; bad, expired and other
 * sessions' tokens are refused with a close code and reason; one client at a time; a drain with
 * a durable store moves /ws clients at once and leaves phone lines their wait.
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Deferred, Effect, Fiber, Option, Redacted } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as Config from "../../server/Config.ts"
import * as Run from "../../server/Run.ts"
import * as Token from "../../server/Token.ts"
import { Agent, Handoff, Tool } from "../../src/index.ts"
import { type Client, connect, start, wait } from "./harness.ts"

const weather = Agent.make({
  name: "weather",
  instructions: "You answer weather questions.",
  onEnter: Agent.reply({ instructions: "greet" }).pipe(Effect.asVoid)
})
const front = Agent.make({
  name: "front",
  instructions: "You are the front desk.",
  tools: [Tool.make("transfer_to_weather", { description: "to weather", handler: () => Effect.succeed(Handoff.to(weather)) })]
})
const GREETING_PARTS = ["Weather desk here. ", "Sunny all week, ", "with a light breeze ", "on Thursday."]
const GREETING = GREETING_PARTS.join("")
const model = ScriptedModel.layer([
  { when: { user: "weather" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { instructions: "greet" }, reply: { text: GREETING_PARTS, chunkDelay: "150 millis" } },
  { when: { user: "hello", agent: "weather" }, reply: { text: "Weather again: still sunny." } },
  { when: { user: "hello" }, reply: { text: "Hello from the front desk." } }
])

const SECRET = "s3cret-for-resume"

const ready = (client: Client) => wait(() => client.waitFor((f) => f.type === "ready", "ready"))
const sleep = (ms: number) => wait(() => new Promise((r) => setTimeout(r, ms)))
const until = (what: string, check: () => boolean, ms = 10_000) =>
  wait(async () => {
    for (let waited = 0; !check(); waited += 10) {
      if (waited > ms) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 10))
    }
  })
/** A resume attempt that is refused: the close the socket got, and every frame before it. */
const refused = (url: string) =>
  Effect.gen(function*() {
    const client = yield* connect(url)
    const closed = yield* wait(() => client.closed)
    return { ...closed, frames: client.frames }
  })

describe("resuming a /ws session (issue 34)", () => {
  it.live("a client back within BATON_RESUME_S gets resumed:true, the same sessionId, the history with what the agent said while it was away, and the agent holding the floor answers its next turn", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { resumeSeconds: 30, secret: SECRET })
      const minted = yield* wait(() =>
        fetch(`${server.url}/token`, { method: "POST", headers: { authorization: `Bearer ${SECRET}` } }).then((r) => r.json() as Promise<{ token: string }>)
      )
      const first = yield* connect(`${server.ws}/ws?token=${minted.token}`)
      const hello = yield* ready(first)
      assert.match(hello.sessionId, /^session_/)
      assert.match(hello.resumeToken, /^resume\.session_/)
      assert.isUndefined(hello.resumed)
      first.sendJson({ type: "user_text", text: "weather please" })
      yield* wait(() => first.waitFor((f) => f.type === "agent_handoff" && f.to === "weather", "the handoff"))
      yield* wait(() => first.waitFor((f) => f.type === "agent_text" && f.agent === "weather", "the greeting starting"))
      first.socket.terminate() // the socket is cut mid-reply, no close frame

      // The session goes on without a client: the greeting is said to its end.
      const call = server.state.resumer.find(hello.sessionId)
      assert.isDefined(call)
      yield* call!.line.session.idle
      assert.strictEqual(server.state.registry.open(), 1)
      const heardBeforeTheCut = first.frames.filter((f) => f.type === "agent_text").map((f) => f.delta).join("")
      assert.isBelow(heardBeforeTheCut.length, GREETING.length, "the cut came before the greeting ended")

      // The resume needs no access token: the resume token is the service's own, for this session.
      const second = yield* connect(`${server.ws}/ws?resume=${encodeURIComponent(hello.resumeToken)}`)
      const back = yield* ready(second)
      assert.strictEqual(back.resumed, true)
      assert.strictEqual(back.sessionId, hello.sessionId)
      assert.strictEqual(back.agent, "weather")
      assert.notStrictEqual(back.resumeToken, undefined)
      const history = yield* wait(() => second.waitFor((f) => f.type === "history", "history"))
      assert.strictEqual(second.frames.indexOf(history), second.frames.indexOf(back) + 1, "history comes right after ready")
      const items = history.items as Array<any>
      const user = items.findIndex((i) => i._tag === "Message" && i.role === "user" && i.text === "weather please")
      const handoff = items.findIndex((i) => i._tag === "AgentHandoff" && i.from === "front" && i.to === "weather")
      const greeting = items.findIndex((i) => i._tag === "Message" && i.role === "assistant" && i.agent === "weather" && i.text === GREETING)
      assert.isAtLeast(user, 0, JSON.stringify(items))
      assert.isAbove(handoff, user)
      assert.isAbove(greeting, handoff, "the words said while the client was away are in the history, whole")
      assert.isFalse(items[greeting].interrupted)
      assert.strictEqual(new Set(items.map((i) => i.id)).size, items.length, "every item has its own id")

      second.sendJson({ type: "user_text", text: "hello" })
      yield* wait(() => second.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "weather's answer"))
      const answer = second.frames.filter((f) => f.type === "agent_text").map((f) => f.delta).join("")
      assert.strictEqual(answer, "Weather again: still sunny.")
      assert.strictEqual(server.state.registry.open(), 1, "one session all along")
      assert.strictEqual(server.state.registry.total(), 1)
    }).pipe(Effect.scoped), 30_000)

  it.live("after BATON_RESUME_S without its client the session is closed, and its still-unexpired token is refused with 4404", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { resumeSeconds: 2 })
      const first = yield* connect(`${server.ws}/ws`)
      const hello = yield* ready(first)
      first.socket.terminate()
      yield* sleep(1000)
      assert.strictEqual(server.state.registry.open(), 1, "kept during the grace period")
      yield* until("the session to close", () => server.state.registry.open() === 0, 5000)
      assert.isUndefined(server.state.resumer.find(hello.sessionId))
      // the token is good for twice the grace: what refuses it now is the session being gone
      assert.isAbove(hello.resumeExpiresAt * 1000, Date.now())
      const late = yield* refused(`${server.ws}/ws?resume=${hello.resumeToken}`)
      assert.strictEqual(late.code, 4404)
      assert.strictEqual(late.reason, "the session ended or is not here: start a new session")
      assert.deepStrictEqual(late.frames, [])
    }).pipe(Effect.scoped), 20_000)

  it.live("a client that closes with 1000 ends its session at once: nothing waits for it", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { resumeSeconds: 30 })
      const client = yield* connect(`${server.ws}/ws`)
      const hello = yield* ready(client)
      client.socket.close(1000, "bye")
      yield* until("the session to close", () => server.state.registry.open() === 0, 5000)
      assert.strictEqual((yield* refused(`${server.ws}/ws?resume=${hello.resumeToken}`)).code, 4404)
    }).pipe(Effect.scoped), 20_000)

  it.live("malformed, foreign, expired and other sessions' tokens are refused with a close code and reason; nothing else happens", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { resumeSeconds: 30, secret: SECRET })
      const mint = () => fetch(`${server.url}/token`, { method: "POST", headers: { authorization: `Bearer ${SECRET}` } }).then((r) => r.json() as Promise<{ token: string }>)
      const a = yield* connect(`${server.ws}/ws?token=${(yield* wait(mint)).token}`)
      const b = yield* connect(`${server.ws}/ws?token=${(yield* wait(mint)).token}`)
      const readyA = yield* ready(a)
      const readyB = yield* ready(b)
      const secret = Redacted.make(SECRET)
      const tries: Array<[string, number, string]> = [
        ["nonsense", 4400, "resume token malformed: start a new session"],
        [(yield* wait(mint)).token, 4400, "resume token malformed: start a new session"], // an access token is no resume token
        [Token.mintResume(Redacted.make("another service"), readyA.sessionId, 60, Date.now()).token, 4401, "resume token not signed by this service: start a new session"],
        [Token.mintResume(secret, readyA.sessionId, -5, Date.now()).token, 4401, "resume token expired: start a new session"],
        // A's token with B's id in it: a token resumes only its own session
        [readyA.resumeToken.replace(readyA.sessionId, readyB.sessionId), 4401, "resume token not signed by this service: start a new session"],
        [Token.mintResume(secret, "session_none", 60, Date.now()).token, 4404, "the session ended or is not here: start a new session"]
      ]
      for (const [token, code, reason] of tries) {
        const answer = yield* refused(`${server.ws}/ws?resume=${encodeURIComponent(token)}`)
        assert.deepStrictEqual(answer, { code, reason, frames: [] }, token)
      }
      assert.strictEqual(server.state.registry.open(), 2)
      assert.strictEqual(server.state.registry.total(), 2)
      // A and B were not disturbed
      for (const client of [a, b]) {
        assert.isFalse(client.frames.some((f) => f.type === "close"))
        client.sendJson({ type: "user_text", text: "hello" })
        yield* wait(() => client.waitFor((f) => f.type === "speech_finished", "the reply"))
      }
    }).pipe(Effect.scoped), 30_000)

  it("resume tokens: verified until they expire; a tampered or foreign one is not; never an access token", () => {
    const secret = Redacted.make("k")
    const { token, expiresAt } = Token.mintResume(secret, "session_7", 60, 1_000_500)
    assert.strictEqual(expiresAt, 1061)
    assert.deepStrictEqual(Token.verifyResume(secret, token, 1_000_500), { _tag: "ok", sessionId: "session_7" })
    assert.deepStrictEqual(Token.verifyResume(secret, token, 1_061_000), { _tag: "ok", sessionId: "session_7" })
    assert.deepStrictEqual(Token.verifyResume(secret, token, 1_061_001), { _tag: "refused", reason: "expired" })
    assert.deepStrictEqual(Token.verifyResume(Redacted.make("other"), token, 1_000_500), { _tag: "refused", reason: "bad signature" })
    assert.deepStrictEqual(Token.verifyResume(secret, token.replace("session_7", "session_8"), 1_000_500), { _tag: "refused", reason: "bad signature" })
    assert.deepStrictEqual(Token.verifyResume(secret, `${token}x`, 1_000_500), { _tag: "refused", reason: "malformed" })
    assert.strictEqual(Token.verify(secret, token, "ws", 1_000_500), "malformed")
    assert.deepStrictEqual(Token.verifyResume(secret, Token.mint(secret, 60, 1_000_500).token, 1_000_500), { _tag: "refused", reason: "malformed" })
  })

  it.live("while connected, a client gets a fresh resume_token every half of BATON_RESUME_S; the newest one resumes", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { resumeSeconds: 1 })
      const first = yield* connect(`${server.ws}/ws`)
      const hello = yield* ready(first)
      const fresh = () => first.frames.filter((f) => f.type === "resume_token")
      yield* until("two fresh tokens", () => fresh().length >= 2, 3000)
      const newest = fresh().at(-1)
      assert.notStrictEqual(newest.resumeToken, hello.resumeToken)
      assert.isAtLeast(newest.expiresAt, hello.resumeExpiresAt)
      first.socket.terminate()
      const second = yield* connect(`${server.ws}/ws?resume=${newest.resumeToken}`)
      assert.strictEqual((yield* ready(second)).sessionId, hello.sessionId)
    }).pipe(Effect.scoped), 20_000)

  it.live("two clients resuming the same session: the later one holds it, the earlier one is closed with 4409", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { resumeSeconds: 30 })
      const first = yield* connect(`${server.ws}/ws`)
      const hello = yield* ready(first)
      first.socket.terminate()
      const early = yield* connect(`${server.ws}/ws?resume=${hello.resumeToken}`)
      assert.strictEqual((yield* ready(early)).resumed, true)
      const late = yield* connect(`${server.ws}/ws?resume=${hello.resumeToken}`)
      assert.strictEqual((yield* ready(late)).sessionId, hello.sessionId)
      const kicked = yield* wait(() => early.closed)
      assert.deepStrictEqual(kicked, { code: 4409, reason: "another connection resumed this session" })
      assert.deepInclude(early.frames.at(-1), { type: "close", reason: "another connection resumed this session" })
      late.sendJson({ type: "user_text", text: "hello" })
      yield* wait(() => late.waitFor((f) => f.type === "speech_finished", "the reply"))
      assert.isFalse(early.frames.some((f) => f.type === "agent_text"), "one writer: the earlier client hears nothing more")
      assert.strictEqual(server.state.registry.open(), 1)
    }).pipe(Effect.scoped), 20_000)

  it.live("a drain with a durable store tells each /ws client to reconnect (its token) and closes it with 1012 at once; a phone line keeps the drain's wait", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { resumeSeconds: 30, store: Option.some(Redacted.make(`sqlite:${join(mkdtempSync(join(tmpdir(), "baton-resume-")), "drain.db")}`)) })
      const browser = yield* connect(`${server.ws}/ws`)
      const hello = yield* ready(browser)
      const phone = yield* connect(`${server.ws}/twilio`)
      phone.sendJson({ event: "connected", protocol: "Call", version: "1.0.0" })
      phone.sendJson({ event: "start", streamSid: "MZ1", start: { streamSid: "MZ1", callSid: "CA1" } })
      yield* until("both sessions open", () => server.state.registry.open() === 2)
      const urgent = yield* Deferred.make<void>()
      let phoneGone = false
      void phone.closed.then(() => void (phoneGone = true))
      const startedAt = Date.now()
      const drained = yield* Run.drain(server.state.registry, 3, urgent, true).pipe(Effect.forkChild)
      const reconnect = yield* wait(() => browser.waitFor((f) => f.type === "reconnect", "reconnect", 3000))
      const closed = yield* wait(() => browser.closed)
      assert.deepStrictEqual(closed, { code: 1012, reason: "service restart" })
      // the phone line is closed at the drain's deadline: the browser went before it
      assert.isFalse(phoneGone, "the browser is moved at once, not at the deadline")
      assert.match(reconnect.resumeToken, new RegExp(`^resume\\.${hello.sessionId}\\.`))
      yield* until("the moved session to end here", () => server.state.registry.open() === 1, 2000)
      // the phone line has the drain's deadline
      const phoneClosed = yield* wait(() => phone.closed)
      assert.isAtLeast(Date.now() - startedAt, 2900)
      assert.strictEqual(phoneClosed.code, 1000)
      yield* Fiber.join(drained)
      assert.strictEqual(server.state.registry.open(), 0)
    }).pipe(Effect.scoped), 20_000)

  it.live("a drain without a durable store keeps today's behaviour: /ws sessions may finish, then get close", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { resumeSeconds: 30, store: Option.some(Redacted.make("memory")) })
      const browser = yield* connect(`${server.ws}/ws`)
      yield* ready(browser)
      const urgent = yield* Deferred.make<void>()
      const drained = yield* Run.drain(server.state.registry, 0.3, urgent, Config.storeIsDurable({ store: Option.some(Redacted.make("memory")) })).pipe(Effect.forkChild)
      assert.match((yield* wait(() => browser.waitFor((f) => f.type === "close", "close"))).reason, /shutting down/)
      assert.strictEqual((yield* wait(() => browser.closed)).code, 1000)
      assert.isFalse(browser.frames.some((f) => f.type === "reconnect"))
      yield* Fiber.join(drained)
      assert.strictEqual(server.state.registry.open(), 0)
    }).pipe(Effect.scoped), 20_000)

  it("only a store other than memory counts as durable (BATON_STORE)", () => {
    assert.isFalse(Config.storeIsDurable({ store: Option.none() }))
    assert.isFalse(Config.storeIsDurable({ store: Option.some(Redacted.make("memory")) }))
    assert.isTrue(Config.storeIsDurable({ store: Option.some(Redacted.make("sqlite:./baton.db")) }))
    assert.isTrue(Config.storeIsDurable({ store: Option.some(Redacted.make("postgres://u:p@db/baton")) }))
  })
})
