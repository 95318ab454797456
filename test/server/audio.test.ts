/**
 * Audio through the service with a realtime model (the OpenAI Realtime layer against its mock):
 * a browser-like client streaming 16 kHz PCM16 over /ws, and a phone caller speaking Twilio Media
 * Streams (µ-law 8 kHz) over /twilio. The mock's turn detection hears the speech, transcribes it
 * and answers with audio, which comes back to each client in its own format.
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Option, Redacted } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as Wav from "../../services/Wav.ts"
import { OpenAiRealtime } from "../../layers/openai/OpenAiRealtime.ts"
import { Agent } from "../../src/index.ts"
import * as OpenAIRealtimeMock from "../mocks/openai-realtime/index.ts"
import { Plan } from "../mocks/openai-realtime/index.ts"
import { PCM16_16K, synthesize } from "../mocks/shared/audio.ts"
import * as Mulaw from "../../services/Mulaw.ts"
import { connect, start, wait } from "./harness.ts"

const agent = Agent.make({ name: "voice", instructions: "You answer by voice." })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const realtime = (mock: { readonly url: string }) =>
  OpenAiRealtime.layer({ url: mock.url, apiKey: Redacted.make("sk-test"), inputTranscription: { model: "gpt-4o-mini-transcribe" } })

/** A /ws client of the realtime model that sent 500 ms of speech and no silence after it. */
const speechWithNoSilenceAfter = Effect.gen(function*() {
  const mock = yield* OpenAIRealtimeMock.make({ transcribe: () => "what is the weather", script: () => Plan.say("It is sunny today.") })
  const server = yield* start(agent, realtime(mock), { realtimeInputRate: 24_000 })
  const client = yield* connect(`${server.ws}/ws`)
  yield* wait(() => client.waitFor((f) => f.type === "ready"))
  for (let i = 0; i < 25; i++) client.socket.send(synthesize(PCM16_16K, 20))
  return client
})

describe("Server audio", () => {
  it.live("/ws: the user's 16 kHz speech reaches the model at 24 kHz; its spoken answer comes back as PCM16", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ transcribe: () => "what is the weather", script: () => Plan.say("It is sunny today.") })
      const dir = mkdtempSync(join(tmpdir(), "baton-record-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const server = yield* start(agent, realtime(mock), { realtimeInputRate: 24_000, recordDir: Option.some(dir) })
      const client = yield* connect(`${server.ws}/ws`)
      const ready = yield* wait(() => client.waitFor((f) => f.type === "ready"))
      assert.strictEqual(ready.audio, "realtime")
      client.sendJson({ type: "audio_format", sampleRate: 16000 })
      yield* wait(async () => {
        for (let i = 0; i < 25; i++) client.socket.send(synthesize(PCM16_16K, 20)) // 500 ms of speech, 20 ms frames
        for (let i = 0; i < 40; i++) {
          client.socket.send(synthesize(PCM16_16K, 20, { kind: "silence" }))
          await sleep(5)
        }
      })
      const format = yield* wait(() => client.waitFor((f) => f.type === "audio_format", "audio_format"))
      assert.strictEqual(format.sampleRate, 24000)
      yield* wait(() => client.waitFor((f) => f.type === "speech_finished", "the spoken answer to finish", 15_000))
      assert.isAbove(client.binary.reduce((n, b) => n + b.byteLength, 0), 0)
      assert.isTrue(client.frames.some((f) => f.type === "conversation_item_added" && f.item.role === "user" && f.item.text === "what is the weather"))
      assert.include(client.frames.filter((f) => f.type === "agent_text").map((f) => f.delta).join(""), "It is sunny today.")
      // with a record directory, both sides of the call are in WAV files once the session ends
      client.socket.close()
      yield* wait(async () => {
        for (let i = 0; i < 200 && server.state.registry.open() > 0; i++) await sleep(10)
      })
      const files = readdirSync(dir).sort()
      assert.strictEqual(files.length, 2, files.join(", "))
      const [agentSide, userSide] = files.map((f) => Wav.decodeSync(readFileSync(join(dir, f))))
      assert.match(files[0]!, /\.agent\.wav$/)
      if (typeof agentSide === "string" || typeof userSide === "string") return assert.fail(`${agentSide} ${userSide}`)
      assert.strictEqual(userSide!.sampleRate, 16000)
      assert.isAbove(AudioFrame.durationMs(userSide!), 1000) // the 1.3 s the client sent
      assert.isAbove(AudioFrame.rms(agentSide!), 0)
    }).pipe(Effect.scoped), 30_000)

  it.live("issue 33 item 8: /ws with a realtime model: speech then audio_end (push-to-talk released) is a turn the model answers", () =>
    Effect.gen(function*() {
      const client = yield* speechWithNoSilenceAfter
      // the model's turn detection hears silence only from audio_end
      client.sendJson({ type: "audio_end" })
      yield* wait(() => client.waitFor((f) => f.type === "speech_finished", "the spoken answer to finish", 15_000))
      assert.isTrue(client.frames.some((f) => f.type === "conversation_item_added" && f.item.role === "user" && f.item.text === "what is the weather"))
      assert.isFalse(client.frames.some((f) => f.type === "error"), JSON.stringify(client.frames.filter((f) => f.type === "error")))
    }).pipe(Effect.scoped), 30_000)

  it.live("issue 33 item 8: /ws with a realtime model: a client that stops sending mid-speech is heard as silent, and its turn answered", () =>
    Effect.gen(function*() {
      const client = yield* speechWithNoSilenceAfter
      // and nothing more at all (a muted microphone)
      yield* wait(() => client.waitFor((f) => f.type === "speech_finished", "the spoken answer to finish", 15_000))
      assert.isTrue(client.frames.some((f) => f.type === "conversation_item_added" && f.item.role === "user" && f.item.text === "what is the weather"))
    }).pipe(Effect.scoped), 30_000)

  it.live("/twilio: a caller's µ-law speech in 20 ms media messages is answered with µ-law media and a mark", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ transcribe: () => "book a visit", script: () => Plan.say("Sure, which day?") })
      const server = yield* start(agent, realtime(mock), { realtimeInputRate: 24_000 })
      const caller = yield* connect(`${server.ws}/twilio`)
      const streamSid = "MZ00000000000000000000000000000001"
      const media = (samples: Int16Array) =>
        caller.sendJson({ event: "media", streamSid, media: { track: "inbound", payload: Buffer.from(Mulaw.encode(samples)).toString("base64") } })
      caller.sendJson({ event: "connected", protocol: "Call", version: "1.0.0" })
      caller.sendJson({ event: "start", streamSid, start: { streamSid, mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 } } })
      caller.socket.send("{garbage") // a malformed message is logged and skipped; the call goes on
      yield* wait(async () => {
        const tone = new Int16Array(160)
        for (let i = 0; i < 160; i++) tone[i] = Math.round(Math.sin((2 * Math.PI * 220 * i) / 8000) * 10000)
        for (let i = 0; i < 30; i++) media(tone)
        for (let i = 0; i < 45; i++) {
          media(new Int16Array(160))
          await sleep(5)
        }
      })
      const reply = yield* wait(() => caller.waitFor((f) => f.event === "media", "media back", 15_000))
      assert.strictEqual(reply.streamSid, streamSid)
      const bytes = Buffer.from(reply.media.payload, "base64")
      assert.isAtMost(bytes.length, 160) // 20 ms at 8 kHz, as Twilio expects
      yield* wait(() => caller.waitFor((f) => f.event === "mark", "a mark after the reply", 15_000))
      caller.sendJson({ event: "stop", streamSid, stop: {} })
      const { code } = yield* wait(() => caller.closed)
      assert.strictEqual(code, 1000)
      // the session closes right after the socket does
      yield* wait(async () => {
        for (let i = 0; i < 200 && server.state.registry.open() > 0; i++) await sleep(10)
      })
      assert.strictEqual(server.state.registry.open(), 0)
    }).pipe(Effect.scoped), 30_000)
})
