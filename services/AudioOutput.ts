/**
 * Where an agent's audio goes (a speaker, a WebSocket client, a LiveKit track). Realtime
 * models stream PCM16 here; what was played when a reply is cut is what the model is told
 * (its item is truncated at that point).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Effect } from "effect"
import type { SpeechInfo } from "./TextOutput.ts"

/**
 * Where the agents' audio goes: `write` a chunk of a speech, `clear` what is buffered when a reply
 * is cut.
 *
 * @since 0.1.0
 * @category models
 */
export interface AudioOutputService {
  /** Completes when the frame is handed to the output. */
  readonly write: (pcm: Uint8Array, sampleRate: number, info: SpeechInfo) => Effect.Effect<void>
  /** Drops what is buffered and not yet played (the reply was interrupted). */
  readonly clear: (info: SpeechInfo) => Effect.Effect<void>
}

/**
 * An output that drops everything; the default.
 *
 * @since 0.1.0
 * @category constants
 */
export const discard: AudioOutputService = {
  write: () => Effect.void,
  clear: () => Effect.void
}

/**
 * The agents' audio out (a transport provides it); discards audio unless provided.
 *
 * @since 0.1.0
 * @category services
 */
export const AudioOutput = Context.Reference<AudioOutputService>("baton/AudioOutput", { defaultValue: () => discard })

/**
 * Milliseconds of PCM16 mono audio in `bytes` at `sampleRate`.
 *
 * @since 0.1.0
 * @category utils
 */
export const durationMs = (bytes: number, sampleRate: number): number => (bytes / 2 / sampleRate) * 1000
