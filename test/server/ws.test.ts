/**
 * The service over real WebSockets on 127.0.0.1: a text turn with a handoff, bad frames, limits,
 * tokens, a client leaving mid-reply, and the drain.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as Token from "../../server/Token.ts"
import { Redacted } from "effect"
import { Agent, Handoff, Tool } from "../../src/index.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"
import { connect, start, wait } from "./harness.ts"

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
const rules = (slow = false): ReadonlyArray<ScriptedModel.Rule> => [
  { when: { user: "weather" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { instructions: "greet" }, reply: { text: "Weather desk here. Sunny all week.", ...(slow ? { chunkDelay: "200 millis" as const } : {}) } },
  { when: { user: "hello" }, reply: { text: "Hello from the front desk." } }
]
const model = ScriptedModel.layer(rules())

describe("Server /ws", () => {
  it.live("a text turn with a handoff: ready, the user's item, agent_handoff, the new agent's words", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model)
      const client = yield* connect(`${server.ws}/ws`)
      const ready = yield* wait(() => client.waitFor((f) => f.type === "ready", "ready"))
      assert.strictEqual(ready.agent, "front")
      assert.strictEqual(ready.audio, "none")
      client.sendJson({ type: "user_text", text: "what's the weather?" })
      const handoff = yield* wait(() => client.waitFor((f) => f.type === "agent_handoff" && f.to === "weather", "agent_handoff"))
      assert.strictEqual(handoff.from, "front")
      yield* wait(() => client.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "weather's speech"))
      const said = client.frames.filter((f) => f.type === "agent_text" && f.agent === "weather").map((f) => f.delta).join("")
      assert.strictEqual(said, "Weather desk here. Sunny all week.")
      assert.isTrue(client.frames.some((f) => f.type === "conversation_item_added" && f.item.role === "user" && f.item.text === "what's the weather?"))
      // the order a client relies on: the handoff before the new agent's words
      const at = (match: (f: any) => boolean) => client.frames.findIndex(match)
      assert.isBelow(at((f) => f.type === "agent_handoff"), at((f) => f.type === "agent_text" && f.agent === "weather"))
      assert.strictEqual(server.state.registry.open(), 1)
      client.sendJson({ type: "timeline" })
      const picture = yield* wait(() => client.waitFor((f) => f.type === "timeline", "timeline"))
      assert.match(picture.svg, /^<svg/)
      assert.include(picture.svg, "weather")
    }).pipe(Effect.scoped))

  it.live("malformed frames get an error event and the session goes on", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { maxTextChars: 20 })
      const client = yield* connect(`${server.ws}/ws`)
      yield* wait(() => client.waitFor((f) => f.type === "ready"))
      client.socket.send("{not json")
      client.sendJson({ type: "shout", text: "hi" })
      client.sendJson({ type: "user_text" })
      client.sendJson({ type: "user_text", text: "x".repeat(21) })
      client.sendJson({ type: "audio_format", sampleRate: 3 })
      client.socket.send(Buffer.from([1, 2, 3])) // odd bytes: not PCM16 (ignored without a realtime model)
      const errors = () => client.frames.filter((f) => f.type === "error" && f.source === "input").map((f) => f.message)
      yield* wait(() => client.waitFor(() => errors().length >= 5, "five input errors"))
      assert.match(errors()[0]!, /not JSON/)
      assert.match(errors()[1]!, /unknown message type "shout"/)
      assert.match(errors()[2]!, /bad user_text message/)
      assert.match(errors()[3]!, /21 characters is over the limit of 20/)
      assert.match(errors()[4]!, /sampleRate 3/)
      client.sendJson({ type: "user_text", text: "hello" })
      yield* wait(() => client.waitFor((f) => f.type === "speech_finished" && f.agent === "front", "the reply"))
      assert.include(client.frames.filter((f) => f.type === "agent_text").map((f) => f.delta).join(""), "Hello from the front desk.")
    }).pipe(Effect.scoped))

  it.live("at the session limit an upgrade is refused with 503; /health and /metrics say so", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { maxSessions: 1 })
      const first = yield* connect(`${server.ws}/ws`)
      yield* wait(() => first.waitFor((f) => f.type === "ready"))
      const refused = yield* connect(`${server.ws}/ws`).pipe(Effect.flip)
      assert.match(refused.message, /HTTP 503/)
      const health = yield* wait(() => fetch(`${server.url}/health`).then((r) => r.json()))
      assert.deepInclude(health, { status: "ok", sessions: 1, total: 1, draining: false })
      const metrics = yield* wait(() => fetch(`${server.url}/metrics`).then((r) => r.text()))
      assert.match(metrics, /baton_server_connections_refused_total\{reason="full"\} [1-9]/)
      assert.match(metrics, /baton_server_sessions_open [1-9]/)
      assert.match(metrics, /baton_event_loop_lag_seconds\{quantile="0.99"\}/)
    }).pipe(Effect.scoped))

  it.live("with BATON_TOKEN, /ws needs a minted token; bad and missing ones get 401", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { secret: "s3cret-for-test" })
      const missing = yield* connect(`${server.ws}/ws`).pipe(Effect.flip)
      assert.match(missing.message, /HTTP 401/)
      const forged = yield* connect(`${server.ws}/ws?token=9999999999.AAAA`).pipe(Effect.flip)
      assert.match(forged.message, /HTTP 401/)
      const noAuth = yield* wait(() => fetch(`${server.url}/token`, { method: "POST" }))
      assert.strictEqual(noAuth.status, 401)
      const minted = yield* wait(() =>
        fetch(`${server.url}/token`, { method: "POST", headers: { authorization: "Bearer s3cret-for-test" } }).then((r) => r.json() as Promise<{ token: string }>)
      )
      const viaQuery = yield* connect(`${server.ws}/ws?token=${minted.token}`)
      yield* wait(() => viaQuery.waitFor((f) => f.type === "ready"))
      const viaHeader = yield* connect(`${server.ws}/ws`, { authorization: `Bearer ${minted.token}` })
      yield* wait(() => viaHeader.waitFor((f) => f.type === "ready"))
    }).pipe(Effect.scoped))

  it("tokens: a minted token verifies until it expires; a tampered one does not", () => {
    const secret = Redacted.make("k")
    const { token } = Token.mint(secret, 60, 1_000_000)
    assert.strictEqual(Token.verify(secret, token, "ws", 1_000_000), "ok")
    assert.strictEqual(Token.verify(secret, token, "ws", 1_000_000 + 61_000), "expired")
    assert.strictEqual(Token.verify(Redacted.make("other"), token, "ws", 1_000_000), "bad signature")
    const [route, expiry, signature] = token.split(".")
    assert.strictEqual(Token.verify(secret, `${route}.${Number(expiry) + 1}.${signature}`, "ws", 1_000_000), "bad signature")
    assert.strictEqual(Token.verify(secret, "nonsense", "ws", 1_000_000), "malformed")
    assert.notInclude(String(secret), "k")
  })

  it.live("with BATON_RESUME_S=0, a client that disconnects mid-reply closes its session at once: every call answered, nothing left", () =>
    Effect.gen(function*() {
      const before = Diagnostics.snapshot()
      yield* Effect.gen(function*() {
        const server = yield* start(front, ScriptedModel.layer(rules(true)), { resumeSeconds: 0 })
        const client = yield* connect(`${server.ws}/ws`)
        yield* wait(() => client.waitFor((f) => f.type === "ready"))
        client.sendJson({ type: "user_text", text: "weather please" })
        yield* wait(() => client.waitFor((f) => f.type === "agent_text" && f.agent === "weather", "the reply starting"))
        assert.strictEqual(Diagnostics.snapshot().sessions, before.sessions + 1)
        client.socket.terminate()
        yield* wait(async () => {
          for (let i = 0; i < 200 && server.state.registry.open() > 0; i++) await new Promise((r) => setTimeout(r, 10))
        })
        assert.strictEqual(server.state.registry.open(), 0)
        const after = Diagnostics.snapshot()
        assert.strictEqual(after.sessions, before.sessions)
        assert.strictEqual(after.actors, before.actors)
        assert.strictEqual(after.fibers, before.fibers)
        assert.strictEqual(after.tokenErrors, 0)
      }).pipe(Effect.scoped)
    }))

  it.live("drain: no new sessions, open ones get a close event at the deadline", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model)
      const client = yield* connect(`${server.ws}/ws`)
      yield* wait(() => client.waitFor((f) => f.type === "ready"))
      const drained = yield* server.state.registry.drain(300).pipe(Effect.forkChild)
      yield* wait(() => new Promise((r) => setTimeout(r, 50)))
      const refused = yield* connect(`${server.ws}/ws`).pipe(Effect.flip)
      assert.match(refused.message, /HTTP 503/)
      const health = yield* wait(() => fetch(`${server.url}/health`).then(async (r) => ({ status: r.status, body: (await r.json()) as { draining: boolean } })))
      assert.strictEqual(health.status, 503)
      assert.strictEqual(health.body.draining, true)
      const close = yield* wait(() => client.waitFor((f) => f.type === "close", "close"))
      assert.match(close.reason, /shutting down/)
      const { code } = yield* wait(() => client.closed)
      assert.strictEqual(code, 1000)
      assert.deepStrictEqual(yield* Fiber.join(drained), { finished: 0, closed: 1, moved: 0 })
      assert.strictEqual(server.state.registry.open(), 0)
    }).pipe(Effect.scoped))

  it.live("a frame over maxFrameBytes closes that connection (1009); other sessions go on", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { maxFrameBytes: 1024 })
      const big = yield* connect(`${server.ws}/ws`)
      const other = yield* connect(`${server.ws}/ws`)
      yield* wait(() => big.waitFor((f) => f.type === "ready"))
      big.socket.send(Buffer.alloc(4096))
      const { code } = yield* wait(() => big.closed)
      assert.strictEqual(code, 1009)
      other.sendJson({ type: "user_text", text: "hello" })
      yield* wait(() => other.waitFor((f) => f.type === "speech_finished", "the other session's reply"))
    }).pipe(Effect.scoped))

  it.live("a connection that says nothing for idleSeconds is closed with a close event", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { idleSeconds: 1 })
      const client = yield* connect(`${server.ws}/ws`)
      const close = yield* wait(() => client.waitFor((f) => f.type === "close", "close", 5000))
      assert.strictEqual(close.reason, "no message for 1 s")
      assert.strictEqual((yield* wait(() => client.closed)).code, 1000)
    }).pipe(Effect.scoped))

  it.live("with BATON_RESUME_S=0, a client that answers no ping (half-open) is cut and its session closed; one that answers stays", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { pingSeconds: 0.3, resumeSeconds: 0 })
      const silent = yield* connect(`${server.ws}/ws`, {}, { autoPong: false })
      const live = yield* connect(`${server.ws}/ws`)
      yield* wait(() => silent.waitFor((f) => f.type === "ready"))
      yield* wait(() => live.waitFor((f) => f.type === "ready"))
      assert.strictEqual(server.state.registry.open(), 2)
      const { code } = yield* wait(() => silent.closed)
      assert.strictEqual(code, 1006)
      yield* wait(async () => {
        for (let i = 0; i < 200 && server.state.registry.open() > 1; i++) await new Promise((r) => setTimeout(r, 10))
      })
      assert.strictEqual(server.state.registry.open(), 1)
      // Several rounds of pings later, the client that answers them is still served.
      yield* wait(() => new Promise((r) => setTimeout(r, 1500)))
      live.sendJson({ type: "user_text", text: "hello" })
      yield* wait(() => live.waitFor((f) => f.type === "agent_text" && f.delta.includes("front desk"), "the reply"))
      assert.strictEqual(server.state.registry.open(), 1)
    }).pipe(Effect.scoped))

  it.live("with an Origin allow-list, another origin is refused (403); a listed one and none (non-browser) are let in", () =>
    Effect.gen(function*() {
      const server = yield* start(front, model, { allowedOrigins: ["https://app.example"] })
      const evil = yield* connect(`${server.ws}/ws`, { origin: "https://evil.example" }).pipe(Effect.flip)
      assert.match(evil.message, /HTTP 403/)
      const good = yield* connect(`${server.ws}/ws`, { origin: "https://app.example" })
      yield* wait(() => good.waitFor((f) => f.type === "ready"))
      const none = yield* connect(`${server.ws}/ws`)
      yield* wait(() => none.waitFor((f) => f.type === "ready"))
    }).pipe(Effect.scoped))
})
