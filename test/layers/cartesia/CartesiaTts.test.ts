import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Stream } from "effect"
import * as CartesiaTts from "../../../layers/cartesia/CartesiaTts.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { VoiceError } from "../../../services/VoiceError.ts"
import * as Mock from "../../mocks/cartesia/server.ts"

const failureOf = <A>(exit: Exit.Exit<A, VoiceError>): VoiceError => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
  assert.instanceOf(error, VoiceError)
  return error as VoiceError
}

const voice = "a0e99841-438c-4a64-b679-ae501e7d6091"
const ttsOf = (mock: Mock.CartesiaMock, extra: Partial<CartesiaTts.CartesiaTtsOptions> = {}) =>
  CartesiaTts.make({ apiKey: Redacted.make("ct-test"), voice, baseUrl: mock.url, ...extra })

const samplesFor = (text: string) => Math.round(((text.length * 30) / 1000) * 24000)

const eventually = (check: () => boolean) =>
  Effect.gen(function*() {
    while (!check()) yield* Effect.sleep("5 millis")
  })

describe("CartesiaTts", () => {
  it.live("streams each context's chunks as 24 kHz frames, several contexts on one socket", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      mock.faults.strayContext = true
      const tts = yield* ttsOf(mock)
      assert.strictEqual(tts.sampleRate, 24000)
      const texts = ["Hello, welcome to the hotel.", "Your room is on the third floor, next to the lift."]
      const [a, b] = yield* Effect.all(texts.map((t) => Stream.runCollect(tts.synthesize(t))), { concurrency: 2 })
      for (const [frames, text] of [[a!, texts[0]!], [b!, texts[1]!]] as const) {
        const all = AudioFrame.concat(frames)
        assert.strictEqual(all.sampleRate, 24000)
        assert.strictEqual(all.data.length, samplesFor(text))
      }
      assert.strictEqual(mock.connections, 1)
      const first = mock.messages[0]!.message
      assert.deepStrictEqual(first["voice"], { mode: "id", id: voice })
      assert.deepStrictEqual(first["output_format"], { container: "raw", encoding: "pcm_s16le", sample_rate: 24000 })
      assert.deepStrictEqual([first["model_id"], first["continue"]], ["sonic-3", false])
      assert.notStrictEqual(mock.messages[0]!.message["context_id"], mock.messages[1]!.message["context_id"])
    }))

  it.live("stopping a stream cancels its context; its late chunks never reach the next reply", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ intervalMs: 5 })
      mock.faults.chunksAfterCancel = 3
      const tts = yield* ttsOf(mock)
      const cut = yield* tts.synthesize("A long reply that the user interrupts halfway through it.").pipe(Stream.take(2), Stream.runCollect)
      assert.strictEqual(cut.length, 2)
      yield* eventually(() => mock.messages.some((m) => m.message["cancel"] === true))
      const cancelled = mock.messages.find((m) => m.message["cancel"] === true)!.message
      assert.strictEqual(cancelled["context_id"], mock.messages[0]!.message["context_id"])
      yield* eventually(() => mock.lateChunks === 3)
      const next = AudioFrame.concat(yield* Stream.runCollect(tts.synthesize("Sorry, go ahead.")))
      assert.strictEqual(next.data.length, samplesFor("Sorry, go ahead."))
      assert.strictEqual(mock.connections, 1)
    }))

  it.live("error frames (title, message, error_code) fail only their context, with a reason by status and what Cartesia said", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      const tts = yield* ttsOf(mock)
      mock.faults.error = { status: 400, title: "Voice not found", message: "No voice with this id", errorCode: "voice_not_found" }
      const bad = failureOf(yield* Stream.runCollect(tts.synthesize("Hi.")).pipe(Effect.exit))
      assert.deepStrictEqual([bad.reason, bad.status, bad.retryable], ["InvalidRequest", 400, false])
      assert.include(bad.message, "Voice not found: No voice with this id (voice_not_found)")
      mock.faults.error = { status: 500, message: "internal" }
      const down = failureOf(yield* Stream.runCollect(tts.synthesize("Hi.")).pipe(Effect.exit))
      assert.deepStrictEqual([down.reason, down.retryable], ["ProviderError", true])
      assert.strictEqual(AudioFrame.concat(yield* Stream.runCollect(tts.synthesize("Hi."))).data.length, samplesFor("Hi."))
      assert.strictEqual(mock.connections, 1)
    }))

  it.live("a socket closed mid-generation fails that reply; the next one opens a new socket", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      const tts = yield* ttsOf(mock)
      mock.faults.closeAfterChunks = { chunks: 2, code: 1011, reason: "server restart" }
      const lost = failureOf(yield* Stream.runCollect(tts.synthesize("This reply will be cut.")).pipe(Effect.exit))
      assert.deepStrictEqual([lost.reason, lost.status, lost.retryable], ["Transport", 1011, true])
      const again = AudioFrame.concat(yield* Stream.runCollect(tts.synthesize("Back again.")))
      assert.strictEqual(again.data.length, samplesFor("Back again."))
      assert.strictEqual(mock.connections, 2)
    }))

  it.live("no chunk within chunkTimeout fails with Timeout; a wrong key with 401", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      mock.faults.stallAfterChunks = 1
      const tts = yield* ttsOf(mock, { chunkTimeout: "150 millis" })
      const stalled = failureOf(yield* Stream.runCollect(tts.synthesize("A stalled reply.")).pipe(Effect.exit))
      assert.strictEqual(stalled.reason, "Timeout")
      const wrong = yield* CartesiaTts.make({ apiKey: Redacted.make("ct-secret-wrong"), voice, baseUrl: mock.url })
      const refused = failureOf(yield* Stream.runCollect(wrong.synthesize("Hi.")).pipe(Effect.exit))
      assert.deepStrictEqual([refused.reason, refused.status], ["InvalidRequest", 401])
      assert.notInclude(refused.message, "ct-secret-wrong")
    }))
})
