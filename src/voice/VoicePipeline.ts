/**
 * A cascaded voice session (VAD → STT → LLM → TTS) on the same actors and floor as text: every
 * rule holds for voice as it does for text (one floor, silence after a handoff, barge-in,
 * quiescent runs). The engines come from the context (`Vad`, `Stt`, `Tts` layers: offline from
 * `/local`, cloud from `/openai`, `/deepgram`, `/cartesia`), the audio from the transport's
 * `AudioInput` and `AudioOutput`.
 *
 * ```ts
 * const session = yield* VoicePipeline.start({ agent: greeter })
 * // the user's audio flows from AudioInput; the agents' speech goes to AudioOutput
 * ```
 */
import { Effect, Fiber, Option, type Stream } from "effect"
import { AudioInput } from "../../services/AudioInput.ts"
import type { AudioFrame } from "../../services/AudioFrame.ts"
import * as AgentSession from "../AgentSession.ts"
import * as VoiceInput from "./VoiceInput.ts"
import * as VoiceOutput from "./VoiceOutput.ts"

export interface VoiceOptions extends VoiceInput.VoiceInputOptions, VoiceOutput.VoiceOutputOptions {}

export interface StartOptions<U> extends Omit<AgentSession.StartOptions<U>, "textOutput"> {
  readonly voice?: VoiceOptions
  /** The user's audio (default: the `AudioInput` of the context). */
  readonly input?: Stream.Stream<AudioFrame>
}

export interface VoiceSession<U> {
  readonly session: AgentSession.AgentSession<U>
  readonly output: VoiceOutput.VoiceOutput
  /** Completes when the user's audio has ended and its last utterance was handed on. */
  readonly inputDone: Effect.Effect<void>
}

const audioInput = Effect.serviceOption(AudioInput).pipe(
  Effect.flatMap(Option.match({
    onNone: () => Effect.die(new Error("VoicePipeline.start needs the user's audio: provide AudioInput (a transport does) or pass `input`")),
    onSome: (input) => Effect.succeed(input.frames)
  }))
)

/** Starts a session whose agents listen and speak; it lives in the caller's Scope. */
export const start = Effect.fn("VoicePipeline.start")(function*<U = undefined>(options: StartOptions<U>) {
  const output = yield* VoiceOutput.make(options.voice)
  const session = yield* AgentSession.start<U>({ ...options, textOutput: output.textOutput })
  const frames = options.input ?? (yield* audioInput)
  const input = yield* VoiceInput.run(session, frames, output, options.voice).pipe(
    Effect.tapError((error) => Effect.logError(`voice input stopped: ${error.message}`)),
    Effect.ignore,
    Effect.forkScoped
  )
  return { session, output, inputDone: Fiber.join(input) } satisfies VoiceSession<U>
})
