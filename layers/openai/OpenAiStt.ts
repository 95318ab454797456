/**
 * Speech to text with OpenAI's `POST /v1/audio/transcriptions` (`gpt-4o-mini-transcribe` by
 * default; `whisper-1` works too). The endpoint takes a whole file, so a stream keeps the
 * utterance's audio and, at `endUtterance`, sends it as a 16 kHz PCM16 WAV (multipart `file`)
 * and emits the `Final` from the JSON answer's `text`. No interims: the pipeline's VAD covers
 * barge-in without them.
 *
 * `OpenAiStt.layer({ apiKey, baseUrl?, model? })` / `OpenAiStt.layerConfig` (env
 * `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_STT_MODEL`) provide `Stt`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Cause, Config, Effect, Layer, Queue, Semaphore, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Stt, type SttEvent, type SttOptions, type SttService } from "../../services/Stt.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import * as Wav from "../../services/Wav.ts"
import { connectionConfig, type OpenAiAudioConnection, post } from "./AudioHttp.ts"

/**
 * Options of OpenAI speech to text: the connection (key, base URL), the model and a prompt of the
 * domain's words.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenAiSttOptions extends OpenAiAudioConnection {
  /** Default `gpt-4o-mini-transcribe`. */
  readonly model?: string
  /** A hint of the domain's words, sent as `prompt`. */
  readonly prompt?: string
}

const sampleRate = 16000

const transcribe = (options: OpenAiSttOptions, audio: AudioFrame.AudioFrame, language: string | undefined) =>
  Effect.gen(function*() {
    const form = new FormData()
    form.append("file", new Blob([Wav.encode(audio) as Uint8Array<ArrayBuffer>], { type: "audio/wav" }), "utterance.wav")
    form.append("model", options.model ?? "gpt-4o-mini-transcribe")
    form.append("response_format", "json")
    if (language !== undefined) form.append("language", language.split("-")[0]!)
    if (options.prompt !== undefined) form.append("prompt", options.prompt)
    const response = yield* post("stt", options, "/audio/transcriptions", form)
    const body = yield* Effect.tryPromise({
      try: () => response.json() as Promise<{ text?: unknown }>,
      catch: () => new VoiceError({ source: "stt", reason: "ProviderError", description: "OpenAI sent a transcription that is not JSON" })
    })
    if (typeof body.text !== "string") {
      return yield* new VoiceError({ source: "stt", reason: "ProviderError", description: "OpenAI's transcription has no text" })
    }
    return body.text.trim()
  }).pipe(Effect.withSpan("OpenAiStt.transcribe"))

/**
 * The `Stt` service over OpenAI's `/audio/transcriptions`: an utterance's frames are buffered and
 * sent as one WAV file when it ends, so it gives finals only, no interim text.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: OpenAiSttOptions): SttService => ({
  sampleRate,
  stream: Effect.fn("OpenAiStt.stream")(function*(streamOptions?: SttOptions) {
    const queue = yield* Queue.unbounded<SttEvent, VoiceError | Cause.Done>()
    yield* Effect.addFinalizer(() => Queue.end(queue))
    const lock = yield* Semaphore.make(1)
    let frames: Array<AudioFrame.AudioFrame> = []
    const push = (frame: AudioFrame.AudioFrame) =>
      frame.sampleRate !== sampleRate || frame.channels !== 1
        ? Effect.fail(
          new VoiceError({
            source: "stt",
            reason: "InvalidAudio",
            description: `OpenAiStt takes 16000 Hz mono, got ${frame.sampleRate} Hz × ${frame.channels} (resample first)`
          })
        )
        : Effect.sync(() => void frames.push(frame))
    const endUtterance = lock.withPermits(1)(Effect.gen(function*() {
      const audio = frames
      frames = []
      const text = audio.length === 0 || AudioFrame.durationMs(AudioFrame.concat(audio)) < 100
        ? ""
        : yield* transcribe(options, AudioFrame.concat(audio), streamOptions?.language)
      yield* Queue.offer(queue, { _tag: "Final", text })
    }))
    return { push, endUtterance, events: Stream.fromQueue(queue) }
  })
})

/**
 * `Stt` by OpenAI's transcriptions endpoint with explicit options.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: OpenAiSttOptions): Layer.Layer<Stt> => Layer.succeed(Stt, make(options))

/**
 * {@link layer} from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_STT_MODEL`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Stt, Config.ConfigError> = Layer.effect(
  Stt,
  Effect.gen(function*() {
    const connection = yield* connectionConfig
    const model = yield* Config.String("OPENAI_STT_MODEL").pipe(Config.withDefault("gpt-4o-mini-transcribe"))
    return make({ ...connection, model })
  })
)
