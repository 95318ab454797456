/**
 * TtsFallback: a TTS that fails before its first frame (or gives none in time) is left for the
 * next engine, whose frames come at the first engine's rate; audio that started is not asked of
 * another; a failed engine is passed over for a while; the voice goes to the first engine only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Redacted, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as CartesiaTts from "../../layers/cartesia/CartesiaTts.ts"
import * as FliteTts from "../../layers/local/FliteTts.ts"
import { RtcNode } from "../../layers/rtc/RtcNode.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Resampler } from "../../services/Resampler.ts"
import { Tts, type TtsOptions } from "../../services/Tts.ts"
import * as TtsFallback from "../../services/TtsFallback.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import * as CartesiaMock from "../mocks/cartesia/server.ts"

/** A scripted engine at `rate`: what it was asked, and the stream `speak` gives for each text. */
const fake = (rate: number, speak: (text: string) => Stream.Stream<AudioFrame.AudioFrame, VoiceError>) => {
  const asked: Array<{ readonly text: string; readonly options: TtsOptions | undefined }> = []
  const layer = Layer.succeed(Tts, Tts.of({ sampleRate: rate, synthesize: (text, options) => (asked.push({ text, options }), speak(text)) }))
  return { asked, layer }
}
const tone = (rate: number) => Stream.make(AudioFrame.silence(20, rate), AudioFrame.silence(20, rate))
const down = () => Stream.fail(new VoiceError({ source: "tts", reason: "Transport", description: "connection refused" }))
/** Same-rate engines never resample: a resampler that would say so. */
const noResampling = Layer.succeed(Resampler, { make: () => Effect.die(new Error("resampled")) })

const speak = (text: string, options?: TtsOptions) =>
  Effect.flatMap(Effect.service(Tts), (tts) => Stream.runCollect(tts.synthesize(text, options)))

describe("TtsFallback", () => {
  it.effect("an engine that fails before its first frame is left for the next; it is passed over for recoverAfter; the voice goes to the first only", () => {
    const primary = fake(24000, down)
    const backup = fake(24000, () => tone(24000))
    return Effect.gen(function*() {
      const frames = yield* speak("Hello.", { voice: "narrator", speed: 1.2 })
      assert.strictEqual(frames.length, 2)
      assert.deepStrictEqual(primary.asked, [{ text: "Hello.", options: { voice: "narrator", speed: 1.2 } }])
      assert.deepStrictEqual(backup.asked, [{ text: "Hello.", options: { speed: 1.2 } }])
      yield* speak("Again.")
      assert.deepStrictEqual([primary.asked.length, backup.asked.length], [1, 2])
      yield* TestClock.adjust("31 seconds")
      yield* speak("Later.")
      assert.deepStrictEqual([primary.asked.length, backup.asked.length], [2, 3])
    }).pipe(Effect.provide(TtsFallback.layer([primary.layer, backup.layer]).pipe(Layer.provide(noResampling))))
  })

  it.effect("no first frame within attemptTimeout: the next engine speaks", () => {
    const stalled = fake(24000, () => Stream.never)
    const backup = fake(24000, () => tone(24000))
    return Effect.gen(function*() {
      const fiber = yield* speak("Hello.").pipe(Effect.forkChild)
      yield* TestClock.adjust("5 seconds")
      const frames = yield* Fiber.await(fiber)
      assert.isTrue(Exit.isSuccess(frames) && frames.value.length === 2)
      assert.strictEqual(backup.asked.length, 1)
    }).pipe(Effect.provide(TtsFallback.layer([stalled.layer, backup.layer]).pipe(Layer.provide(noResampling))))
  })

  it.effect("audio that started is not asked of another engine: its failure is the sentence's", () => {
    const breaking = fake(24000, () => Stream.concat(tone(24000), down()))
    const backup = fake(24000, () => tone(24000))
    return Effect.gen(function*() {
      const exit = yield* speak("Hello.").pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(backup.asked.length, 0)
    }).pipe(Effect.provide(TtsFallback.layer([breaking.layer, backup.layer]).pipe(Layer.provide(noResampling))))
  })

  it.live("Cartesia refusing the key (401, a real socket): flite speaks instead, resampled to Cartesia's 24 kHz", () =>
    Effect.gen(function*() {
      const mock = yield* CartesiaMock.make()
      const cartesia = CartesiaTts.layer({ apiKey: Redacted.make("ct-secret-wrong"), voice: "a0e99841-438c-4a64-b679-ae501e7d6091", baseUrl: mock.url })
      const tts = TtsFallback.layer([cartesia, FliteTts.layer({ voice: "rms" })]).pipe(Layer.provide(Resampler.layer), Layer.provide(RtcNode.layer))
      const frames = yield* speak("The weather is sunny today.", { voice: "a0e99841-438c-4a64-b679-ae501e7d6091" }).pipe(Effect.provide(tts))
      const audio = AudioFrame.concat(frames)
      assert.strictEqual(audio.sampleRate, 24000)
      assert.isAbove(AudioFrame.durationMs(audio), 800)
      assert.isAbove(AudioFrame.rms(audio), 0)
      assert.deepStrictEqual([mock.refused, mock.connections], [1, 0])
    }), 30_000)
})
