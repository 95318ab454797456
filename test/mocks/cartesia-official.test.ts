/**
 * The Cartesia mock driven by Cartesia's own client (`@cartesia/cartesia-js` WebSocket TTS). The
 * SDK rewrites its base URL to `wss://`, so it talks to a TLS front (self-signed, made at test
 * time) before the mock on 127.0.0.1. What the mock sends is checked by the compiler against the
 * SDK's `WebsocketResponse` wire type.
 */
import type CartesiaType from "@cartesia/cartesia-js"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createRequire } from "node:module"
import { WebSocket } from "ws"
import * as Mock from "./cartesia/server.ts"
import { type TlsFront, tlsFront } from "../official/support.ts"

// The SDK's CommonJS build loads `ws` (Node's path: headers, `Authorization: Bearer`, TLS options);
// its ES module build cannot `require` it and falls back to the browser path.
const { Cartesia } = createRequire(import.meta.url)("@cartesia/cartesia-js") as { Cartesia: typeof CartesiaType }

const voice = { mode: "id", id: "a0e99841-438c-4a64-b679-ae501e7d6091" } as const
const output_format = { container: "raw", encoding: "pcm_s16le", sample_rate: 24000 } as const

/** Samples of the mock's audio for a transcript (30 ms a character at 24 kHz). */
const samples = (text: string) => Math.round(text.length * 0.03 * 24000)

/** A TTS socket through the front; the SDK's error events are collected (unbound, it rejects a promise nobody holds). */
const connect = (front: TlsFront) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const ws = await new Cartesia({ apiKey: "ct-test", baseURL: `https://${front.host}` }).tts.websocket({ ca: front.cert })
      const errors: Array<{ readonly error?: CartesiaType.WebsocketResponse | undefined }> = []
      ws.on("error", (error) => errors.push(error))
      return { ws, errors }
    }),
    ({ ws }) => Effect.sync(() => ws.close())
  )

/** Everything a context receives until its `done` (or the error the SDK throws). */
const receive = (context: ReturnType<Awaited<ReturnType<CartesiaType["tts"]["websocket"]>>["context"]>) =>
  Effect.promise(async () => {
    const events: Array<CartesiaType.WebsocketResponse> = []
    try {
      for await (const event of context.receive()) events.push(event)
      return { events, error: undefined }
    } catch (error) {
      return { events, error: error as Error }
    }
  })

describe("Cartesia mock", () => {
  it.live("official client: @cartesia/cartesia-js streams one context over several continue messages (one flush_done, one done) and surfaces an error frame", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ intervalMs: 1 })
      const front = yield* tlsFront(mock.url)
      const { ws, errors } = yield* connect(front)

      const context = ws.context({ model_id: "sonic-3", voice, output_format, language: "en" })
      yield* Effect.promise(async () => {
        await context.push({ transcript: "Hello, " })
        await context.push({ transcript: "how are you today? ", flush: true })
        await context.push({ transcript: "Fine, thanks." })
        await context.no_more_inputs()
      })
      const { events, error } = yield* receive(context)
      assert.isUndefined(error)
      const types = events.map((e) => e.type)
      assert.deepStrictEqual(types.filter((t) => t !== "chunk"), ["flush_done", "done"])
      assert.strictEqual(types.at(-1), "done")
      const audio = events.flatMap((e) => (e.type === "chunk" && e.audio !== undefined ? [e.audio.byteLength] : []))
      assert.strictEqual(audio.reduce((a, b) => a + b, 0), 2 * (samples("Hello, ") + samples("how are you today? ") + samples("Fine, thanks.")))
      const flushed = events.findIndex((e) => e.type === "flush_done")
      const before = events.slice(0, flushed).reduce((n, e) => n + (e.type === "chunk" ? e.audio?.byteLength ?? 0 : 0), 0)
      assert.isAtLeast(before, 2 * (samples("Hello, ") + samples("how are you today? ")), "flush_done before the flushed audio")
      assert.deepStrictEqual(mock.auth, ["bearer"])
      assert.deepStrictEqual(mock.messages.map((m) => m.message["continue"]), [true, true, true, true, false])

      mock.faults.error = { status: 400, title: "Voice not found", message: "No voice with this id", errorCode: "voice_not_found" }
      const failing = ws.context({ model_id: "sonic-3", voice, output_format })
      yield* Effect.promise(() => failing.send({ transcript: "Hi.", continue: false }))
      const refused = yield* receive(failing)
      assert.strictEqual(refused.error?.message, "No voice with this id")
      const event = errors[0]?.error
      assert.deepStrictEqual(
        event?.type === "error" && [event.status_code, event.title, event.error_code, event.done],
        [400, "Voice not found", "voice_not_found", true]
      )

      // The type-level check: every frame the mock sent is one of the SDK's wire types.
      const sent: ReadonlyArray<CartesiaType.WebsocketResponse> = mock.sent.map((s) => s.message)
      assert.isAbove(sent.length, 3)
    }))

  it.live("official client: @cartesia/cartesia-js asking add_timestamps gets each input's words timed, in order, before their audio", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ intervalMs: 1 })
      const front = yield* tlsFront(mock.url)
      const { ws } = yield* connect(front)
      const context = ws.context({ model_id: "sonic-3", voice, output_format, language: "en", add_timestamps: true })
      yield* Effect.promise(async () => {
        await context.push({ transcript: "Hello there, " })
        await context.push({ transcript: "how are you?" })
        await context.no_more_inputs()
      })
      const { events, error } = yield* receive(context)
      assert.isUndefined(error)
      const timed = events.flatMap((e) => (e.type === "timestamps" && e.word_timestamps ? [e.word_timestamps] : []))
      assert.deepStrictEqual(timed.map((t) => t.words), [["Hello", "there,"], ["how", "are", "you?"]])
      const starts = timed.flatMap((t) => t.start)
      const ends = timed.flatMap((t) => t.end)
      assert.deepStrictEqual(starts, [...starts].sort((a, b) => a - b))
      assert.isTrue(starts.every((start, i) => ends[i]! > start))
      // "how" starts after the first input's 13 characters of 30 ms
      assert.closeTo(timed[1]!.start[0]!, 0.39, 1e-9)
      const firstTimed = events.findIndex((e) => e.type === "timestamps")
      assert.strictEqual(events[firstTimed + 1]?.type, "chunk")
      const plain = ws.context({ model_id: "sonic-3", voice, output_format })
      yield* Effect.promise(() => plain.send({ transcript: "Hi.", continue: false }))
      assert.isFalse((yield* receive(plain)).events.some((e) => e.type === "timestamps"), "none unless asked")
      const sent: ReadonlyArray<CartesiaType.WebsocketResponse> = mock.sent.map((m) => m.message)
      assert.isAbove(sent.length, 3)
    }))

  it.live("the key is taken as X-API-Key, Authorization: Bearer, or ?api_key= with ?cartesia_version= (the browser path)", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      const opens = (url: string, headers: Record<string, string>) =>
        Effect.promise(() =>
          new Promise<boolean>((resolve) => {
            const socket = new WebSocket(url, { headers })
            socket.on("open", () => (socket.close(), resolve(true)))
            socket.on("error", () => resolve(false))
          })
        )
      const version = { "Cartesia-Version": "2025-04-16" }
      assert.isTrue(yield* opens(mock.url, { "X-API-Key": "ct-test", ...version }))
      assert.isTrue(yield* opens(mock.url, { Authorization: "Bearer ct-test", ...version }))
      assert.isTrue(yield* opens(`${mock.url}?api_key=ct-test&cartesia_version=2025-04-16`, {}))
      assert.isFalse(yield* opens(mock.url, { Authorization: "Bearer wrong", ...version }))
      assert.isFalse(yield* opens(`${mock.url}?api_key=ct-test`, {}))
      assert.deepStrictEqual(mock.auth, ["x-api-key", "bearer", "query"])
      assert.strictEqual(mock.refused, 2)
    }))
})
