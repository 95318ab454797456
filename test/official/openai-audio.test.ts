/**
 * The OpenAI audio mock (test/mocks/openai-audio/server.ts) driven by `openai`'s own client
 * (issue 40, "Keep it proven"): audio in (`audio.transcriptions.create` with a WAV file), audio
 * out (`audio.speech.create`, PCM), and errors (a bad key, a 429 with `retry-after`) as the SDK's
 * typed errors. The transcription bodies compile against openai's `Transcription`. Nothing
 * reaches the network.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI, { toFile } from "openai"
import * as Wav from "../../services/Wav.ts"
import * as OpenAiAudioMock from "../mocks/openai-audio/server.ts"
import { PCM16_24K, synthesize } from "../mocks/shared/audio.ts"
import { typeCheckFrames } from "./support.ts"

/** 600 ms of voice-like PCM16 24 kHz mono as a WAV file. */
const wavOfSpeech = () => {
  const pcm = synthesize(PCM16_24K, 600)
  return toFile(new Uint8Array([...Wav.header(24000, 1, pcm.byteLength), ...pcm]), "turn.wav", { type: "audio/wav" })
}

describe("OpenAI audio mock, through openai's client", () => {
  it.live("official client: openai transcribes a WAV (audio in), speaks PCM (audio out), and throws its typed errors for a bad key and a 429; transcription bodies are openai Transcriptions", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAiAudioMock.make({ apiKey: "sk-audio", transcripts: ["what is the weather", "thank you"] })
      const client = new OpenAI({ apiKey: "sk-audio", baseURL: mock.baseUrl, maxRetries: 0 })

      // Audio in.
      const first = yield* Effect.promise(async () =>
        client.audio.transcriptions.create({ file: await wavOfSpeech(), model: "gpt-4o-mini-transcribe", language: "en" })
      )
      assert.strictEqual(first.text, "what is the weather")
      const sent = mock.requests.at(-1)!
      assert.deepInclude(sent.fields, { model: "gpt-4o-mini-transcribe", language: "en" })
      assert.deepStrictEqual(sent.file, { sampleRate: 24000, channels: 1, durationMs: 600 })
      assert.strictEqual(sent.authorization, "Bearer sk-audio")

      // Audio out: PCM 24 kHz, streamed in chunks that split samples; whole samples in the end.
      const speech = yield* Effect.promise(() =>
        client.audio.speech.create({ model: "gpt-4o-mini-tts", voice: "alloy", input: "It is sunny today.", response_format: "pcm" })
      )
      assert.strictEqual(speech.headers.get("content-type"), "audio/pcm")
      const audio = new Uint8Array(yield* Effect.promise(() => speech.arrayBuffer()))
      assert.strictEqual(audio.byteLength, Math.round(("It is sunny today.".length * 40 / 1000) * 24000) * 2)
      assert.deepInclude(mock.requests.at(-1)!.json, { model: "gpt-4o-mini-tts", voice: "alloy", response_format: "pcm" })

      // Errors, as the SDK's classes with the status and OpenAI's error body.
      const badKey = new OpenAI({ apiKey: "sk-wrong", baseURL: mock.baseUrl, maxRetries: 0 })
      const unauthorized = yield* Effect.promise(async () =>
        badKey.audio.transcriptions.create({ file: await wavOfSpeech(), model: "whisper-1" }).then(() => undefined, (e: unknown) => e)
      )
      assert.instanceOf(unauthorized, OpenAI.AuthenticationError)
      assert.strictEqual((unauthorized as InstanceType<typeof OpenAI.AuthenticationError>).code, "invalid_api_key")
      mock.faults.push({ kind: "status", status: 429, message: "Rate limit reached", retryAfter: 0 })
      const limited = yield* Effect.promise(() =>
        client.audio.speech.create({ model: "gpt-4o-mini-tts", voice: "alloy", input: "Hello.", response_format: "pcm" }).then(() => undefined, (e: unknown) => e)
      )
      assert.instanceOf(limited, OpenAI.RateLimitError)
      assert.strictEqual((limited as InstanceType<typeof OpenAI.RateLimitError>).headers.get("retry-after"), "0")
      // With retries, the SDK waits as told and gets the answer.
      mock.faults.push({ kind: "status", status: 429, message: "Rate limit reached", retryAfter: 0 })
      const retried = yield* Effect.promise(async () =>
        new OpenAI({ apiKey: "sk-audio", baseURL: mock.baseUrl, maxRetries: 1 }).audio.transcriptions.create({
          file: await wavOfSpeech(),
          model: "gpt-4o-mini-transcribe"
        })
      )
      assert.strictEqual(retried.text, "thank you")

      const errors = yield* Effect.promise(() => typeCheckFrames([first, retried], { module: "openai/resources/audio/transcriptions", type: "Transcription" }))
      assert.deepStrictEqual(errors, [])
    }).pipe(Effect.scoped), 30_000)
})
