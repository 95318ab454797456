/**
 * Speech to text, streaming: frames go in as the user speaks, interim and final transcripts come
 * out. The pipeline tells the stream where an utterance ends (from the VAD), so engines that
 * decode per utterance (pocketsphinx) and streaming services (Deepgram) fit the same shape.
 */
import { Context, type Effect, type Scope, type Stream } from "effect"
import type { AudioFrame } from "./AudioFrame.ts"
import type { VoiceError } from "./VoiceError.ts"

export interface SttOptions {
  readonly language?: string
}

export type SttEvent =
  /** A guess at what is being said; replaced by the next interim or the final. */
  | { readonly _tag: "Interim"; readonly text: string }
  /** What was said in one utterance (may be empty when nothing was recognised). */
  | { readonly _tag: "Final"; readonly text: string; readonly confidence?: number }

export interface SttStream {
  /** The next frame of the user's audio, at `Stt.sampleRate`. */
  readonly push: (frame: AudioFrame) => Effect.Effect<void, VoiceError>
  /** The utterance ended (the VAD heard silence): decode it and emit its `Final`. */
  readonly endUtterance: Effect.Effect<void, VoiceError>
  /** Transcripts in the order heard; ends when the stream's Scope closes. */
  readonly events: Stream.Stream<SttEvent, VoiceError>
}

export interface SttService {
  /** The rate the engine takes (16000 for most). */
  readonly sampleRate: number
  readonly stream: (options?: SttOptions) => Effect.Effect<SttStream, VoiceError, Scope.Scope>
}

export class Stt extends Context.Service<Stt, SttService>()("baton/Stt") {}
