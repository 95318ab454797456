import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Stream } from "effect"
import * as CartesiaTts from "../../../layers/cartesia/CartesiaTts.ts"
import * as DeepgramStt from "../../../layers/deepgram/DeepgramStt.ts"
import * as OpenAiStt from "../../../layers/openai/OpenAiStt.ts"
import * as OpenAiTts from "../../../layers/openai/OpenAiTts.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { Stt } from "../../../services/Stt.ts"
import { Tts } from "../../../services/Tts.ts"
import * as CartesiaMock from "../../mocks/cartesia/server.ts"
import * as DeepgramMock from "../../mocks/deepgram/server.ts"
import * as OpenAiMock from "../../mocks/openai-audio/server.ts"

const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env }))

/** One short utterance through an Stt layer; its Final. */
const finalThrough = (layer: Layer.Layer<Stt, unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const stream = yield* (yield* Stt).stream()
    yield* stream.push(AudioFrame.make(Int16Array.from({ length: 3200 }, (_, i) => (i % 40) * 300), 16000))
    yield* stream.endUtterance
    return yield* stream.events.pipe(Stream.filter((e) => e._tag === "Final"), Stream.runHead)
  })).pipe(Effect.provide(layer))

const samplesThrough = (layer: Layer.Layer<Tts, unknown>) =>
  Effect.gen(function*() {
    const frames = yield* Stream.runCollect((yield* Tts).synthesize("Hello."))
    return AudioFrame.concat(frames).data.length
  }).pipe(Effect.provide(layer))

describe("cloud layers from the environment", () => {
  it.effect("read their key and base URL from the environment", () =>
    Effect.gen(function*() {
      const openai = yield* OpenAiMock.make({ transcripts: ["from env"] })
      const deepgram = yield* DeepgramMock.make({ transcripts: ["deepgram from env"] })
      const cartesia = yield* CartesiaMock.make()
      const openAiEnv = withEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: openai.baseUrl })
      const stt = yield* finalThrough(OpenAiStt.layerConfig.pipe(Layer.provide(openAiEnv)))
      assert.deepStrictEqual(stt._tag === "Some" && stt.value.text, "from env")
      assert.isAbove(yield* samplesThrough(OpenAiTts.layerConfig.pipe(Layer.provide(openAiEnv))), 0)
      const dg = yield* finalThrough(
        DeepgramStt.layerConfig.pipe(Layer.provide(withEnv({ DEEPGRAM_API_KEY: "dg-test", DEEPGRAM_BASE_URL: deepgram.url })))
      )
      assert.deepStrictEqual(dg._tag === "Some" && dg.value.text, "deepgram from env")
      const ct = yield* samplesThrough(CartesiaTts.layerConfig.pipe(
        Layer.provide(withEnv({ CARTESIA_API_KEY: "ct-test", CARTESIA_VOICE: "voice-1", CARTESIA_BASE_URL: cartesia.url }))
      ))
      assert.strictEqual(ct, Math.round(("Hello.".length * 30 / 1000) * 24000))
      assert.strictEqual(cartesia.messages[0]!.message["voice"] !== undefined && (cartesia.messages[0]!.message["voice"] as { id: string }).id, "voice-1")
    }))

  it.effect("without a key the layer fails to build with a ConfigError naming the variable", () =>
    Effect.gen(function*() {
      for (const [layer, name] of [
        [OpenAiStt.layerConfig, "OPENAI_API_KEY"],
        [OpenAiTts.layerConfig, "OPENAI_API_KEY"],
        [DeepgramStt.layerConfig, "DEEPGRAM_API_KEY"],
        [CartesiaTts.layerConfig, "CARTESIA_API_KEY"]
      ] as const) {
        const exit = yield* Layer.build((layer as Layer.Layer<unknown, unknown>).pipe(Layer.provide(withEnv({})))).pipe(Effect.exit)
        assert.isTrue(Exit.isFailure(exit))
        assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), name)
      }
    }))
})
