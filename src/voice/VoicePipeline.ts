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
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Fiber, Option, type Stream } from "effect"
import { AudioInput } from "../../services/AudioInput.ts"
import { Stt } from "../../services/Stt.ts"
import type { SpeechInfo, TextOutputService } from "../../services/TextOutput.ts"
import { Tts } from "../../services/Tts.ts"
import { Vad } from "../../services/Vad.ts"
import type { VoiceError } from "../../services/VoiceError.ts"
import * as AgentSession from "../AgentSession.ts"
import * as VoiceInput from "./VoiceInput.ts"
import * as VoiceOutput from "./VoiceOutput.ts"

/**
 * The options of both halves of the voice pipeline.
 *
 * @since 0.1.0
 * @category models
 */
export interface VoiceOptions extends VoiceInput.VoiceInputOptions, VoiceOutput.VoiceOutputOptions {}

/**
 * The options of `VoicePipeline.start`: those of `AgentSession.start`, the voice options, the
 * user's audio and a text copy of the agents' words.
 *
 * @since 0.1.0
 * @category models
 */
export interface StartOptions<U, R = never> extends Omit<AgentSession.StartOptions<U, R>, "textOutput">, VoiceParts {}

/**
 * What a session needs to listen and speak, whether it starts or resumes: the voice options,
 * the user's audio and a text copy of the agents' words.
 *
 * @since 0.1.0
 * @category models
 */
export interface VoiceParts {
  readonly voice?: VoiceOptions
  /** The user's audio (default: the `AudioInput` of the context); `VoiceInput.audioEnd` in it
   * says the audio stopped there (push-to-talk released): the speech in progress ends. */
  readonly input?: Stream.Stream<VoiceInput.Input>
  /** Also sends the agents' words here as text, as they are written (a transcript for a client). */
  readonly alsoText?: TextOutputService
}

/**
 * The options of `VoicePipeline.resume`: those of `AgentSession.resume` and the voice parts.
 *
 * @since 0.1.0
 * @category models
 */
export type ResumeOptions<U, R = never> = Omit<Parameters<typeof AgentSession.resume<U, R>>[0], "textOutput"> & VoiceParts

/**
 * The three engines of a cascade: VAD, speech to text and text to speech.
 *
 * @since 0.1.0
 * @category models
 */
export interface Engines {
  readonly vad: Vad["Service"]
  readonly stt: Stt["Service"]
  readonly tts: Tts["Service"]
}

/**
 * The three engines a cascade needs, when the context has them all (a transport's choice of mode).
 *
 * @since 0.1.0
 * @category getters
 */
export const engines: Effect.Effect<Option.Option<Engines>> = Effect.gen(function*() {
  const vad = yield* Effect.serviceOption(Vad)
  const stt = yield* Effect.serviceOption(Stt)
  const tts = yield* Effect.serviceOption(Tts)
  return Option.isSome(vad) && Option.isSome(stt) && Option.isSome(tts)
    ? Option.some({ vad: vad.value, stt: stt.value, tts: tts.value })
    : Option.none()
})

/**
 * Provides engines found with {@link engines}.
 *
 * @since 0.1.0
 * @category combinators
 */
export const provideEngines = (found: Engines) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.provideService(Vad, found.vad), Effect.provideService(Stt, found.stt), Effect.provideService(Tts, found.tts))

/** The voice output, and a text copy of what it is given. */
const tee = (voice: TextOutputService, text: TextOutputService | undefined): TextOutputService =>
  text === undefined ? voice : {
    start: (info) => Effect.andThen(text.start(info), voice.start(info)),
    write: (delta, info) => Effect.andThen(text.write(delta, info), voice.write(delta, info)),
    end: (info, interrupted) => Effect.andThen(voice.end(info, interrupted), text.end(info, interrupted)),
    ...(voice.drain ? { drain: voice.drain } : {}),
    ...(voice.heard ? { heard: voice.heard } : {})
  }

/**
 * A session with voice: the session, its voice output and when the user's audio is done.
 *
 * @since 0.1.0
 * @category models
 */
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

/** Starts a session whose agents listen and speak; it lives in the caller's Scope. An engine's
 * failure goes to `voice.onError` when given, else to the log and the session's events (an
 * `error` with source `voice`).
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { VoicePipeline } from "@baton-voice/baton/voice"
 * import { WebRtcVad, FliteTts, PocketsphinxStt } from "@baton-voice/baton/local"
 *
 * const call = Effect.gen(function*() {
 *   const voice = yield* VoicePipeline.start({ agent: greeter })
 *   yield* voice.inputDone
 * }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(WebRtcVad.layer(), PocketsphinxStt.layer(), FliteTts.layer())))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = Effect.fn("VoicePipeline.start")(function*<U = undefined, R = never>(options: StartOptions<U, R>) {
  return yield* withVoice(options, (textOutput) => AgentSession.start({ ...options, textOutput }))
})

/**
 * Resumes a durable session from its store (`AgentSession.resume`) with its voice: the same
 * pipeline a new voice session gets, so the next thing the user says is heard and answered
 * aloud (docs/durability.md).
 *
 * @since 0.1.0
 * @category constructors
 */
export const resume = Effect.fn("VoicePipeline.resume")(function*<U = undefined, R = never>(options: ResumeOptions<U, R>) {
  return yield* withVoice(options, (textOutput) => AgentSession.resume<U, R>({ ...options, textOutput }))
})

/** The voice output, the session `open` makes with it, and the voice input fed to that session. */
const withVoice = <U, E, R>(options: VoiceParts, open: (textOutput: TextOutputService) => Effect.Effect<AgentSession.AgentSession<U>, E, R>) =>
  Effect.gen(function*() {
    // The output is made before the session (which speaks through it): its failures reach the
    // session once there is one.
    let report: (error: VoiceError) => Effect.Effect<void> = () => Effect.void
    const onError = options.voice?.onError ?? ((error: VoiceError, info?: SpeechInfo) =>
      Effect.andThen(Effect.logWarning(`voice (${info?.agent ?? "input"}): ${error.message}`), report(error)))
    const voice = { ...options.voice, onError }
    const output = yield* VoiceOutput.make(voice)
    const session = yield* open(tee(output.textOutput, options.alsoText))
    report = session.voiceError
    const frames = options.input ?? (yield* audioInput)
    const input = yield* VoiceInput.run(session, frames, output, voice).pipe(
      Effect.tapError((error) => Effect.logError(`voice input stopped: ${error.message}`)),
      Effect.ignore,
      Effect.forkScoped
    )
    return { session, output, inputDone: Fiber.join(input) } satisfies VoiceSession<U>
  })
