/**
 * Voice activity detection: where the user's speech starts and ends in a stream of frames.
 * Engines (WebRTC VAD, Silero) implement it as Layers. One `VadStream` serves one audio stream:
 * it keeps the state of the speech it is in; the pipeline pushes frames in order and acts on the
 * events each push returns (a turn's end, a barge-in).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, type Effect, type Scope } from "effect"
import type { AudioFrame } from "./AudioFrame.ts"
import type { VoiceError } from "./VoiceError.ts"

/**
 * Options of a VAD stream: how long speech and silence must last, and the sensitivity.
 *
 * @since 0.1.0
 * @category models
 */
export interface VadOptions {
  /** Speech must last this long before `SpeechStarted` (filters clicks). Default 100 ms. */
  readonly minSpeechMs?: number
  /** Silence must last this long before `SpeechEnded`. Default 300 ms. */
  readonly minSilenceMs?: number
  /** Engine-specific sensitivity in [0, 1] (probability threshold, aggressiveness). */
  readonly threshold?: number
}

/**
 * Times are milliseconds of audio pushed into this stream (not wall time).
 *
 * @since 0.1.0
 * @category models
 */
export type VadEvent =
  | { readonly _tag: "SpeechStarted"; readonly atMs: number }
  | { readonly _tag: "SpeechEnded"; readonly atMs: number; readonly speechMs: number }

/**
 * One VAD stream: push frames, get the speech starts and ends they completed.
 *
 * @since 0.1.0
 * @category models
 */
export interface VadStream {
  /** Takes the next frame (any length, the engine's rate); returns the events it completed. */
  readonly push: (frame: AudioFrame) => Effect.Effect<ReadonlyArray<VadEvent>, VoiceError>
  /** True between `SpeechStarted` and `SpeechEnded`. */
  readonly speaking: () => boolean
}

/**
 * A voice activity detector: the rates it takes and a way to open streams.
 *
 * @since 0.1.0
 * @category models
 */
export interface VadService {
  /** Rates the engine takes directly; other rates are resampled by the caller. */
  readonly sampleRates: ReadonlyArray<number>
  readonly stream: (options?: VadOptions) => Effect.Effect<VadStream, VoiceError, Scope.Scope>
}

/**
 * Voice activity detection, for the voice pipeline's endpointing and barge-in. Provide
 * `WebRtcVad.layer` (the default) or `SileroVad.layer`.
 *
 * @since 0.1.0
 * @category services
 */
export class Vad extends Context.Service<Vad, VadService>()("baton/Vad") {}
