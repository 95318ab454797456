/**
 * SttFallback: a stream opens on the first engine that can open one; an engine whose stream
 * fails is passed over, so the pipeline's new stream is the next engine's; engines of other
 * rates are refused.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Queue, Redacted, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as DeepgramStt from "../../layers/deepgram/DeepgramStt.ts"
import * as PocketsphinxStt from "../../layers/local/PocketsphinxStt.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Stt, type SttEvent } from "../../services/Stt.ts"
import * as SttFallback from "../../services/SttFallback.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import * as DeepgramMock from "../mocks/deepgram/server.ts"
import { engines, speak, transcribe } from "../voice/harness.ts"

const refused = () => new VoiceError({ source: "stt", reason: "InvalidRequest", status: 401, description: "Invalid credentials." })

/** A scripted engine: whether its streams open, whether their pushes work; how many it opened. */
const fake = (rate: number, behaviour: { readonly opens: () => boolean; readonly pushes: boolean }) => {
  const record = { opened: 0, tried: 0 }
  const layer = Layer.succeed(Stt, Stt.of({
    sampleRate: rate,
    stream: () =>
      Effect.gen(function*() {
        record.tried++
        if (!behaviour.opens()) return yield* refused()
        record.opened++
        const events = yield* Queue.unbounded<SttEvent, VoiceError>()
        return {
          push: () => (behaviour.pushes ? Effect.void : Effect.fail(new VoiceError({ source: "stt", reason: "Transport", description: "socket closed (1006)" }))),
          endUtterance: Queue.offer(events, { _tag: "Final", text: "heard" }).pipe(Effect.asVoid),
          events: Stream.fromQueue(events)
        }
      })
  }))
  return { record, layer }
}

const open = Effect.flatMap(Effect.service(Stt), (stt) => stt.stream())
const frame = AudioFrame.silence(20, 16000)

describe("SttFallback", () => {
  it.effect("a stream opens on the next engine when one refuses; the refusing one is passed over for recoverAfter", () => {
    const primary = fake(16000, { opens: () => false, pushes: true })
    const backup = fake(16000, { opens: () => true, pushes: true })
    return Effect.gen(function*() {
      yield* open
      assert.deepStrictEqual([primary.record.tried, backup.record.opened], [1, 1])
      yield* open
      assert.deepStrictEqual([primary.record.tried, backup.record.opened], [1, 2])
      yield* TestClock.adjust("31 seconds")
      yield* open
      assert.deepStrictEqual([primary.record.tried, backup.record.opened], [2, 3])
    }).pipe(Effect.scoped, Effect.provide(SttFallback.layer([primary.layer, backup.layer])))
  })

  it.effect("an engine whose stream fails is passed over: the next stream (the pipeline's new one) is the next engine's", () => {
    const breaking = fake(16000, { opens: () => true, pushes: false })
    const backup = fake(16000, { opens: () => true, pushes: true })
    return Effect.gen(function*() {
      const first = yield* open
      assert.isTrue(Exit.isFailure(yield* first.push(frame).pipe(Effect.exit)))
      const second = yield* open
      yield* second.push(frame)
      yield* second.endUtterance
      const [heard] = yield* second.events.pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(heard, { _tag: "Final", text: "heard" })
      assert.deepStrictEqual([breaking.record.opened, backup.record.opened], [1, 1])
    }).pipe(Effect.scoped, Effect.provide(SttFallback.layer([breaking.layer, backup.layer])))
  })

  it.effect("engines that take different rates are refused when the layer is built", () =>
    Effect.gen(function*() {
      const exit = yield* Layer.build(SttFallback.layer([fake(16000, { opens: () => true, pushes: true }).layer, fake(8000, { opens: () => true, pushes: true }).layer])).pipe(
        Effect.scoped,
        Effect.exit
      )
      assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "different rates (16000, 8000 Hz)")
    }))

  it.live("Deepgram refusing the key (401, a real socket): pocketsphinx hears the question", () =>
    Effect.gen(function*() {
      const question = yield* speak("What is the weather in Paris?").pipe(Effect.provide(engines))
      const mock = yield* DeepgramMock.make()
      const deepgram = DeepgramStt.layer({ apiKey: Redacted.make("dg-wrong"), baseUrl: mock.url })
      const text = yield* transcribe(question).pipe(Effect.provide(SttFallback.layer([deepgram, PocketsphinxStt.layer()])))
      assert.strictEqual(text, "what is the weather in paris")
      assert.deepStrictEqual([mock.refused(), mock.connections.length], [1, 0])
    }), 30_000)
})
