/**
 * Text to speech: the pipeline gives it a reply one chunk (a sentence) at a time as the model
 * streams, and plays the frames as they come. Interrupting the stream stops synthesis (barge-in,
 * a handoff mid-reply); an engine's Layer owns its processes and sockets.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, type Stream } from "effect"
import type { AudioFrame } from "./AudioFrame.ts"
import type { VoiceError } from "./VoiceError.ts"

/**
 * Options of one synthesis: the voice and the speed.
 *
 * @since 0.1.0
 * @category models
 */
export interface TtsOptions {
  /** An engine's voice name (flite's `rms`, a Cartesia voice id). */
  readonly voice?: string
  readonly speed?: number
}

/**
 * A text-to-speech engine: the rate of its frames, and `synthesize`, which streams the audio for a
 * text.
 *
 * @since 0.1.0
 * @category models
 */
export interface TtsService {
  /** The rate of the frames it produces. */
  readonly sampleRate: number
  /** Audio for `text`, streamed as it is made. */
  readonly synthesize: (text: string, options?: TtsOptions) => Stream.Stream<AudioFrame, VoiceError>
}

/**
 * Text to speech, for the voice pipeline. Provide one of its layers (Cartesia, OpenAI, flite) or
 * `TtsFallback.layer` over several.
 *
 * @since 0.1.0
 * @category services
 */
export class Tts extends Context.Service<Tts, TtsService>()("baton/Tts") {}
