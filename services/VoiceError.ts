/**
 * The one error of the voice services (VAD, STT, TTS, audio transports), shaped like effect/ai's
 * `AiError`: which part failed, a reason the caller can branch on, whether trying again can help,
 * and a one-line message a person can act on (for a missing Debian package, the install line).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Schema } from "effect"

/**
 * Why a voice engine failed: unavailable here, unusable audio, a refused request, the network, or
 * a timeout.
 *
 * @since 0.1.0
 * @category models
 */
export const VoiceErrorReason = Schema.Literals([
  /** The engine cannot run here: a missing package, model file or library. */
  "Unavailable",
  /** The audio given cannot be used (rate, channels, size). */
  "InvalidAudio",
  /** The engine or provider refused the request (bad configuration, bad key). */
  "InvalidRequest",
  /** The network or the process carrying the engine failed. */
  "Transport",
  /** The provider answered with an error of its own. */
  "ProviderError",
  /** No answer in time. */
  "Timeout"
])
export type VoiceErrorReason = typeof VoiceErrorReason.Type

/**
 * A voice engine (VAD, speech to text, text to speech, audio) failed: its source, the reason, a
 * description saying what to do, and the provider's status where there is one.
 *
 * @since 0.1.0
 * @category errors
 */
export class VoiceError extends Schema.TaggedError<VoiceError>()("VoiceError", {
  source: Schema.Literals(["vad", "stt", "tts", "audio"]),
  reason: VoiceErrorReason,
  /** What happened and, where there is one, what to do about it. */
  description: Schema.String,
  /** HTTP or close status from a provider, where there is one. */
  status: Schema.optional(Schema.Number)
}) {
  get retryable(): boolean {
    return this.reason === "Transport" || this.reason === "Timeout" ||
      (this.reason === "ProviderError" && (this.status === undefined || this.status >= 500 || this.status === 429))
  }
  override get message(): string {
    return `${this.source} ${this.reason}${this.status === undefined ? "" : ` (${this.status})`}: ${this.description}`
  }
}
