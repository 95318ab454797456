/**
 * Text to speech with OpenAI's `POST /v1/audio/speech` (`gpt-4o-mini-tts` by default), asking
 * for `response_format: "pcm"`: raw PCM16 mono at 24 kHz, streamed as the body arrives, so the
 * first frame plays before the sentence is done. Body chunks can split a sample; the odd byte is
 * kept for the next chunk. Interrupting the stream aborts the request.
 *
 * `OpenAiTts.layer({ apiKey, baseUrl?, model?, voice? })` / `OpenAiTts.layerConfig` (env
 * `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_TTS_MODEL`, `OPENAI_TTS_VOICE`) provide `Tts`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Config, Effect, Layer, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Tts, type TtsOptions, type TtsService } from "../../services/Tts.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import { connectionConfig, errorText, type OpenAiAudioConnection, post } from "./AudioHttp.ts"

/**
 * Options of OpenAI text to speech: the connection (key, base URL), the model, the voice and how
 * to speak.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenAiTtsOptions extends OpenAiAudioConnection {
  /** Default `gpt-4o-mini-tts`. */
  readonly model?: string
  /** Default `alloy`. */
  readonly voice?: string
  /** How to speak (gpt-4o-mini-tts only). */
  readonly instructions?: string
}

const sampleRate = 24000

/** Byte chunks to whole-sample frames, carrying an odd byte over to the next chunk. */
const toFrames = (chunks: Stream.Stream<Uint8Array, VoiceError>) =>
  Stream.suspend(() => {
    let carry: Uint8Array = new Uint8Array(0)
    return chunks.pipe(
      Stream.map((chunk): AudioFrame.AudioFrame | undefined => {
        const all = new Uint8Array(carry.length + chunk.length)
        all.set(carry)
        all.set(chunk, carry.length)
        const whole = all.length - (all.length % 2)
        carry = all.slice(whole)
        return whole === 0 ? undefined : AudioFrame.fromPcm16(all.slice(0, whole), sampleRate)
      }),
      Stream.filter((frame): frame is AudioFrame.AudioFrame => frame !== undefined)
    )
  })

/**
 * The `Tts` service over OpenAI's `/audio/speech`, streaming PCM as it arrives; empty text gives
 * no audio.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: OpenAiTtsOptions): TtsService => ({
  sampleRate,
  synthesize: (text: string, call?: TtsOptions) =>
    text.trim() === ""
      ? Stream.empty
      : Stream.unwrap(
        post(
          "tts",
          options,
          "/audio/speech",
          JSON.stringify({
            model: options.model ?? "gpt-4o-mini-tts",
            input: text,
            voice: call?.voice ?? options.voice ?? "alloy",
            response_format: "pcm",
            ...(call?.speed === undefined ? {} : { speed: call.speed }),
            ...(options.instructions === undefined ? {} : { instructions: options.instructions })
          }),
          { "Content-Type": "application/json" }
        ).pipe(
          Effect.map((response) =>
            toFrames(Stream.fromReadableStream({
              evaluate: () => response.body!,
              onError: (e) =>
                new VoiceError({ source: "tts", reason: "Transport", description: `OpenAI's audio stopped: ${errorText(e)}` })
            }))
          ),
          Effect.withSpan("OpenAiTts.synthesize")
        )
      )
})

/**
 * `Tts` by OpenAI's speech endpoint with explicit options.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: OpenAiTtsOptions): Layer.Layer<Tts> => Layer.succeed(Tts, make(options))

/**
 * {@link layer} from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_TTS_MODEL`, `OPENAI_TTS_VOICE`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Tts, Config.ConfigError> = Layer.effect(
  Tts,
  Effect.gen(function*() {
    const connection = yield* connectionConfig
    const model = yield* Config.String("OPENAI_TTS_MODEL").pipe(Config.withDefault("gpt-4o-mini-tts"))
    const voice = yield* Config.String("OPENAI_TTS_VOICE").pipe(Config.withDefault("alloy"))
    return make({ ...connection, model, voice })
  })
)
