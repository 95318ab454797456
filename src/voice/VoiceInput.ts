/**
 * The user's side of a cascaded voice session: frames from the transport go through the VAD
 * and the speech-to-text engine; the pipeline decides when the user's turn ends (endpointing)
 * and when their speech cuts the agent (barge-in), and hands the session text.
 *
 * Time here is the audio's own (ms of frames pushed), not the wall clock: a WAV file pushed at
 * full speed and a phone line at real time make the same decisions.
 *
 * - Turn end: VAD silence of `minEndpointingDelayMs` after speech, then the engine's final
 *   transcript goes to `session.send` (interim guesses are reported as events on the way).
 * - Barge-in: speech that lasts `minInterruptionMs` while a reply plays cuts it at once: the
 *   audio stops, and the session keeps only the words that were played (`VoiceOutput`).
 *   Shorter speech over a reply (a cough, "mm-hm") cuts nothing; its words, if the engine heard
 *   any, are a turn like any other (nothing the user says is lost).
 * - False interruption: a cut followed by a final transcript with no words: the rest of the cut
 *   reply is said again (`resumeFalseInterruption`, default on).
 */
import { Effect, Exit, Option, Scope, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Resampler, type ResamplerStage } from "../../services/Resampler.ts"
import { Stt, type SttOptions, type SttStream } from "../../services/Stt.ts"
import { Vad, type VadOptions } from "../../services/Vad.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import type { AgentSession } from "../AgentSession.ts"
import type { SpeechInfo } from "../../services/TextOutput.ts"
import type { VoiceOutput } from "./VoiceOutput.ts"

export interface VoiceInputOptions {
  /** Silence after speech before the user's turn ends (ms; default 500). */
  readonly minEndpointingDelayMs?: number
  /** Speech over a reply must last this long to cut it (ms; default 500). */
  readonly minInterruptionMs?: number
  /** Say the rest of a reply again when the speech that cut it had no words (default true). */
  readonly resumeFalseInterruption?: boolean
  /** Audio kept from before the VAD's speech start, for the speech-to-text engine (ms; default 300). */
  readonly preRollMs?: number
  readonly vad?: VadOptions
  readonly stt?: SttOptions
  /** Each agent's speech-to-text options, by name (its language); others use `stt`. */
  readonly sttByAgent?: Readonly<Record<string, SttOptions>>
  /**
   * An engine failed (a frame the VAD refused, a transcript the STT could not make): that frame
   * or utterance is lost, the session goes on. Default: a warning in the log.
   */
  readonly onError?: (error: VoiceError, info?: SpeechInfo) => Effect.Effect<void>
}

/** Turns `frame` into frames at `rate`, through a resampler made on first need. */
const converter = (rate: number, name: string) => {
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

export const run = <U>(session: AgentSession<U>, frames: Stream.Stream<AudioFrame.AudioFrame>, output: VoiceOutput, options: VoiceInputOptions = {}) =>
  Effect.gen(function*() {
    const vadService = yield* Vad
    const sttService = yield* Stt
    const vad = yield* vadService.stream(options.vad)
    const runScope = yield* Effect.scope
    const endpointingMs = options.minEndpointingDelayMs ?? 500
    const interruptionMs = options.minInterruptionMs ?? 500
    const preRollMs = options.preRollMs ?? 300
    const toVad = converter(vadService.sampleRates.includes(16000) ? 16000 : vadService.sampleRates[0]!, "the VAD")
    const toStt = converter(sttService.sampleRate, "speech to text")

    let audioMs = 0
    let inUtterance = false
    let speechStartMs = 0
    /** Speech over a reply, not long enough yet to cut it. */
    let bargeCandidate = false
    let userSpeaking = false
    let endpointAt: number | undefined
    let cutAt: number | undefined
    const preRoll: Array<{ readonly atMs: number; readonly frame: AudioFrame.AudioFrame }> = []

    /** The utterances whose final transcripts are awaited, in order: did each cut a reply? */
    const pending: Array<{ readonly cut: boolean }> = []
    const onError = options.onError ?? ((error: VoiceError) => Effect.logWarning(`voice input: ${error.message}`))
    /** An engine's failure loses what it was doing, never the session. */
    const guard = <A>(effect: Effect.Effect<A, VoiceError>, fallback: A) =>
      effect.pipe(Effect.catch((error) => onError(error).pipe(Effect.as(fallback))))

    const speaking = (on: boolean) =>
      on === userSpeaking ? Effect.void : Effect.suspend(() => {
        userSpeaking = on
        return session.setUserSpeaking(on)
      })

    const endUtterance =
      Effect.gen(function*() {
        inUtterance = false
        endpointAt = undefined
        const entry = { cut: cutAt !== undefined }
        pending.push(entry)
        cutAt = undefined
        // no transcript comes for an utterance the engine failed on
        const ended = yield* guard(Effect.as(listening.stream.endUtterance, true), false)
        if (!ended) pending.splice(pending.indexOf(entry), 1)
      })

    const onFrame = (frame: AudioFrame.AudioFrame) =>
      Effect.gen(function*() {
        const startMs = audioMs
        audioMs += AudioFrame.durationMs(frame)
        const sttFrames = yield* toStt(frame)
        if (inUtterance) for (const f of sttFrames) yield* guard(listening.stream.push(f), undefined)
        else {
          for (const f of sttFrames) preRoll.push({ atMs: startMs, frame: f })
          while (preRoll.length > 0 && preRoll[0]!.atMs < audioMs - preRollMs - 100) preRoll.shift()
        }
        for (const vadFrame of yield* toVad(frame)) {
          for (const event of yield* guard(vad.push(vadFrame), [])) {
            if (event._tag === "SpeechStarted") {
              yield* followHolder
              inUtterance = true
              speechStartMs = event.atMs
              endpointAt = undefined
              for (const held of preRoll) if (held.atMs >= event.atMs - preRollMs) yield* guard(listening.stream.push(held.frame), undefined)
              preRoll.length = 0
              if (output.playing()) bargeCandidate = true
              else yield* speaking(true)
            } else if (bargeCandidate) {
              // too short to cut the reply; what it said (if anything) is still the user's turn
              bargeCandidate = false
              endpointAt = event.atMs + endpointingMs
            } else {
              yield* speaking(false)
              endpointAt = event.atMs + endpointingMs
            }
          }
        }
        // the reply ended while the user was speaking over it: the floor is theirs now
        if (bargeCandidate && !output.playing()) {
          bargeCandidate = false
          yield* speaking(true)
        }
        if (bargeCandidate && audioMs - speechStartMs >= interruptionMs) {
          bargeCandidate = false
          cutAt = audioMs
          yield* output.cut
          yield* speaking(true)
        }
        if (endpointAt !== undefined && audioMs >= endpointAt && !vad.speaking()) yield* endUtterance
      })

    /** Finals become turns; a cut whose speech had no words was a false interruption. */
    const onTranscripts = (stt: SttStream) => stt.events.pipe(
      Stream.catch((error) => Stream.fromEffect(onError(error)).pipe(Stream.drain)),
      Stream.runForEach((event) =>
        Effect.gen(function*() {
          if (event._tag === "Interim") {
            if (event.text !== "") yield* session.transcribed(event.text, false)
            return
          }
          const purpose = pending.shift()
          if (purpose === undefined) return
          const text = event.text.trim()
          if (text !== "") {
            yield* session.transcribed(text, true)
            yield* session.send(text).pipe(Effect.ignore)
            return
          }
          if (purpose.cut && options.resumeFalseInterruption !== false) yield* resume
        })
      )
    )

    const resume = Effect.gen(function*() {
      const cut = output.lastCut()
      if (cut === undefined) return
      const rest = cut.text.startsWith(cut.heard) ? cut.text.slice(cut.heard.length).trim() : cut.text
      if (rest !== "") yield* session.say(rest).pipe(Effect.ignore)
    })

    /** The agent holding the floor's STT options (a handoff may change the language). */
    const wanted = Effect.map(session.currentAgent, (agent) => (agent && options.sttByAgent?.[agent.name]) ?? options.stt)
    /** A stream with its own Scope; its transcripts keep coming after the input ends. */
    const open = (sttOptions: SttOptions | undefined) =>
      Effect.gen(function*() {
        const scope = yield* Scope.fork(runScope)
        const stream = yield* sttService.stream(sttOptions).pipe(Scope.provide(scope))
        yield* onTranscripts(stream).pipe(Effect.forkIn(scope))
        return { stream, scope, options: sttOptions }
      })
    let listening = yield* open(yield* wanted)
    /** At an utterance's start, after a handoff: the new holder's options, once nothing is being decoded. */
    const followHolder = Effect.gen(function*() {
      const next = yield* wanted
      if (next === listening.options || pending.length > 0) return
      yield* Scope.close(listening.scope, Exit.void)
      listening = yield* open(next)
    })

    yield* frames.pipe(Stream.runForEach(onFrame))
    // the input ended: a turn in progress still counts
    if (inUtterance) yield* speaking(false).pipe(Effect.andThen(endUtterance))
  })
