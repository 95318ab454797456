/**
 * The user's side of a cascaded voice session: frames from the transport go through the VAD
 * and the speech-to-text engine; the pipeline decides when the user's turn ends (endpointing)
 * and when their speech cuts the agent (barge-in), and hands the session text.
 *
 * Time here is the audio's own (ms of frames pushed), not the wall clock: a WAV file pushed at
 * full speed and a phone line at real time make the same decisions. One exception: a line that
 * goes quiet (an `AudioEnd` in the input, sent when push-to-talk is released, or no frame for
 * `minEndpointingDelayMs`, at least 300 ms, of wall time during a turn) is heard as silence from there on, so the
 * speech in progress ends as if the user had gone silent (otherwise the VAD never hears the
 * silence and the turn never ends).
 *
 * - Turn end: the VAD's end of speech hands the utterance to the engine at once (it decodes
 *   while the silence runs); after `minEndpointingDelayMs` of silence (`maxEndpointingDelayMs`
 *   when the words trail off: `Endpointing.ts`), with every final in, the turn's words go to
 *   `session.send`. Speech before then is the same turn.
 * - Preemptive generation: a final that comes during that silence starts the holder's model call
 *   for the words (`session.preemptive`); the reply uses it when the turn ends with those words,
 *   and it is thrown away unheard if the user goes on.
 * - Barge-in: speech that lasts `minInterruptionMs`, with `minInterruptionWords` words, while a
 *   reply plays cuts it at once: the audio stops, and the session keeps only the words that were
 *   played (`VoiceOutput`). Less cuts nothing; its words, if the engine heard any, are a turn
 *   like any other (held until the reply ends when they are too few to cut it).
 * - False interruption: a cut whose speech brought no words (an empty final, or none for
 *   `falseInterruptionTimeoutMs`): the rest of the cut reply is said (`resumeFalseInterruption`).
 * - Every decision is a `voice_decision` event.
 * - A speech-to-text stream that fails (a dropped socket): a new one is opened and given again
 *   what the old one had not answered (the utterances awaiting their transcript, then the one in
 *   progress), so nothing the user said is lost. If it cannot be opened, the next try is after a
 *   second of audio.
 *
 * This module takes the frames and runs the VAD; the rest is in modules of their own, functions
 * over one record (`InputState.ts`): `TurnTaking.ts` (a turn's words and its end),
 * `Interruption.ts` (barge-in, backchannels, false interruptions), `EarlyReply.ts` (preemptive
 * generation), `Transcription.ts` (the speech-to-text stream) and `FrameInbox.ts` (frames handed
 * over without a timer or an acknowledgement per frame).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Deferred, Effect, Exit, type Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Stt, type SttOptions } from "../../services/Stt.ts"
import { Vad, type VadOptions } from "../../services/Vad.ts"
import type { VoiceError } from "../../services/VoiceError.ts"
import type { AgentSession } from "../AgentSession.ts"
import type { SpeechInfo } from "../../services/TextOutput.ts"
import * as FrameInbox from "./FrameInbox.ts"
import * as InputState from "./InputState.ts"
import * as Interruption from "./Interruption.ts"
import * as Transcription from "./Transcription.ts"
import * as TurnTaking from "./TurnTaking.ts"
import type { VoiceOutput } from "./VoiceOutput.ts"

/**
 * How the voice input listens: when a turn ends (adaptive endpointing), whether a reply starts
 * before it ends (preemptive generation), what speech cuts a reply (duration and words), resuming
 * after a false interruption, audio kept before speech starts, and the VAD and STT options.
 *
 * @since 0.1.0
 * @category models
 */
export interface VoiceInputOptions {
  /** Silence after speech that ends the user's turn when their words end a sentence, answer the
   * agent's question, or give no sign of going on (ms; default 200). */
  readonly minEndpointingDelayMs?: number
  /** Silence that ends the turn when the words trail off ("and", "um", a comma) (ms; default
   * 1500, never below `minEndpointingDelayMs`). Equal to it: endpointing does not adapt. */
  readonly maxEndpointingDelayMs?: number
  /** Start the reply on the final transcript, before the endpointing silence is over; it is
   * thrown away, unheard and unrecorded, if the user goes on (default true). */
  readonly preemptiveGeneration?: boolean
  /** Speech over a reply must last this long to cut it (ms of speech; default 500). */
  readonly minInterruptionMs?: number
  /** ... and have at least this many words, from the interim transcripts (default 0: any). */
  readonly minInterruptionWords?: number
  /** Say the rest of a reply again when the speech that cut it had no words (default true). */
  readonly resumeFalseInterruption?: boolean
  /** A cut whose speech has brought no words this long after it ended is a false interruption,
   * even while its transcript is awaited (ms; default 2000). Words that come later are a turn. */
  readonly falseInterruptionTimeoutMs?: number
  /** Audio kept from before the VAD's speech start, for the speech-to-text engine (ms; default 300). */
  readonly preRollMs?: number
  /** The VAD's options. Its `minSilenceMs` defaults to 100 (at most `minEndpointingDelayMs`): a
   * VAD silence only ends what the speech-to-text engine decodes; the endpointing delay ends the turn. */
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

/** How long the end of the input waits for the last turn's transcript (ms of the clock). */
const SETTLE_LIMIT_MS = 10_000

/** Silence heard in place of audio that stopped: the VAD's silence, then the endpointing delay, and a margin. */
const QUIET_MARGIN_MS = 2000

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
    const minDelayMs = options.minEndpointingDelayMs ?? 200
    const config: InputState.Config = {
      minDelayMs,
      maxDelayMs: Math.max(minDelayMs, options.maxEndpointingDelayMs ?? 1500),
      interruptionMs: options.minInterruptionMs ?? 500,
      interruptionWords: options.minInterruptionWords ?? 0,
      falseTimeoutMs: options.falseInterruptionTimeoutMs ?? 2000,
      preemptive: options.preemptiveGeneration !== false,
      resumes: options.resumeFalseInterruption !== false,
      preRollMs: options.preRollMs ?? 300,
      stt: options.stt,
      sttByAgent: options.sttByAgent
    }
    const vad = yield* vadService.stream({ minSilenceMs: Math.min(100, minDelayMs), ...options.vad })
    const runScope = yield* Effect.scope
    const onError = options.onError ?? ((error: VoiceError) => Effect.logWarning(`voice input: ${error.message}`))
    const state: InputState.InputState = {
      config,
      session,
      output,
      vad,
      sttService,
      runScope,
      onError,
      audioMs: 0,
      inUtterance: false,
      userSpeaking: false,
      current: undefined,
      barge: undefined,
      held: [],
      interim: "",
      ahead: undefined,
      preRoll: [],
      pending: [],
      utterance: [],
      listening: yield* Transcription.connect(sttService, runScope, yield* Transcription.wanted(session, config)),
      reopenAtMs: 0,
      onSettled: undefined
    }
    yield* Transcription.listen(state, state.listening, TurnTaking.handlers)

    const vadRate = vadService.sampleRates.includes(16000) ? 16000 : vadService.sampleRates[0]!
    const toVad = InputState.converter(vadRate, "the VAD")
    const sttRate = sttService.sampleRate
    const toStt = InputState.converter(sttRate, "speech to text")
    // (the per-frame call's handler, made once)
    const noEvents = (error: VoiceError) => Effect.as(onError(error), [])

    const onFrame = (frame: AudioFrame.AudioFrame) =>
      Effect.gen(function*() {
        const startMs = state.audioMs
        const frameMs = AudioFrame.durationMs(frame)
        state.audioMs += frameMs
        if (state.listening.failed && state.audioMs >= state.reopenAtMs) yield* Transcription.reopen(state, TurnTaking.handlers)
        // (a frame at the engines' rates is used as it is: no conversion, no effect)
        const sttFrames = frame.sampleRate === sttRate ? [frame] : yield* toStt(frame)
        if (state.inUtterance) for (const f of sttFrames) yield* Transcription.hear(state, f)
        else {
          for (const f of sttFrames) state.preRoll.push({ atMs: startMs, frame: f })
          while (state.preRoll.length > 0 && state.preRoll[0]!.atMs < state.audioMs - config.preRollMs - 100) state.preRoll.shift()
        }
        for (const vadFrame of frame.sampleRate === vadRate ? [frame] : yield* toVad(frame)) {
          for (const event of yield* Effect.catch(vad.push(vadFrame), noEvents)) {
            if (event._tag === "SpeechStarted") yield* TurnTaking.speechStarted(state, event.atMs, startMs)
            else {
              if (state.barge === undefined) yield* InputState.speaking(state, false)
              yield* TurnTaking.speechEnded(state, event.atMs)
            }
          }
        }
        if (state.barge !== undefined) yield* Interruption.bargeIn(state, frameMs)
        const turn = state.current
        if (turn === undefined) {
          if (state.held.length > 0 && !output.playing()) yield* Interruption.flushHeld(state)
          return
        }
        // a cut whose speech has brought no words for this long: the reply goes on
        if (Interruption.falseByTimeout(state, turn)) yield* Interruption.resumeCut(state, turn)
        if (TurnTaking.sendDue(state, turn)) yield* TurnTaking.maybeSend(state, turn)
      })

    /** The line went quiet: a turn in progress hears silence until it ends (the VAD's silence,
     * then the endpointing delay), as it would on a line that kept sending. */
    let lastRate: number | undefined
    const quiet = Effect.gen(function*() {
      const limit = state.audioMs + config.maxDelayMs + QUIET_MARGIN_MS
      // A turn whose final is awaited may be told by it to wait the longest silence: that much is
      // heard now, so the turn goes as soon as the final comes.
      const silent = () => {
        const turn = state.current
        return InputState.hearing(state) ||
          (turn !== undefined && !turn.done && !turn.force && turn.awaiting > 0 && state.audioMs < turn.silenceFromMs + config.maxDelayMs)
      }
      while (silent() && lastRate !== undefined && state.audioMs < limit) yield* onFrame(AudioFrame.silence(20, lastRate))
      // a VAD that hears speech in silence: the turn ends all the same
      if (InputState.hearing(state)) yield* TurnTaking.endNow(state)
    })

    // The inputs are taken one at a time; no input for the endpointing delay during a turn is
    // noticed by the inbox's one timer (the wall clock; a TestClock in tests), not a timer per frame.
    const inbox = yield* FrameInbox.make(frames)
    // (a loaded host can delay a frame by a few hundred ms: that is not the line going quiet)
    const quietAfterMs = Math.max(minDelayMs, 300)
    // (words held back over a reply wait for it to end: looked at this often when no frame comes)
    const heldPollMs = 100
    /** How long no input may last before it counts (undefined: no limit). A turn whose final is
     * awaited may be told to wait longer by it: looked at again too. */
    const quietLimit = () => {
      const turn = state.current
      const turnOpen = state.inUtterance || (turn !== undefined && !turn.done && !turn.force)
      return turnOpen ? quietAfterMs : state.held.length > 0 ? heldPollMs : undefined
    }
    for (;;) {
      const taken = yield* inbox.take(quietLimit())
      if (taken === "ended") break
      if (taken === "quiet" && !InputState.hearing(state)) {
        if (!output.playing()) yield* Interruption.flushHeld(state)
      } else if (taken === "quiet" || isAudioEnd(taken.input)) yield* quiet
      else {
        lastRate = taken.input.sampleRate
        yield* onFrame(taken.input)
      }
    }
    // the input ended: a turn in progress still counts, and is handed on before this ends
    yield* TurnTaking.endNow(state)
    if (state.listening.failed) yield* Transcription.reopen(state, TurnTaking.handlers)
    if (!InputState.settled(state)) {
      const sent = yield* Deferred.make<void>()
      state.onSettled = () => Deferred.doneUnsafe(sent, Exit.void)
      // (an engine that never answers does not hold the input open for ever)
      yield* Deferred.await(sent).pipe(Effect.timeoutOption(SETTLE_LIMIT_MS))
    }
  })
