import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Stream } from "effect"
import * as FliteTts from "../../../layers/local/FliteTts.ts"
import * as OpenAiStt from "../../../layers/openai/OpenAiStt.ts"
import * as OpenAiTts from "../../../layers/openai/OpenAiTts.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import type { SttService } from "../../../services/Stt.ts"
import { VoiceError } from "../../../services/VoiceError.ts"
import * as Mock from "../../mocks/openai-audio/server.ts"
import { speak } from "../local/helpers.ts"

const failureOf = <A>(exit: Exit.Exit<A, VoiceError>): VoiceError => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
  assert.instanceOf(error, VoiceError)
  return error as VoiceError
}

const finalOf = (stt: SttService, audio: AudioFrame.AudioFrame | undefined, language?: string) =>
  Effect.scoped(Effect.gen(function*() {
    const stream = yield* stt.stream(language === undefined ? {} : { language })
    if (audio !== undefined) for (const f of AudioFrame.split(audio, 20)) yield* stream.push(f)
    yield* stream.endUtterance
    return yield* stream.events.pipe(Stream.runHead)
  }))

describe("OpenAiStt", () => {
  it.effect("sends the utterance as a 16 kHz WAV with the model and key, and emits the text as Final", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ transcripts: ["I would like a table for two."] })
      const stt = OpenAiStt.make({ apiKey: Redacted.make("sk-test"), baseUrl: mock.baseUrl, model: "whisper-1" })
      const audio = yield* speak("I would like a table for two.").pipe(Effect.provide(FliteTts.layer()))
      const event = yield* finalOf(stt, audio, "en-US")
      assert.deepStrictEqual(event._tag === "Some" && event.value, { _tag: "Final", text: "I would like a table for two." })
      const [request] = mock.requests
      assert.strictEqual(request!.authorization, "Bearer sk-test")
      assert.strictEqual(request!.fields["model"], "whisper-1")
      assert.strictEqual(request!.fields["language"], "en")
      assert.deepStrictEqual([request!.file!.sampleRate, request!.file!.channels], [16000, 1])
      assert.approximately(request!.file!.durationMs, AudioFrame.durationMs(audio), 1)
    }))

  it.effect("an utterance with no audio is an empty Final without a request", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      const stt = OpenAiStt.make({ apiKey: Redacted.make("sk-test"), baseUrl: mock.baseUrl })
      const event = yield* finalOf(stt, undefined)
      assert.deepStrictEqual(event._tag === "Some" && event.value, { _tag: "Final", text: "" })
      assert.strictEqual(mock.requests.length, 0)
    }))

  it.effect("maps HTTP failures to reasons, never printing the key", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      const audio = AudioFrame.make(Int16Array.from({ length: 8000 }, (_, i) => (i % 50) * 100), 16000)
      const wrongKey = OpenAiStt.make({ apiKey: Redacted.make("sk-wrong-secret"), baseUrl: mock.baseUrl })
      const unauthorized = failureOf(yield* finalOf(wrongKey, audio).pipe(Effect.exit))
      assert.deepStrictEqual([unauthorized.reason, unauthorized.status, unauthorized.retryable], ["InvalidRequest", 401, false])
      assert.notInclude(unauthorized.message, "sk-wrong-secret")

      const stt = OpenAiStt.make({ apiKey: Redacted.make("sk-test"), baseUrl: mock.baseUrl })
      mock.faults.push({ kind: "status", status: 429, message: "Rate limit reached", retryAfter: 2 })
      const limited = failureOf(yield* finalOf(stt, audio).pipe(Effect.exit))
      assert.deepStrictEqual([limited.reason, limited.status, limited.retryable], ["ProviderError", 429, true])
      assert.include(limited.message, "Rate limit reached")
      assert.include(limited.message, "retry after 2")
      mock.faults.push({ kind: "status", status: 503 })
      assert.isTrue(failureOf(yield* finalOf(stt, audio).pipe(Effect.exit)).retryable)

      const refused = OpenAiStt.make({ apiKey: Redacted.make("sk-test"), baseUrl: "http://127.0.0.1:1/v1" })
      assert.strictEqual(failureOf(yield* finalOf(refused, audio).pipe(Effect.exit)).reason, "Transport")
      const wrongRate = failureOf(yield* finalOf(stt, AudioFrame.silence(100, 24000)).pipe(Effect.exit))
      assert.strictEqual(wrongRate.reason, "InvalidAudio")
    }))

  it.live("a provider that never answers fails with Timeout", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      mock.faults.push({ kind: "stall" })
      const stt = OpenAiStt.make({ apiKey: Redacted.make("sk-test"), baseUrl: mock.baseUrl, timeout: "200 millis" })
      const error = failureOf(yield* finalOf(stt, AudioFrame.silence(500, 16000)).pipe(Effect.exit))
      assert.deepStrictEqual([error.reason, error.retryable], ["Timeout", true])
    }))
})

describe("OpenAiTts", () => {
  const ttsOf = (mock: Mock.OpenAiAudioMock) => OpenAiTts.make({ apiKey: Redacted.make("sk-test"), baseUrl: mock.baseUrl })

  it.effect("streams the PCM body as 24 kHz frames, whole samples across odd chunk splits", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ msPerChar: 40, chunkBytes: 4801 })
      const tts = ttsOf(mock)
      assert.strictEqual(tts.sampleRate, 24000)
      const text = "Hello there, welcome."
      const frames = yield* Stream.runCollect(tts.synthesize(text, { voice: "nova" }))
      assert.isAbove(frames.length, 3)
      const all = AudioFrame.concat(frames)
      assert.strictEqual(all.sampleRate, 24000)
      assert.strictEqual(all.data.length, Math.round(((text.length * 40) / 1000) * 24000))
      // The tone survives the odd splits: a byte-shifted sample would be far louder than 8000.
      assert.isBelow(Math.max(...Array.from(all.data, Math.abs)), 8001)
      const json = mock.requests[0]!.json!
      assert.deepStrictEqual([json["response_format"], json["voice"], json["model"], json["input"]], ["pcm", "nova", "gpt-4o-mini-tts", text])
      assert.strictEqual(mock.requests[0]!.authorization, "Bearer sk-test")
    }))

  it.effect("a connection dropped mid-body fails the stream after the audio already sent; a 5xx is retryable", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ msPerChar: 40 })
      const tts = ttsOf(mock)
      mock.faults.push({ kind: "drop", afterBytes: 9602 })
      const got: Array<AudioFrame.AudioFrame> = []
      const dropped = failureOf(
        yield* tts.synthesize("A long enough sentence to be cut in the middle.").pipe(
          Stream.runForEach((f) => Effect.sync(() => void got.push(f))),
          Effect.exit
        )
      )
      assert.deepStrictEqual([dropped.reason, dropped.source], ["Transport", "tts"])
      assert.isAbove(got.length, 0)
      mock.faults.push({ kind: "status", status: 500 })
      const server = failureOf(yield* Stream.runCollect(tts.synthesize("Hi.")).pipe(Effect.exit))
      assert.deepStrictEqual([server.reason, server.status, server.retryable], ["ProviderError", 500, true])
      assert.strictEqual((yield* Stream.runCollect(tts.synthesize("  "))).length, 0)
    }))
})
