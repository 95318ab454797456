/**
 * What the voice input knows while it listens, in one record: its settings, the engines and the
 * session it serves, and the state of the audio, the turn being heard and the speech-to-text
 * stream. One fiber writes it (the input's; the transcripts' fiber only while the input waits for
 * a frame); the modules beside this one are functions over it: `TurnTaking` (a turn's words and
 * its end), `Interruption` (speech over a reply), `EarlyReply` (a reply started before the turn's
 * end), `Transcription` (the speech-to-text stream).
 *
 * @since 0.1.0
 * @internal
 */
import { Effect, Option, type Scope } from "effect"
import type * as AudioFrame from "../../services/AudioFrame.ts"
import { Resampler, type ResamplerStage } from "../../services/Resampler.ts"
import type { SttOptions, SttService, SttStream } from "../../services/Stt.ts"
import type { VadStream } from "../../services/Vad.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import type { AgentSession } from "../AgentSession.ts"
import type { SpeechInfo } from "../../services/TextOutput.ts"
import type * as Endpointing from "./Endpointing.ts"
import type { VoiceOutput } from "./VoiceOutput.ts"

/** The speech-to-text stream listening now; `failed` once its transcripts ended with an error. */
export interface SttLink {
  readonly stream: SttStream
  readonly scope: Scope.Closeable
  readonly options: SttOptions | undefined
  failed: boolean
}

/** The user's turn being heard: its utterances' words, and when its silence ends it. */
export interface Turn {
  /** The finals with words, in order. */
  readonly texts: Array<string>
  /** Utterances given to the engine whose final has not come. */
  awaiting: number
  /** Its speech cut a reply. */
  cut: boolean
  /** Where the silence that ends it ends (ms of audio); undefined while the user speaks. */
  endpointAt: number | undefined
  /** Why it waits that long. */
  reason: Endpointing.Reason | undefined
  /** Where the last speech ended (ms of audio). */
  silenceFromMs: number
  /** The input ended (or went quiet through speech): no silence to wait for. */
  force: boolean
  /** Said again already (a false interruption, by the timeout). */
  resumed: boolean
  /** Sent (or dropped): nothing more to do. */
  done: boolean
}

export const newTurn = (): Turn => ({
  texts: [],
  awaiting: 0,
  cut: false,
  endpointAt: undefined,
  reason: undefined,
  silenceFromMs: 0,
  force: false,
  resumed: false,
  done: false
})

/** An utterance whose final transcript is awaited: its turn, and its audio (given again to a new
 * stream if this one fails before answering). */
export interface Pending {
  readonly turn: Turn
  readonly audio: ReadonlyArray<AudioFrame.AudioFrame>
}

/** The settings, with their defaults applied. */
export interface Config {
  readonly minDelayMs: number
  readonly maxDelayMs: number
  readonly interruptionMs: number
  readonly interruptionWords: number
  readonly falseTimeoutMs: number
  readonly preemptive: boolean
  readonly resumes: boolean
  readonly preRollMs: number
  readonly stt: SttOptions | undefined
  readonly sttByAgent: Readonly<Record<string, SttOptions>> | undefined
}

export interface InputState {
  readonly config: Config
  readonly session: AgentSession<any>
  readonly output: VoiceOutput
  readonly vad: VadStream
  readonly sttService: SttService
  /** The Scope the speech-to-text streams' Scopes are forked from. */
  readonly runScope: Scope.Scope
  readonly onError: (error: VoiceError, info?: SpeechInfo) => Effect.Effect<void>
  /** Where the input is (ms of audio heard). */
  audioMs: number
  inUtterance: boolean
  userSpeaking: boolean
  /** The turn being heard (until it is sent). */
  current: Turn | undefined
  /** Speech over a playing reply, not (yet) enough to cut it: how much of it there was (ms). */
  barge: { speechMs: number } | undefined
  /** Words said over a reply, too few to cut it: sent once it is over (or with the next turn). */
  readonly held: Array<string>
  /** The engine's latest guess at the utterance in progress. */
  interim: string
  /** The words a reply was last started on ahead of the turn's end (preemptive generation). */
  ahead: string | undefined
  /** Audio before the VAD's speech start, for the engine. */
  readonly preRoll: Array<{ readonly atMs: number; readonly frame: AudioFrame.AudioFrame }>
  /** The utterances whose final transcripts are awaited, in order. */
  readonly pending: Array<Pending>
  /** The audio of the utterance in progress, as given to the engine. */
  utterance: Array<AudioFrame.AudioFrame>
  listening: SttLink
  /** When a failed stream is tried again (ms of audio), after an open that failed. */
  reopenAtMs: number
  /** Told when every turn heard was handed on, once the input ended. */
  onSettled: (() => void) | undefined
}

/** An engine's failure loses what it was doing, never the session. */
export const guard = <A>(state: InputState, effect: Effect.Effect<A, VoiceError>, fallback: A) =>
  effect.pipe(Effect.catch((error) => state.onError(error).pipe(Effect.as(fallback))))

/** Tells the session whether the user speaks, when that changes. */
export const speaking = (state: InputState, on: boolean) =>
  on === state.userSpeaking ? Effect.void : Effect.suspend(() => {
    state.userSpeaking = on
    return state.session.setUserSpeaking(on)
  })

export const wordCount = (text: string) => text.split(/\s+/).filter((w) => w !== "").length

/** The turn's words so far, with the engine's guess at the utterance in progress or not. */
export const wordsOf = (state: InputState, turn: Turn, withInterim: boolean) =>
  [...turn.texts, ...(withInterim && state.interim !== "" ? [state.interim] : [])].join(" ")

/** Every turn heard was handed on. */
export const settled = (state: InputState) => state.pending.length === 0 && (state.current === undefined || state.current.done)

/** A turn still being heard: speech, or the silence that will end it. */
export const hearing = (state: InputState) => {
  const turn = state.current
  return state.inUtterance || (turn !== undefined && !turn.done && !turn.force && turn.endpointAt !== undefined && state.audioMs < turn.endpointAt)
}

/** Turns `frame` into frames at `rate`, through a resampler made on first need. */
export const converter = (rate: number, name: string) => {
  let stage: ResamplerStage | undefined
  return (frame: AudioFrame.AudioFrame) =>
    Effect.gen(function*() {
      if (frame.sampleRate === rate) return [frame]
      if (stage === undefined || stage.inputRate !== frame.sampleRate) {
        const resampler = yield* Effect.serviceOption(Resampler)
        if (Option.isNone(resampler)) {
          return yield* new VoiceError({
            source: "audio",
            reason: "InvalidAudio",
            description: `${name} takes ${rate} Hz and the input is ${frame.sampleRate} Hz: provide Resampler.layer (with RtcNode.layer)`
          })
        }
        stage = yield* resampler.value.make(frame.sampleRate, rate)
      }
      return stage.push(frame)
    })
}
