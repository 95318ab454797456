/**
 * Speech to text, streaming: frames go in as the user speaks, interim and final transcripts come
 * out. The pipeline tells the stream where an utterance ends (from the VAD), so engines that
 * decode per utterance (pocketsphinx) and streaming services (Deepgram) fit the same shape.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, type Effect, type Scope, type Stream } from "effect"
import type { AudioFrame } from "./AudioFrame.ts"
import type { VoiceError } from "./VoiceError.ts"

/**
 * Options of a speech-to-text stream: the language.
 *
 * @since 0.1.0
 * @category models
 */
export interface SttOptions {
  readonly language?: string
}

/**
 * What a speech-to-text stream emits: interim guesses, then the final text of each utterance.
 *
 * @since 0.1.0
 * @category models
 */
export type SttEvent =
  /**
   * A guess at what is being said; replaced by the next interim or the final. `endOfSpeech`: the
   * engine finalized every word so far and heard a pause after them (Deepgram's `speech_final`):
   * the user may be done, so a reply may start (the utterance's `Final` still comes after
   * `endUtterance`).
   */
  | { readonly _tag: "Interim"; readonly text: string; readonly endOfSpeech?: boolean }
  /** What was said in one utterance (may be empty when nothing was recognised). */
  | { readonly _tag: "Final"; readonly text: string; readonly confidence?: number }

/**
 * One speech-to-text stream: push frames, end the utterance, read its transcripts.
 *
 * @since 0.1.0
 * @category models
 */
export interface SttStream {
  /** The next frame of the user's audio, at `Stt.sampleRate`. */
  readonly push: (frame: AudioFrame) => Effect.Effect<void, VoiceError>
  /** The utterance ended (the VAD heard silence): decode it and emit its `Final`. */
  readonly endUtterance: Effect.Effect<void, VoiceError>
  /** Transcripts in the order heard; ends when the stream's Scope closes. */
  readonly events: Stream.Stream<SttEvent, VoiceError>
}

/**
 * A speech-to-text engine: the rate it takes and a way to open streams.
 *
 * @since 0.1.0
 * @category models
 */
export interface SttService {
  /** The rate the engine takes (16000 for most). */
  readonly sampleRate: number
  readonly stream: (options?: SttOptions) => Effect.Effect<SttStream, VoiceError, Scope.Scope>
}

/**
 * Speech to text, for the voice pipeline. Provide one of its layers (Deepgram, OpenAI,
 * pocketsphinx) or `SttFallback.layer` over several.
 *
 * @since 0.1.0
 * @category services
 */
export class Stt extends Context.Service<Stt, SttService>()("baton/Stt") {}
