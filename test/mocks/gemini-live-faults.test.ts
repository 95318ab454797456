/**
 * Fault injection and latency knobs of the Gemini Live mock (docs/protocols.md 2.9, 2.10, 4): goAway
 * then close, a tool call lost across a reconnect, late / dropped setupComplete, close codes with
 * truncated reasons, binary frames, noise, Vertex-style calls. Loose timing bounds (live clock).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as GeminiLiveMock from "./gemini-live/index.ts"
import { GeminiPlan } from "./gemini-live/index.ts"
import { connect, geminiKind, type Msg } from "./rawClient.ts"

const MODEL = "models/gemini-2.5-flash-native-audio-preview-12-2025"
const setup = (extra: Record<string, unknown> = {}) => ({ model: MODEL, outputAudioTranscription: {}, ...extra })
const turnComplete = (m: Msg) => m.serverContent?.turnComplete === true

const open = (mock: GeminiLiveMock.GeminiLiveMock, body: Record<string, unknown> = setup()) =>
  Effect.gen(function*() {
    const client = yield* connect(mock.url)
    yield* client.send({ setup: body })
    yield* client.waitFor("setupComplete")
    return client
  })

describe("Gemini Live mock: faults and latency", () => {
  it.live("goAway with timeLeft, then the server closes; lifetime option does it by itself", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make()
      const client = yield* open(mock)
      const conn = yield* mock.awaitConnection(0)
      const t0 = performance.now()
      yield* conn.goAway({ timeLeftMs: 200 })
      expect(yield* client.waitFor("goAway")).toEqual({ goAway: { timeLeft: "0.200s" } })
      expect((yield* client.closed()).code).toBe(1000)
      expect(performance.now() - t0).toBeGreaterThanOrEqual(190)

      const timed = yield* GeminiLiveMock.make({ lifetime: { goAwayAfterMs: 100, timeLeftMs: 1000 } })
      const c2 = yield* open(timed)
      expect((yield* c2.waitFor("goAway")).goAway.timeLeft).toBe("1s")
      expect((yield* c2.closed(3000)).code).toBe(1000)
    }))

  it.live("goAway, then a toolCall, then close: the call is lost across resumption", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make()
      const c1 = yield* open(mock, setup({ sessionResumption: {}, tools: [{ functionDeclarations: [{ name: "transfer" }] }] }))
      const conn = yield* mock.awaitConnection(0)
      yield* c1.send({ clientContent: { turns: [{ role: "user", parts: [{ text: "hi" }] }], turnComplete: true } })
      const handle = (yield* c1.waitFor("sessionResumptionUpdate")).sessionResumptionUpdate.newHandle
      yield* conn.goAway({ timeLeftMs: 1000, closeAfterMs: null })
      yield* conn.pushToolCall([{ name: "transfer", args: {}, id: "fc_lost" }])
      yield* c1.waitFor("toolCall")
      expect((yield* c1.waitFor("sessionResumptionUpdate")).sessionResumptionUpdate).toEqual({ newHandle: "", resumable: false })
      yield* conn.close(1000)
      yield* c1.closed()
      const c2 = yield* open(mock, setup({ sessionResumption: { handle } }))
      const conn2 = yield* mock.awaitConnection(1)
      expect(conn2.pendingToolCallIds()).toEqual([])
      yield* c2.send({ toolResponse: { functionResponses: [{ id: "fc_lost", name: "transfer", response: {} }] } })
      yield* Effect.sleep("50 millis")
      expect(conn2.unmatchedToolResponses().map((r) => r.id)).toEqual(["fc_lost"])
      expect(c2.frames.length).toBe(1) // setupComplete only: a stale result starts nothing
    }))

  it.live("setupComplete late (after the client's timeout), never, or a close 1008 instead", () =>
    Effect.gen(function*() {
      const late = yield* GeminiLiveMock.make({ faults: [{ kind: "delayAck", match: "setup", delayMs: 300 }] })
      const c1 = yield* connect(late.url)
      yield* c1.send({ setup: setup() })
      expect((yield* Effect.flip(c1.waitFor("setupComplete", 150))).message).toContain("timed out")
      yield* c1.waitFor("setupComplete", 2000)

      const never = yield* GeminiLiveMock.make({ faults: [{ kind: "dropAck", match: "setup" }] })
      const c2 = yield* connect(never.url)
      yield* c2.send({ setup: setup() })
      expect((yield* Effect.flip(c2.waitFor("setupComplete", 200))).message).toContain("timed out")

      const refused = yield* GeminiLiveMock.make({ faults: [{ kind: "reject", match: "setup", with: { code: 1008, reason: "model not supported" } }] })
      const c3 = yield* connect(refused.url)
      yield* c3.send({ setup: setup() })
      expect(yield* c3.closed()).toEqual({ code: 1008, reason: "model not supported" })
    }))

  it.live("close mid-turn with 1011 and a long reason truncated to 123 bytes; a TCP drop mid-turn", () =>
    Effect.gen(function*() {
      const long = "RESOURCE_EXHAUSTED: " + "quota ".repeat(40)
      const mock = yield* GeminiLiveMock.make({
        script: [
          GeminiPlan.say("never finished", { closeAfter: { messages: 3, code: 1011, reason: long } }),
          GeminiPlan.say("dropped", { closeAfter: { messages: 1, abrupt: true } })
        ]
      })
      const c1 = yield* open(mock)
      yield* c1.send({ realtimeInput: { text: "hi" } })
      const closed = yield* c1.closed()
      expect(closed.code).toBe(1011)
      expect(Buffer.byteLength(closed.reason)).toBeLessThanOrEqual(123)
      expect(long.startsWith(closed.reason)).toBe(true)
      expect(c1.frames.length).toBe(4) // setupComplete + 3
      const c2 = yield* open(mock)
      yield* c2.send({ realtimeInput: { text: "hi" } })
      expect((yield* c2.closed()).code).toBe(1006)
    }))

  it.live("reject a toolResponse with a close 1011 (error during tool execution)", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        script: [GeminiPlan.call("f", {})],
        faults: [{ kind: "reject", match: "toolResponse", with: { code: 1011, reason: "Internal error encountered." } }]
      })
      const client = yield* open(mock)
      yield* client.send({ realtimeInput: { text: "go" } })
      const id = (yield* client.waitFor("toolCall")).toolCall.functionCalls[0].id
      yield* client.send({ toolResponse: { functionResponses: [{ id, name: "f", response: {} }] } })
      expect(yield* client.closed()).toEqual({ code: 1011, reason: "Internal error encountered." })
    }))

  it.live("binary frames holding JSON, unknown messages and malformed frames interleaved", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ frameEncoding: "binary", noise: { unknownEvery: 2, malformedEvery: 5, malformedKind: "invalid-json" } })
      const client = yield* open(mock)
      expect(client.frames[0]!.binary).toBe(true)
      yield* client.send({ realtimeInput: { text: "hi" } })
      yield* client.until(turnComplete)
      yield* Effect.sleep("50 millis")
      expect(client.frames.every((f) => f.binary)).toBe(true)
      expect(client.frames.filter((f) => f.msg?.mockUnknownMessage !== undefined).length).toBeGreaterThan(2)
      expect(client.frames.filter((f) => f.msg === undefined).length).toBeGreaterThan(0)
      const conn = yield* mock.awaitConnection(0)
      yield* conn.sendNoise("binary-garbage")
      yield* conn.sendRaw("{\"serverContent\":{\"interrupted\":true}}", { binary: false })
      yield* Effect.sleep("50 millis")
      expect(client.frames.at(-1)!.binary).toBe(false)
      expect(conn.isOpen()).toBe(true)
    }))

  it.live("interrupted without an active generation, in both orders", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make()
      const client = yield* open(mock)
      const conn = yield* mock.awaitConnection(0)
      yield* conn.interrupt
      expect((yield* client.until(turnComplete)).map(geminiKind)).toEqual(["serverContent.interrupted", "serverContent.turnComplete"])
      yield* conn.send({ serverContent: { turnComplete: true } })
      yield* conn.send({ serverContent: { interrupted: true } })
      yield* client.waitFor((m) => m.serverContent?.interrupted === true)
      expect(conn.sentTypes().slice(-2)).toEqual(["serverContent.turnComplete", "serverContent.interrupted"])
    }))

  it.live("Vertex style: function call without id and args, answered by name; path and mediaChunks", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script: (ctx) => (ctx.turnNumber === 0 ? GeminiPlan.call("ping", undefined, { id: null }) : GeminiPlan.say("pong")) })
      const vertexUrl = `${mock.origin}/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent`
      const client = yield* connect(vertexUrl)
      yield* client.send({ setup: { model: "projects/p/locations/us-central1/publishers/google/models/gemini-live-2.5-flash-native-audio", outputAudioTranscription: {} } })
      yield* client.waitFor("setupComplete")
      yield* client.send({ realtimeInput: { mediaChunks: [{ mimeType: "audio/pcm", data: "" }] } })
      yield* client.send({ realtimeInput: { text: "ping?" } })
      expect((yield* client.waitFor("toolCall")).toolCall).toEqual({ functionCalls: [{ name: "ping" }] })
      yield* client.send({ toolResponse: { functionResponses: [{ name: "ping", response: { output: "ok" } }] } })
      const answer = yield* client.until(turnComplete)
      expect(answer.map((m) => m.serverContent?.outputTranscription?.text ?? "").join("")).toBe("pong")
      expect((yield* mock.awaitConnection(0)).receivedTypes()).toEqual(["setup", "realtimeInput.mediaChunks", "realtimeInput.text", "toolResponse"])
    }))

  it.live("auth: a wrong key closes with 1007; unknown paths are 404", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ apiKey: "good" })
      yield* open(mock)
      const bad = yield* connect(mock.urlWithKey("bad"))
      expect(yield* bad.closed()).toEqual({ code: 1007, reason: "API key not valid. Please pass a valid API key." })
      expect((yield* Effect.flip(connect(`${mock.origin}/ws/nope`))).status).toBe(404)
    }))

  it.live("latency knobs: connectMs, roundTripMs (setup -> setupComplete), firstAudioMs, turnCompleteDelayMs", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ connectMs: 150, roundTripMs: 100, firstAudioMs: 120, turnCompleteDelayMs: 200 })
      const client = yield* connect(mock.url)
      expect(client.openedAt - client.startedAt).toBeGreaterThanOrEqual(140)
      const t0 = performance.now()
      yield* client.send({ setup: setup() })
      yield* client.waitFor("setupComplete")
      const rtt = performance.now() - t0
      expect(rtt).toBeGreaterThanOrEqual(95)
      expect(rtt).toBeLessThan(1000)
      const t1 = performance.now()
      yield* client.send({ realtimeInput: { text: "hi" } })
      yield* client.waitFor((m) => m.serverContent?.modelTurn !== undefined)
      expect(performance.now() - t1).toBeGreaterThanOrEqual(100 + 120 - 10)
      yield* client.waitFor((m) => m.serverContent?.generationComplete === true)
      const t2 = performance.now()
      yield* client.waitFor(turnComplete)
      const playback = performance.now() - t2
      expect(playback).toBeGreaterThanOrEqual(190)
      expect(playback).toBeLessThan(1000)
    }))
})
