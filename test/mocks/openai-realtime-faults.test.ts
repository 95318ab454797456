/**
 * Fault injection and latency knobs of the OpenAI Realtime mock (docs/protocols.md 1.10, 4): late /
 * slow / dropped acks, rejected updates, closes mid-response, server-initiated function calls,
 * noise frames, session expiry, handshake faults. Timing assertions use loose bounds (live clock).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as OpenAIRealtimeMock from "./openai-realtime/index.ts"
import { Plan } from "./openai-realtime/index.ts"
import { connect, typesOf } from "./rawClient.ts"

const userText = (id: string) => ({
  type: "conversation.item.create",
  event_id: `evt_${id}`,
  item: { id, type: "message", role: "user", content: [{ type: "input_text", text: id }] }
})

const open = (mock: OpenAIRealtimeMock.OpenAIRealtimeMock, options?: Parameters<typeof connect>[1]) =>
  Effect.gen(function*() {
    const client = yield* connect(mock.url, options)
    yield* client.waitFor("session.created")
    return client
  })

describe("OpenAI Realtime mock: faults and latency", () => {
  it.live("late ack: the ack of one item.create arrives after the client's timeout, overtaken by later acks", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        faults: [{ kind: "delayAck", match: (e) => e.type === "conversation.item.create" && e.event_id === "evt_item_a", delayMs: 2_000 }]
      })
      const client = yield* open(mock)
      const sentAt = performance.now()
      yield* client.send(userText("item_a"))
      // the client's own 150 ms timeout expires with no ack (item_b is sent well inside the 2 s delay,
      // however loaded the machine)
      const timedOut = yield* Effect.flip(client.waitFor("conversation.item.added", 150))
      expect(timedOut.message).toContain("timed out")
      yield* client.send(userText("item_b"))
      const b = yield* client.waitFor("conversation.item.added")
      expect(b).toMatchObject({ item: { id: "item_b" }, previous_item_id: null })
      const a = yield* client.waitFor((m) => m.type === "conversation.item.added" && m.item.id === "item_a", 5_000)
      expect(performance.now() - sentAt).toBeGreaterThanOrEqual(1_980)
      expect(a.previous_item_id).toBe("item_b") // applied late, so it lands after b
      const conn = yield* mock.awaitConnection(0)
      expect(conn.items().map((i) => i.id)).toEqual(["item_b", "item_a"])
    }))

  it.live("slow acks: ordered delayAck holds the whole queue; roundTripMs is pipelined", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        faults: [{ kind: "delayAck", match: "conversation.item.create", delayMs: 200, ordered: true, times: 1 }]
      })
      const client = yield* open(mock)
      yield* client.send(userText("item_a"))
      yield* client.send(userText("item_b"))
      const adds = yield* client.until((m) => m.type === "conversation.item.added" && m.item.id === "item_b", 2000)
      expect(adds.filter((m) => m.type === "conversation.item.added").map((m) => m.item.id)).toEqual(["item_a", "item_b"])

      // a round trip long enough that two of them in a row are told from a loaded machine's slowness
      const rtt = yield* OpenAIRealtimeMock.make({ roundTripMs: 1_000 })
      const c2 = yield* open(rtt)
      const t0 = performance.now()
      yield* c2.send(userText("x1"))
      yield* c2.send(userText("x2"))
      yield* c2.waitFor((m) => m.type === "conversation.item.done" && m.item.id === "x1")
      const first = performance.now() - t0
      yield* c2.waitFor((m) => m.type === "conversation.item.done" && m.item.id === "x2")
      const second = performance.now() - t0
      expect(first).toBeGreaterThanOrEqual(990)
      expect(second).toBeLessThan(1_600) // pipelined, not 2 x 1000
    }))

  it.live("reject: session.update answered by an error event; nothing applied; then accepted", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const client = yield* open(mock)
      const conn = yield* mock.awaitConnection(0)
      yield* conn.addFault({
        kind: "reject",
        match: "session.update",
        times: 1,
        with: { type: "server_error", code: "internal_error", message: "The server had an error while processing your request." }
      })
      yield* client.send({ type: "session.update", event_id: "upd1", session: { type: "realtime", instructions: "new" } })
      const err = yield* client.waitFor("error")
      expect(err.error).toEqual({
        type: "server_error",
        code: "internal_error",
        message: "The server had an error while processing your request.",
        param: null,
        event_id: "upd1"
      })
      expect(conn.session().instructions).not.toBe("new")
      yield* client.send({ type: "session.update", event_id: "upd2", session: { type: "realtime", instructions: "new" } })
      expect((yield* client.waitFor("session.updated")).session.instructions).toBe("new")
    }))

  it.live("dropAck and a silent (half-open) server never answer", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ faults: [{ kind: "dropAck", match: "conversation.item.create" }] })
      const client = yield* open(mock)
      yield* client.send(userText("item_a"))
      expect((yield* Effect.flip(client.waitFor("conversation.item.added", 200))).message).toContain("timed out")
      expect((yield* mock.awaitConnection(0)).receivedTypes()).toEqual(["conversation.item.create"])

      const silent = yield* OpenAIRealtimeMock.make({ onConnect: () => ({ kind: "silent" }) })
      const c2 = yield* connect(silent.url)
      expect((yield* Effect.flip(c2.waitFor("session.created", 200))).message).toContain("timed out")
    }))

  it.live("close mid-response: close frame with code and reason, or a TCP drop (1006)", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script: [
          Plan.say("never finished", { closeAfter: { events: 5, code: 1011, reason: "upstream failure" } }),
          Plan.say("dropped", { closeAfter: { events: 2, abrupt: true } })
        ]
      })
      const c1 = yield* open(mock)
      yield* c1.send({ type: "response.create" })
      expect(yield* c1.closed()).toEqual({ code: 1011, reason: "upstream failure" })
      const afterCreate = c1.frames.slice(1).map((f) => f.msg?.type)
      expect(afterCreate.length).toBe(5)
      expect(afterCreate).not.toContain("response.done")
      const conn = yield* mock.awaitConnection(0)
      expect(yield* conn.awaitClose()).toMatchObject({ code: 1011, reason: "upstream failure", by: "server" })

      const c2 = yield* open(mock)
      yield* c2.send({ type: "response.create" })
      expect((yield* c2.closed()).code).toBe(1006)
    }))

  it.live("closeOn: the server closes instead of answering a given client event", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ faults: [{ kind: "closeOn", match: "response.create", code: 1011, reason: "boom" }] })
      const client = yield* open(mock)
      yield* client.send({ type: "response.create" })
      expect(yield* client.closed()).toEqual({ code: 1011, reason: "boom" })
    }))

  it.live("a function call arrives while the client is doing something else (trigger and push)", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        rateLimits: "none",
        triggers: [{ on: "conversation.item.create", action: { type: "respond", plan: Plan.call("transfer", {}, { callId: "call_transfer00001" }) } }]
      })
      const client = yield* open(mock)
      yield* client.send(userText("item_a"))
      const events = yield* client.until("response.done")
      expect(typesOf(events).slice(0, 3)).toEqual(["conversation.item.added", "conversation.item.done", "response.created"])
      expect(events.find((e) => e.type === "response.function_call_arguments.done")).toMatchObject({ name: "transfer", call_id: "call_transfer00001" })

      // push at a moment chosen by the test, racing a client response.create (docs/protocols.md 1.10 #5)
      const conn = yield* mock.awaitConnection(0)
      yield* conn.pushResponse(Plan.say("server speaks first", { deltaIntervalMs: 10 }))
      yield* client.send({ type: "response.create", event_id: "mine" })
      const err = yield* client.waitFor("error")
      expect(err.error).toMatchObject({ code: "conversation_already_has_active_response", event_id: "mine" })
      yield* client.waitFor("response.done")
    }))

  it.live("function call, then the socket closes; on a new socket the late function_call_output is refused", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script: [Plan.call("lookup", { q: 1 }, { callId: "call_lookup0000001" })],
        triggers: [{ onSent: (f) => f.type === "response.output_item.done", action: { type: "close", code: 1000 } }]
      })
      const c1 = yield* open(mock)
      yield* c1.send({ type: "response.create" })
      yield* c1.waitFor("response.output_item.done")
      expect((yield* c1.closed()).code).toBe(1000)
      const c2 = yield* open(mock)
      yield* c2.send({ type: "conversation.item.create", event_id: "late_out", item: { type: "function_call_output", call_id: "call_lookup0000001", output: "{}" } })
      expect((yield* c2.waitFor("error")).error).toMatchObject({ event_id: "late_out", param: "item.call_id" })
      expect(mock.connectionCount()).toBe(2)
    }))

  it.live("a stale socket keeps emitting after the client opened a new one", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ rateLimits: "none" })
      const oldClient = yield* open(mock)
      yield* open(mock)
      const old = (yield* mock.awaitConnection(0))
      yield* old.pushResponse(Plan.say("from the old session"))
      const events = yield* oldClient.until("response.done")
      expect(events.at(-1)!.response.output[0].content[0].transcript).toBe("from the old session")
      expect((yield* mock.awaitConnection(1)).sentTypes()).toEqual(["session.created"])
    }))

  it.live("noise: unknown events and malformed frames interleaved; on-demand noise; the session survives", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        rateLimits: "none",
        noise: { unknownEvery: 2, malformedEvery: 3, malformedKind: "invalid-json" }
      })
      const client = yield* open(mock)
      yield* client.send({ type: "response.create" })
      yield* client.waitFor("response.done")
      yield* Effect.sleep("50 millis") // noise that follows response.done
      const unknown = client.frames.filter((f) => f.msg?.type === "mock.unknown_event")
      const malformed = client.frames.filter((f) => f.msg === undefined)
      expect(unknown.length).toBeGreaterThan(3)
      expect(malformed.length).toBeGreaterThan(2)
      const conn = yield* mock.awaitConnection(0)
      expect(conn.sentTypes()[0]).toBe("session.created")
      expect(conn.sent().filter((f) => f.noise).length).toBe(unknown.length + malformed.length)
      const before = client.frames.length
      yield* conn.sendNoise("binary-garbage")
      yield* conn.sendNoise("missing-type")
      yield* conn.perform({ type: "noise", kind: "not-object" })
      yield* Effect.sleep("50 millis")
      const extra = client.frames.slice(before)
      expect(extra[0]!.binary).toBe(true)
      expect(extra[1]!.msg).toMatchObject({ event_id: expect.stringMatching(/^event_/) })
      expect(extra[1]!.msg!.type).toBe(undefined)
      expect(extra[2]!.raw).toBe("[1,2,3]")
      expect(conn.isOpen()).toBe(true)
    }))

  it.live("session expiry: error session_expired then close 1000", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ sessionExpiresAfterMs: 150 })
      const client = yield* connect(mock.url)
      const created = yield* client.waitFor("session.created")
      expect(created.session.expires_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 1)
      expect((yield* client.waitFor("error")).error).toMatchObject({ code: "session_expired", message: "Your session hit the maximum duration of 60 minutes." })
      expect((yield* client.closed()).code).toBe(1000)
    }))

  it.live("handshake faults: HTTP status, close before session.created, TCP drop; counts", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        onConnect: (info) =>
          info.attempt === 0
            ? { kind: "reject", status: 503 }
            : info.attempt === 1
            ? { kind: "close", code: 1011, reason: "not ready" }
            : info.attempt === 2
            ? { kind: "terminate" }
            : undefined
      })
      expect((yield* Effect.flip(connect(mock.url))).status).toBe(503)
      const c1 = yield* connect(mock.url)
      expect(yield* c1.closed()).toEqual({ code: 1011, reason: "not ready" })
      expect(c1.frames.length).toBe(0)
      const c2 = yield* connect(mock.url)
      expect((yield* c2.closed()).code).toBe(1006)
      yield* open(mock)
      expect(mock.handshakeAttempts()).toBe(4)
      expect(mock.connectionCount()).toBe(3)
      expect((yield* Effect.flip(connect(mock.url.replace("/v1/realtime", "/v2/nope")))).status).toBe(404)
    }))

  it.live("latency knobs: connectMs delays the handshake, roundTripMs each answer, firstAudioMs the first audio", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ connectMs: 200, roundTripMs: 100, firstAudioMs: 150, rateLimits: "none" })
      const client = yield* connect(mock.url)
      const openMs = client.openedAt - client.startedAt
      expect(openMs).toBeGreaterThanOrEqual(190)
      expect(openMs).toBeLessThan(1500)
      const t0 = performance.now()
      yield* client.send({ type: "input_audio_buffer.clear" })
      yield* client.waitFor("input_audio_buffer.cleared")
      const rtt = performance.now() - t0
      expect(rtt).toBeGreaterThanOrEqual(95)
      expect(rtt).toBeLessThan(1000)
      yield* client.send({ type: "response.create" })
      yield* client.waitFor("response.created")
      const createdAt = performance.now()
      yield* client.waitFor("response.output_audio.delta")
      const ttfa = performance.now() - createdAt
      expect(ttfa).toBeGreaterThanOrEqual(140)
      expect(ttfa).toBeLessThan(1000)

      // defaults are 0: everything is fast
      const fast = yield* OpenAIRealtimeMock.make()
      const c2 = yield* connect(fast.url)
      expect(c2.openedAt - c2.startedAt).toBeLessThan(150)
    }))

  it.live("recorded frames: every client frame per connection, in order, awaitable", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const client = yield* open(mock)
      const conn = yield* mock.awaitConnection(0)
      yield* client.send({ type: "session.update", event_id: "e1", session: { type: "realtime" } })
      yield* client.send(userText("item_a"))
      const frame = yield* conn.awaitReceived("conversation.item.create")
      expect(frame).toMatchObject({ direction: "in", seq: 1, binary: false, json: { event_id: "evt_item_a" } })
      expect(conn.receivedTypes()).toEqual(["session.update", "conversation.item.create"])
      expect(conn.clientEvents()[0]).toMatchObject({ event_id: "e1" })
      yield* conn.awaitSent("conversation.item.done")
      expect(conn.sentTypes()).toEqual(["session.created", "session.updated", "conversation.item.added", "conversation.item.done"])
      const missing = yield* Effect.flip(conn.awaitReceived("response.create", { timeoutMs: 100 }))
      expect(missing._tag).toBe("MockTimeoutError")
      expect(mock.internalErrors()).toEqual([])
    }))

  it.live("malformed client frames are answered with error events and the socket stays open", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const client = yield* open(mock)
      yield* client.send({ event_id: "no_type" })
      expect((yield* client.waitFor("error")).error).toEqual({
        type: "invalid_request_error",
        code: "invalid_event",
        message: "The 'type' field is missing.",
        param: null,
        event_id: "no_type"
      })
      yield* client.sendRaw("{not json")
      expect((yield* client.waitFor("error")).error.code).toBe("invalid_event")
      yield* client.send({ type: "response.text.delta" })
      expect((yield* client.waitFor("error")).error.param).toBe("type")
      yield* client.sendRaw(new Uint8Array([1, 2, 3]), true)
      expect((yield* client.waitFor("error")).error.code).toBe("invalid_event")
      yield* client.send({ type: "input_audio_buffer.clear" })
      yield* client.until("input_audio_buffer.cleared")
      const conn = yield* mock.awaitConnection(0)
      expect(conn.receivedTypes()).toEqual(["<invalid>", "<invalid>", "response.text.delta", "<invalid>", "input_audio_buffer.clear"])
      expect(conn.isOpen()).toBe(true)
    }))

  it.live("auth: Bearer header, browser subprotocols, HTTP 401 or error-then-close on a bad key", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ apiKey: "sk-test" })
      yield* open(mock, { headers: { Authorization: "Bearer sk-test" } })
      const browser = yield* open(mock, { protocols: ["realtime", "openai-insecure-api-key.sk-test", "openai-agents-sdk.0.1"] })
      expect(browser.ws.protocol).toBe("realtime")
      const refused = yield* Effect.flip(connect(mock.url, { headers: { Authorization: "Bearer wrong" } }))
      expect(refused.status).toBe(401)
      expect(mock.connectionCount()).toBe(2)
      expect(mock.handshakeAttempts()).toBe(3)
      const conns = mock.connections()
      expect(conns[1]!.info.protocols).toContain("openai-insecure-api-key.sk-test")

      const eventMode = yield* OpenAIRealtimeMock.make({ apiKey: "sk-test", authFailure: "event" })
      const c = yield* connect(eventMode.url)
      expect((yield* c.waitFor("error")).error.code).toBe("invalid_api_key")
      expect((yield* c.closed()).code).toBe(1008)
    }))

  it.live("the Effect API: the server is released with its Scope; the service layer provides it", () =>
    Effect.gen(function*() {
      const url = yield* Effect.scoped(OpenAIRealtimeMock.make().pipe(Effect.map((m) => m.url)))
      expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/v1\/realtime\?model=gpt-realtime$/)
      const refused = yield* Effect.flip(connect(url))
      expect(refused._tag).toBe("ClientError")
      const fromLayer = yield* OpenAIRealtimeMock.OpenAIRealtimeMockService.use((mock) =>
        Effect.gen(function*() {
          const client = yield* open(mock)
          yield* client.send({ type: "response.create" })
          return (yield* client.waitFor("response.done")).response.status
        })
      ).pipe(Effect.provide(OpenAIRealtimeMock.OpenAIRealtimeMockService.layer({ script: [Plan.say("hi")] })))
      expect(fromLayer).toBe("completed")
    }))
})
