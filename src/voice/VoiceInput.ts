/**
 * The user's side of a cascaded voice session: frames from the transport go through the VAD
 * and the speech-to-text engine; the pipeline decides when the user's turn ends (endpointing)
 * and when their speech cuts the agent (barge-in), and hands the session text.
 *
 * Time here is the audio's own (ms of frames pushed), not the wall clock: a WAV file pushed at
 * full speed and a phone line at real time make the same decisions. One exception: a line that
 * goes quiet (an `AudioEnd` in the input, sent when push-to-talk is released, or no frame for
 * `minEndpointingDelayMs` of wall time during speech) is heard as silence from there on, so the
 * speech in progress ends as if the user had gone silent (otherwise the VAD never hears the
 * silence and the turn never ends).
 *
 * - Turn end: VAD silence of `minEndpointingDelayMs` after speech, then the engine's final
 *   transcript goes to `session.send` (interim guesses are reported as events on the way).
 * - Barge-in: speech that lasts `minInterruptionMs` while a reply plays cuts it at once: the
 *   audio stops, and the session keeps only the words that were played (`VoiceOutput`).
 *   Shorter speech over a reply (a cough, "mm-hm") cuts nothing; its words, if the engine heard
 *   any, are a turn like any other (nothing the user says is lost).
 * - False interruption: a cut followed by a final transcript with no words: the rest of the cut
 *   reply is said again (`resumeFalseInterruption`, default on).
 * - A speech-to-text stream that fails (a dropped socket): a new one is opened and given again
 *   what the old one had not answered (the utterances awaiting their transcript, then the one in
 *   progress), so nothing the user said is lost. If it cannot be opened, the next try is after a
 *   second of audio.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Deferred, Effect, Exit, Option, Queue, Scope, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Resampler, type ResamplerStage } from "../../services/Resampler.ts"
import { Stt, type SttOptions, type SttStream } from "../../services/Stt.ts"
import { Vad, type VadOptions } from "../../services/Vad.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import type { AgentSession } from "../AgentSession.ts"
import type { SpeechInfo } from "../../services/TextOutput.ts"
import type { VoiceOutput } from "./VoiceOutput.ts"

/**
 * How the voice input listens: endpointing delay, how long speech must last to cut a reply,
 * resuming after a false interruption, audio kept before speech starts, and the VAD and STT
 * options.
 *
 * @since 0.1.0
 * @category models
 */
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

/**
 * The user's audio stopped here (push-to-talk released, a muted track): what follows is silence.
 *
 * @since 0.1.0
 * @category models
 */
export interface AudioEnd {
  readonly _tag: "AudioEnd"
}
/**
 * The marker that the user's audio stopped (push-to-talk released).
 *
 * @since 0.1.0
 * @category constants
 */
export const audioEnd: AudioEnd = { _tag: "AudioEnd" }
/**
 * What the pipeline hears: frames, and the points where the audio stopped.
 *
 * @since 0.1.0
 * @category models
 */
export type Input = AudioFrame.AudioFrame | AudioEnd
const isAudioEnd = (input: Input): input is AudioEnd => "_tag" in input && input._tag === "AudioEnd"

/** Silence heard in place of audio that stopped: the VAD's silence, then the endpointing delay, and a margin. */
const QUIET_MARGIN_MS = 2000

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

/** The speech-to-text stream listening now; `failed` once its transcripts ended with an error. */
interface Listening {
  readonly stream: SttStream
  readonly scope: Scope.Closeable
  readonly options: SttOptions | undefined
  failed: boolean
}

/**
 * Listens for `session`: runs the VAD and speech to text over `frames`, ends the user's turn after
 * silence and sends its transcript, and cuts `output` when the user talks over a reply (barge-in).
 * Needs `Vad` and `Stt`; runs until the frames end.
 *
 * @since 0.1.0
 * @category combinators
 */
export const run = <U>(session: AgentSession<U>, frames: Stream.Stream<Input>, output: VoiceOutput, options: VoiceInputOptions = {}) =>
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

    /** The utterances whose final transcripts are awaited, in order: did each cut a reply, and
     * their audio (given again to a new stream if this one fails before answering). */
    const pending: Array<{ readonly cut: boolean; readonly audio: ReadonlyArray<AudioFrame.AudioFrame> }> = []
    /** The audio of the utterance in progress, as given to the engine. */
    let utterance: Array<AudioFrame.AudioFrame> = []
    /** When a failed stream is tried again (ms of audio), after an open that failed. */
    let reopenAtMs = 0
    const onError = options.onError ?? ((error: VoiceError) => Effect.logWarning(`voice input: ${error.message}`))
    /** An engine's failure loses what it was doing, never the session. */
    const guard = <A>(effect: Effect.Effect<A, VoiceError>, fallback: A) =>
      effect.pipe(Effect.catch((error) => onError(error).pipe(Effect.as(fallback))))

    const speaking = (on: boolean) =>
      on === userSpeaking ? Effect.void : Effect.suspend(() => {
        userSpeaking = on
        return session.setUserSpeaking(on)
      })

    /** Tells the engine an utterance ended; no transcript comes for one it failed on. */
    const ended = (entry: (typeof pending)[number]) =>
      Effect.gen(function*() {
        const ok = yield* guard(Effect.as(listening.stream.endUtterance, true), false)
        if (!ok) pending.splice(pending.indexOf(entry), 1)
      })

    const endUtterance =
      Effect.gen(function*() {
        inUtterance = false
        endpointAt = undefined
        const entry = { cut: cutAt !== undefined, audio: utterance }
        utterance = []
        pending.push(entry)
        cutAt = undefined
        // A failed stream's successor gets it (`reopen`).
        if (!listening.failed) yield* ended(entry)
      })

    /** A frame of the utterance in progress, to the engine (kept until its transcript comes). */
    const hear = (frame: AudioFrame.AudioFrame) => {
      utterance.push(frame)
      return listening.failed ? Effect.void : guard(listening.stream.push(frame), undefined)
    }

    /** A stream, or none when it cannot be opened: reported, and tried again a second of audio later. */
    const tryOpen = (sttOptions: SttOptions | undefined): Effect.Effect<Option.Option<Listening>> =>
      open(sttOptions).pipe(
        Effect.map(Option.some),
        Effect.catch((error) =>
          Effect.andThen(Effect.sync(() => {
            reopenAtMs = audioMs + 1000
          }), Effect.as(onError(error), Option.none<Listening>()))
        )
      )

    /** A new stream for a failed one, given again what the old one had not answered. */
    const reopen = Effect.gen(function*() {
      const failed = listening
      yield* Scope.close(failed.scope, Exit.void)
      const fresh = yield* tryOpen(failed.options)
      if (Option.isNone(fresh)) return
      listening = fresh.value
      for (const entry of [...pending]) {
        for (const frame of entry.audio) yield* guard(listening.stream.push(frame), undefined)
        yield* ended(entry)
      }
      for (const frame of utterance) yield* guard(listening.stream.push(frame), undefined)
    })

    const onFrame = (frame: AudioFrame.AudioFrame) =>
      Effect.gen(function*() {
        const startMs = audioMs
        audioMs += AudioFrame.durationMs(frame)
        if (listening.failed && audioMs >= reopenAtMs) yield* reopen
        const sttFrames = yield* toStt(frame)
        if (inUtterance) for (const f of sttFrames) yield* hear(f)
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
              for (const held of preRoll) if (held.atMs >= event.atMs - preRollMs) yield* hear(held.frame)
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

    /** Finals become turns; a cut whose speech had no words was a false interruption. A stream
     * that fails is replaced at the next frame (`reopen`). */
    const onTranscripts = (stt: Listening) => stt.stream.events.pipe(
      Stream.catch((error) =>
        Stream.fromEffect(Effect.andThen(Effect.sync(() => {
          stt.failed = true
        }), onError(error))).pipe(Stream.drain)
      ),
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
    const open = (sttOptions: SttOptions | undefined): Effect.Effect<Listening, VoiceError> =>
      Effect.gen(function*() {
        const scope = yield* Scope.fork(runScope)
        const stream = yield* sttService.stream(sttOptions).pipe(
          Scope.provide(scope),
          Effect.onError(() => Scope.close(scope, Exit.void))
        )
        const listening: Listening = { stream, scope, options: sttOptions, failed: false }
        yield* onTranscripts(listening).pipe(Effect.forkIn(scope))
        return listening
      })
    let listening = yield* open(yield* wanted)
    /** At an utterance's start, after a handoff: the new holder's options, once nothing is being decoded. */
    const followHolder = Effect.gen(function*() {
      const next = yield* wanted
      if (next === listening.options || pending.length > 0) return
      yield* Scope.close(listening.scope, Exit.void)
      // One that cannot be opened is tried again like a failed one (`reopen`).
      const fresh = yield* tryOpen(next)
      listening = Option.isSome(fresh) ? fresh.value : { ...listening, options: next, failed: true }
    })

    /** The line went quiet: an utterance in progress hears silence until it ends (the VAD's
     * silence, then the endpointing delay), as it would on a line that kept sending. */
    let lastRate: number | undefined
    const quiet = Effect.gen(function*() {
      const limit = audioMs + endpointingMs + QUIET_MARGIN_MS
      while (inUtterance && lastRate !== undefined && audioMs < limit) yield* onFrame(AudioFrame.silence(20, lastRate))
      // a VAD that hears speech in silence: the utterance ends all the same
      if (inUtterance) yield* speaking(false).pipe(Effect.andThen(endUtterance))
    })
    // Each input is handed over and waited for, so that no input for the endpointing delay
    // during speech can be noticed (the wall clock; a TestClock in tests). The next is pulled
    // once this one is heard, as if the pipeline pulled the stream itself.
    const inbox = yield* Queue.bounded<{ readonly input: Input; readonly heard: Deferred.Deferred<void> }, Cause.Done>(1)
    yield* frames.pipe(
      Stream.runForEach((input) =>
        Effect.gen(function*() {
          const heard = yield* Deferred.make<void>()
          yield* Queue.offer(inbox, { input, heard })
          yield* Deferred.await(heard)
        })
      ),
      Effect.ensuring(Queue.end(inbox)),
      Effect.forkScoped
    )
    const next = Effect.suspend(() =>
      inUtterance ? Effect.map(Effect.timeoutOption(Queue.take(inbox), endpointingMs), Option.getOrUndefined) : Queue.take(inbox)
    )
    for (;;) {
      const taken = yield* next.pipe(Effect.catchIf(Cause.isDone, () => Effect.succeed("ended" as const)))
      if (taken === "ended") break
      if (taken === undefined || isAudioEnd(taken.input)) yield* quiet
      else {
        lastRate = taken.input.sampleRate
        yield* onFrame(taken.input)
      }
      if (taken !== undefined) yield* Deferred.succeed(taken.heard, undefined)
    }
    // the input ended: a turn in progress still counts
    if (inUtterance) yield* speaking(false).pipe(Effect.andThen(endUtterance))
    if (listening.failed) yield* reopen
  })
