import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Stream } from "effect"
import * as FliteTts from "../../../layers/local/FliteTts.ts"
import * as PocketsphinxStt from "../../../layers/local/PocketsphinxStt.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { Stt, type SttEvent } from "../../../services/Stt.ts"
import { VoiceError } from "../../../services/VoiceError.ts"
import { pad, speak, wordAccuracy } from "./helpers.ts"

const failureOf = <A>(exit: Exit.Exit<A, VoiceError>): VoiceError => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
  assert.instanceOf(error, VoiceError)
  return error as VoiceError
}

/** Pushes `audio` in 20 ms frames, ends the utterance, returns the events up to the Final. */
const transcribe = (audio: AudioFrame.AudioFrame) =>
  Effect.scoped(Effect.gen(function*() {
    const stt = yield* Stt
    const stream = yield* stt.stream()
    for (const frame of AudioFrame.split(audio, 20)) yield* stream.push(frame)
    yield* stream.endUtterance
    return yield* stream.events.pipe(Stream.takeUntil((e) => e._tag === "Final"), Stream.runCollect)
  }))

const finalOf = (events: ReadonlyArray<SttEvent>) => {
  const last = events.at(-1)
  assert.strictEqual(last?._tag, "Final")
  return last!.text
}

const engines = Layer.mergeAll(FliteTts.layer(), PocketsphinxStt.layer())

const sentences = [
  "Hello, I would like to book a table for two people.",
  "Please transfer me to the billing department.",
  "What time does the hotel restaurant open tomorrow?"
]

describe("PocketsphinxStt", () => {
  it.effect("transcribes what flite says back to its words, with interim guesses on the way", () =>
    Effect.gen(function*() {
      const stt = yield* Stt
      assert.strictEqual(stt.sampleRate, 16000)
      for (const sentence of sentences) {
        const events = yield* transcribe(pad(yield* speak(sentence), 200, 300))
        const heard = finalOf(events)
        assert.isAtLeast(wordAccuracy(sentence, heard), 0.8, `"${sentence}" was heard as "${heard}"`)
        const interims = events.filter((e) => e._tag === "Interim")
        assert.isAbove(interims.length, 0)
        assert.isAbove(wordAccuracy(interims.at(-1)!.text, heard), 0.5)
      }
    }).pipe(Effect.provide(engines)), 60_000)

  it.effect("with its second pass over the utterance (secondPass) it hears flite's sentences too", () =>
    Effect.gen(function*() {
      for (const sentence of sentences) {
        const heard = finalOf(yield* transcribe(pad(yield* speak(sentence), 200, 300)))
        assert.isAtLeast(wordAccuracy(sentence, heard), 0.8, `"${sentence}" was heard as "${heard}"`)
      }
    }).pipe(Effect.provide(Layer.mergeAll(FliteTts.layer(), PocketsphinxStt.layer({ secondPass: true })))), 60_000)

  it.effect("one stream decodes utterance after utterance; frames of any length are fine", () =>
    Effect.gen(function*() {
      const stt = yield* Stt
      const stream = yield* stt.stream()
      // ("Book a table for two." is heard "but the table for two" by either pass, depending on the silence after it)
      const first = yield* speak("I would like to speak to someone about my booking.")
      const second = yield* speak("Transfer me to billing.")
      // 37 ms frames: not a multiple of pocketsphinx's 20 ms chunk.
      for (const f of AudioFrame.split(first, 37)) yield* stream.push(f)
      yield* stream.endUtterance
      yield* stream.endUtterance // nothing heard since: an empty Final
      for (const f of AudioFrame.split(second, 37)) yield* stream.push(f)
      yield* stream.endUtterance
      const finals = yield* stream.events.pipe(
        Stream.filter((e) => e._tag === "Final"),
        Stream.take(3),
        Stream.runCollect
      )
      assert.isAtLeast(wordAccuracy("I would like to speak to someone about my booking.", finals[0]!.text), 0.8, finals[0]!.text)
      assert.strictEqual(finals[1]!.text, "")
      assert.isAtLeast(wordAccuracy("Transfer me to billing.", finals[2]!.text), 0.75, finals[2]!.text)
    }).pipe(Effect.scoped, Effect.provide(engines)), 60_000)

  it.effect("two streams decode at the same time, each with its own decoder", () =>
    Effect.gen(function*() {
      const [a, b] = [sentences[0]!, sentences[1]!]
      const [audioA, audioB] = [yield* speak(a), yield* speak(b)]
      const [heardA, heardB] = yield* Effect.all([transcribe(audioA), transcribe(audioB)], { concurrency: 2 })
      assert.isAtLeast(wordAccuracy(a, finalOf(heardA!)), 0.8, finalOf(heardA!))
      assert.isAtLeast(wordAccuracy(b, finalOf(heardB!)), 0.8, finalOf(heardB!))
    }).pipe(Effect.provide(engines)), 60_000)

  it.effect("a push interrupted mid-decode leaves the decoder usable (the native call finishes first)", () =>
    Effect.gen(function*() {
      const stt = yield* Stt
      const stream = yield* stt.stream()
      const long = yield* speak("The quick brown fox jumps over the lazy dog near the river bank. ".repeat(4))
      const fiber = yield* stream.push(long).pipe(Effect.forkChild)
      yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
      yield* stream.endUtterance // ends whatever the interrupted push decoded
      const sentence = "Please transfer me to the billing department."
      for (const f of AudioFrame.split(yield* speak(sentence), 20)) yield* stream.push(f)
      yield* stream.endUtterance
      const finals = yield* stream.events.pipe(Stream.filter((e) => e._tag === "Final"), Stream.take(2), Stream.runCollect)
      assert.isAtLeast(wordAccuracy(sentence, finals[1]!.text), 0.8, finals[1]!.text)
    }).pipe(Effect.scoped, Effect.provide(engines)), 60_000)

  it.effect("audio at another rate is refused with what to do", () =>
    Effect.gen(function*() {
      const stt = yield* Stt
      const stream = yield* stt.stream()
      const error = failureOf(yield* stream.push(AudioFrame.silence(20, 48000)).pipe(Effect.exit))
      assert.strictEqual(error.reason, "InvalidAudio")
      assert.include(error.message, "resample")
    }).pipe(Effect.scoped, Effect.provide(PocketsphinxStt.layer())))

  it.effect("a missing library or model fails the layer with the apt-get line", () =>
    Effect.gen(function*() {
      const lib = failureOf(
        yield* Layer.build(PocketsphinxStt.layer({ pocketsphinx: "/nonexistent/libpocketsphinx.so.3" })).pipe(Effect.exit)
      )
      assert.strictEqual(lib.reason, "Unavailable")
      assert.include(lib.message, "apt-get install -y pocketsphinx pocketsphinx-en-us")
      const model = failureOf(yield* Layer.build(PocketsphinxStt.layer({ modelDir: "/nonexistent/en-us" })).pipe(Effect.exit))
      assert.strictEqual(model.reason, "Unavailable")
      assert.include(model.message, "/nonexistent/en-us")
      assert.include(model.message, "apt-get install -y pocketsphinx pocketsphinx-en-us")
    }))
})
