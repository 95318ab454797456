/**
 * Where an agent's words go in the text pipeline: a console, a WebSocket client, a test.
 * A voice output (TTS and playout) sits behind the same calls: what `write` has delivered when a
 * reply is interrupted is what the chat history keeps, unless the output says what was heard.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Effect } from "effect"

/**
 * Which speech a piece of text or audio belongs to: its id and agent.
 *
 * @since 0.1.0
 * @category models
 */
export interface SpeechInfo {
  readonly speechId: string
  readonly agent: string
}

/**
 * Where agents' words go: a speech starts, text is written, it ends (interrupted or not), and
 * `played` completes once it has all been heard.
 *
 * @since 0.1.0
 * @category models
 */
export interface TextOutputService {
  readonly start: (info: SpeechInfo) => Effect.Effect<void>
  /** Completes when the text is delivered. */
  readonly write: (text: string, info: SpeechInfo) => Effect.Effect<void>
  readonly end: (info: SpeechInfo, interrupted: boolean) => Effect.Effect<void>
  /**
   * Completes when everything written for the speech has been played (a voice output plays
   * audio after the text is written). The speech lasts until then, and a barge-in can cut it.
   */
  readonly drain?: (info: SpeechInfo) => Effect.Effect<void>
  /** After a speech was cut: the part of it the user heard, which is what the history keeps. */
  readonly heard?: (info: SpeechInfo) => string | undefined
}

/**
 * Discards everything; the default when nothing is provided.
 *
 * @since 0.1.0
 * @category constants
 */
export const discard: TextOutputService = {
  start: () => Effect.void,
  write: () => Effect.void,
  end: () => Effect.void
}

/**
 * Where agents' words go (a console, a client's socket, the voice pipeline); discards them unless
 * provided.
 *
 * @since 0.1.0
 * @category services
 */
export const TextOutput = Context.Reference<TextOutputService>("baton/TextOutput", { defaultValue: () => discard })
