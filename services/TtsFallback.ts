/**
 * A `Tts` that speaks with the first of several engines that can: a caller should hear the
 * reply in another voice rather than nothing when the TTS provider is down.
 *
 * - An engine that fails before its first frame (any `VoiceError`: the provider unreachable, a
 *   bad key, a 5xx) or gives none within `attemptTimeout` is left for the next, which is asked
 *   the same text; it is passed over for `recoverAfter`, then asked first again.
 * - Once audio has started, its failure is the sentence's (the pipeline skips the rest of it).
 * - The options (a voice) go to the first engine only: a voice of one engine means nothing to
 *   another, which speaks with its own default (the speed is passed on).
 * - Frames of an engine at another rate are resampled to the first engine's (the rate the
 *   pipeline, and a LiveKit track, were made for): the layer needs `Resampler`.
 * - Each failover is a warning in the log.
 *
 * ```ts
 * TtsFallback.layer([CartesiaTts.layerConfig, FliteTts.layer({ voice: "rms" })])
 *   .pipe(Layer.provide(Resampler.layer), Layer.provide(RtcNode.layer))
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Context, Duration, Effect, Layer, Option, Stream } from "effect"
import * as AudioFrame from "./AudioFrame.ts"
import * as Fallback from "./Fallback.ts"
import { Resampler } from "./Resampler.ts"
import { Tts, type TtsOptions, type TtsService } from "./Tts.ts"
import { VoiceError } from "./VoiceError.ts"

/**
 * Options of the fallback engine: when to move on (as for every fallback) and how long an engine
 * may take to its first frame.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Fallback.Options {
  /** How long an engine may take to its first frame before the next is asked (default 5 s). */
  readonly attemptTimeout?: Duration.Input | undefined
}

interface Engine extends Fallback.Engine {
  readonly tts: TtsService
}

type Engines<E, R> = readonly [Layer.Layer<Tts, E, R>, ...Array<Layer.Layer<Tts, E, R>>]

/**
 * One `Tts` over `engines`, asked in order (see the module's comment).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E, R>(engines: Engines<E, R>, options: Options = {}): Layer.Layer<Tts, E, R | Resampler> =>
  Layer.effect(
    Tts,
    Effect.gen(function*() {
      const resampler = yield* Resampler
      const attemptTimeout = Duration.fromInputUnsafe(options.attemptTimeout ?? "5 seconds")
      const recoverAfterMs = Fallback.recoverAfterMs(options)
      const built: Array<Engine> = []
      for (const [i, engine] of engines.entries()) {
        const tts = Context.get(yield* Layer.build(engine), Tts)
        built.push({ tts, name: `TtsFallback: engine ${i + 1}`, downUntil: 0 })
      }
      const first = built[0]!
      const sampleRate = first.tts.sampleRate
      /** An engine's audio at the first engine's rate. */
      const atRate = (engine: Engine, text: string, ttsOptions: TtsOptions | undefined): Stream.Stream<AudioFrame.AudioFrame, VoiceError> => {
        const asked = engine === first ? ttsOptions : ttsOptions?.speed === undefined ? undefined : { speed: ttsOptions.speed }
        const frames = engine.tts.synthesize(text, asked)
        if (engine.tts.sampleRate === sampleRate) return frames
        return Stream.unwrap(Effect.map(resampler.make(engine.tts.sampleRate, sampleRate), (stage) =>
          frames.pipe(
            Stream.map((frame) => stage.push(frame)),
            Stream.flattenIterable,
            Stream.concat(Stream.suspend(() => Stream.fromIterable(stage.flush())))
          )))
      }
      return Tts.of({
        sampleRate,
        synthesize: (text, ttsOptions) =>
          Fallback.firstToAnswer({
            engines: built,
            attempt: (engine) => atRate(engine, text, ttsOptions),
            fault,
            noAnswer,
            attemptTimeout,
            recoverAfterMs
          })
      })
    })
  )

/** Any engine's error may be left for the next (a defect is not). */
const fault = (cause: Cause.Cause<VoiceError>): string | undefined => {
  const error = Cause.findErrorOption(cause)
  return Option.isSome(error) && error.value instanceof VoiceError ? error.value.message : undefined
}

const noAnswer = (engine: Engine, timeout: Duration.Duration) =>
  new VoiceError({ source: "tts", reason: "Timeout", description: `${engine.name} gave no audio within ${Duration.format(timeout)}` })
