/**
 * Where an agent's words go in the text pipeline: a console, a WebSocket client, a test.
 * Later, audio playout sits behind the same three calls: what `write` has delivered when a
 * reply is interrupted is what the chat history keeps.
 */
import { Context, Effect } from "effect"

export interface SpeechInfo {
  readonly speechId: string
  readonly agent: string
}

export interface TextOutputService {
  readonly start: (info: SpeechInfo) => Effect.Effect<void>
  /** Completes when the text is delivered. */
  readonly write: (text: string, info: SpeechInfo) => Effect.Effect<void>
  readonly end: (info: SpeechInfo, interrupted: boolean) => Effect.Effect<void>
}

/** Discards everything; the default when nothing is provided. */
export const discard: TextOutputService = {
  start: () => Effect.void,
  write: () => Effect.void,
  end: () => Effect.void
}

export const TextOutput = Context.Reference<TextOutputService>("baton/TextOutput", { defaultValue: () => discard })
