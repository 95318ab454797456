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
 * @since 0.1.0
 * @packageDocumentation
 */
import { Deferred, Effect, Exit, Option, Scope, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Resampler, type ResamplerStage } from "../../services/Resampler.ts"
import { Stt, type SttOptions, type SttStream } from "../../services/Stt.ts"
import { Vad, type VadOptions } from "../../services/Vad.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import type { AgentSession } from "../AgentSession.ts"
import type { SpeechInfo } from "../../services/TextOutput.ts"
import * as Endpointing from "./Endpointing.ts"
import * as FrameInbox from "./FrameInbox.ts"
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

/** The user's turn being heard: its utterances' words, and when its silence ends it. */
interface Turn {
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

const wordCount = (text: string) => text.split(/\s+/).filter((w) => w !== "").length

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
    const maxDelayMs = Math.max(minDelayMs, options.maxEndpointingDelayMs ?? 1500)
    const vad = yield* vadService.stream({ minSilenceMs: Math.min(100, minDelayMs), ...options.vad })
    const runScope = yield* Effect.scope
    const interruptionMs = options.minInterruptionMs ?? 500
    const interruptionWords = options.minInterruptionWords ?? 0
    const falseTimeoutMs = options.falseInterruptionTimeoutMs ?? 2000
    const preemptive = options.preemptiveGeneration !== false
    const resumes = options.resumeFalseInterruption !== false
    const preRollMs = options.preRollMs ?? 300
    const vadRate = vadService.sampleRates.includes(16000) ? 16000 : vadService.sampleRates[0]!
    const toVad = converter(vadRate, "the VAD")
    const sttRate = sttService.sampleRate
    const toStt = converter(sttRate, "speech to text")

    let audioMs = 0
    let inUtterance = false
    let userSpeaking = false
    /** The turn being heard (until it is sent). */
    let current: Turn | undefined
    /** Speech over a playing reply, not (yet) enough to cut it: how much of it there was (ms). */
    let barge: { speechMs: number } | undefined
    /** Words said over a reply, too few to cut it: sent once it is over (or with the next turn). */
    const held: Array<string> = []
    /** The engine's latest guess at the utterance in progress. */
    let interim = ""
    /** The words a reply was last started on ahead of the turn's end (preemptive generation). */
    let ahead: string | undefined
    const preRoll: Array<{ readonly atMs: number; readonly frame: AudioFrame.AudioFrame }> = []

    /** The utterances whose final transcripts are awaited, in order: their turn, and their audio
     * (given again to a new stream if this one fails before answering). */
    const pending: Array<{ readonly turn: Turn; readonly audio: ReadonlyArray<AudioFrame.AudioFrame> }> = []
    /** The audio of the utterance in progress, as given to the engine. */
    let utterance: Array<AudioFrame.AudioFrame> = []
    /** When a failed stream is tried again (ms of audio), after an open that failed. */
    let reopenAtMs = 0
    const onError = options.onError ?? ((error: VoiceError) => Effect.logWarning(`voice input: ${error.message}`))
    /** An engine's failure loses what it was doing, never the session. */
    const guard = <A>(effect: Effect.Effect<A, VoiceError>, fallback: A) =>
      effect.pipe(Effect.catch((error) => onError(error).pipe(Effect.as(fallback))))
    // (the per-frame calls' handlers, made once)
    const lostFrame = (error: VoiceError) => onError(error)
    const noEvents = (error: VoiceError) => Effect.as(onError(error), [])

    const speaking = (on: boolean) =>
      on === userSpeaking ? Effect.void : Effect.suspend(() => {
        userSpeaking = on
        return session.setUserSpeaking(on)
      })

    /** Every turn heard was handed on; `onSettled` is told when that happens after the input ended. */
    const settled = () => pending.length === 0 && (current === undefined || current.done)
    let onSettled: (() => void) | undefined

    const newTurn = (): Turn => ({ texts: [], awaiting: 0, cut: false, endpointAt: undefined, reason: undefined, silenceFromMs: 0, force: false, resumed: false, done: false })

    /** Tells the engine an utterance ended; no transcript comes for one it failed on. */
    const ended = (entry: (typeof pending)[number]) =>
      Effect.gen(function*() {
        const ok = yield* guard(Effect.as(listening.stream.endUtterance, true), false)
        if (ok) return
        pending.splice(pending.indexOf(entry), 1)
        entry.turn.awaiting--
        yield* maybeSend(entry.turn)
      })

    /** The agent's last words asked a question (an answer may be short). */
    const asked = Effect.map(session.history, (history) => {
      const items = history.items
      for (let i = items.length - 1; i >= 0; i--) {
        const item = items[i]!
        if (item._tag === "Message" && item.role === "assistant") return item.text.trim().endsWith("?")
        if (item._tag === "Message" && item.role === "user") return false
      }
      return false
    })

    /** Adaptive endpointing: the silence that ends `turn`, from its words so far (reported). */
    const endpoint = (turn: Turn, words: string) =>
      Effect.gen(function*() {
        const decision = Endpointing.decide(words, yield* asked, minDelayMs, maxDelayMs)
        const at = turn.silenceFromMs + decision.delayMs
        if (at === turn.endpointAt && decision.reason === turn.reason) return
        turn.endpointAt = at
        turn.reason = decision.reason
        yield* session.voiceDecision({ decision: "endpointing", outcome: decision.reason, delayMs: decision.delayMs, transcript: words })
      })
    const wordsOf = (turn: Turn, withInterim: boolean) => [...turn.texts, ...(withInterim && interim !== "" ? [interim] : [])].join(" ")

    /** The VAD heard the speech end at `atMs`: the engine decodes the utterance now, while the
     * endpointing silence runs. */
    const speechEnded = (atMs: number) =>
      Effect.gen(function*() {
        inUtterance = false
        const turn = current ?? (current = newTurn())
        const entry = { turn, audio: utterance }
        utterance = []
        pending.push(entry)
        turn.awaiting++
        turn.silenceFromMs = atMs
        yield* endpoint(turn, wordsOf(turn, true))
        // A failed stream's successor gets it (`reopen`).
        if (!listening.failed) yield* ended(entry)
      })

    /** The turn's silence is over and its words are in. */
    const sendDue = (turn: Turn) =>
      !turn.done && turn.awaiting === 0 && !(turn === current && inUtterance) &&
      (turn.force || (turn.endpointAt !== undefined && audioMs >= turn.endpointAt))

    /** Sends the turn once its silence is over and its words are in (or says the rest of a reply
     * cut by speech that had none). */
    const maybeSend = (turn: Turn): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (!sendDue(turn)) return Effect.void
        turn.done = true
        ahead = undefined
        if (settled()) onSettled?.()
        const overReply = turn === current ? barge : undefined
        if (turn === current) {
          current = undefined
          barge = undefined
        }
        // words held back earlier (a backchannel) go with this turn
        const text = [...held.splice(0), ...turn.texts].join(" ")
        return Effect.gen(function*() {
          // speech over a reply that ended without cutting it: its words, if any, are a turn
          if (overReply !== undefined) {
            yield* session.voiceDecision({ decision: "interruption", outcome: "ignored", speechMs: overReply.speechMs, words: wordCount(text) })
          }
          if (overReply !== undefined && interruptionWords > 0 && wordCount(text) < interruptionWords && output.playing()) {
            // too few words to cut the reply (a backchannel, "mm-hmm"): said once it is over
            held.push(text)
            return yield* discardAhead
          }
          if (text !== "") {
            yield* session.preemptive.commit(text)
            yield* session.send(text).pipe(Effect.ignore)
            return
          }
          yield* discardAhead
          if (turn.cut && resumes && !turn.resumed) yield* falseInterruption(turn)
        })
      })

    const falseInterruption = (turn: Turn) =>
      Effect.gen(function*() {
        turn.resumed = true
        const cut = output.lastCut()
        if (cut === undefined) return
        const rest = cut.text.startsWith(cut.heard) ? cut.text.slice(cut.heard.length).trim() : cut.text
        if (rest === "") return
        yield* session.voiceDecision({ decision: "false_interruption", outcome: "resumed", transcript: rest })
        yield* session.say(rest).pipe(Effect.ignore)
      })

    /** A frame of the utterance in progress, to the engine (kept until its transcript comes). */
    const hear = (frame: AudioFrame.AudioFrame) => {
      utterance.push(frame)
      return listening.failed ? Effect.void : Effect.catch(listening.stream.push(frame), lostFrame)
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

    /** Speech started at `atMs`, heard in the frame that began at `frameStartMs`. */
    const speechStarted = (atMs: number, frameStartMs: number) =>
      Effect.gen(function*() {
        const goesOn = current !== undefined && !current.done && !current.force &&
          (current.endpointAt === undefined || audioMs < current.endpointAt)
        if (goesOn) {
          // the user goes on: the turn waits for a new silence, a reply started for it is dropped
          current!.endpointAt = undefined
          ahead = undefined
          yield* discardAhead
        } else {
          yield* followHolder
          current = newTurn()
          barge = undefined
        }
        inUtterance = true
        interim = ""
        for (const held of preRoll) if (held.atMs >= atMs - preRollMs) yield* hear(held.frame)
        preRoll.length = 0
        // (the frame it was heard in is counted by `bargeIn`)
        if (barge !== undefined) barge.speechMs += Math.max(0, frameStartMs - atMs)
        else if (output.playing()) barge = { speechMs: Math.max(0, frameStartMs - atMs) }
        else yield* speaking(true)
      })

    /** Speech over a reply: it cuts once long enough and with enough words. */
    const bargeIn = (frameMs: number) =>
      Effect.gen(function*() {
        if (barge === undefined) return
        // the reply ended while the user was speaking over it: the floor is theirs now
        if (!output.playing()) {
          barge = undefined
          if (inUtterance) yield* speaking(true)
          return
        }
        if (!inUtterance) return
        barge.speechMs += frameMs
        const words = wordCount(wordsOf(current ?? newTurn(), true))
        if (barge.speechMs < interruptionMs || words < interruptionWords) return
        const speechMs = barge.speechMs
        barge = undefined
        if (current) current.cut = true
        yield* output.cut
        yield* speaking(true)
        yield* session.voiceDecision({ decision: "interruption", outcome: "cut", speechMs, words })
      })

    const onFrame = (frame: AudioFrame.AudioFrame) =>
      Effect.gen(function*() {
        const startMs = audioMs
        const frameMs = AudioFrame.durationMs(frame)
        audioMs += frameMs
        if (listening.failed && audioMs >= reopenAtMs) yield* reopen
        const sttFrames = frame.sampleRate === sttRate ? [frame] : yield* toStt(frame)
        if (inUtterance) for (const f of sttFrames) yield* hear(f)
        else {
          for (const f of sttFrames) preRoll.push({ atMs: startMs, frame: f })
          while (preRoll.length > 0 && preRoll[0]!.atMs < audioMs - preRollMs - 100) preRoll.shift()
        }
        for (const vadFrame of frame.sampleRate === vadRate ? [frame] : yield* toVad(frame)) {
          for (const event of yield* Effect.catch(vad.push(vadFrame), noEvents)) {
            if (event._tag === "SpeechStarted") yield* speechStarted(event.atMs, startMs)
            else {
              if (barge === undefined) yield* speaking(false)
              yield* speechEnded(event.atMs)
            }
          }
        }
        if (barge !== undefined) yield* bargeIn(frameMs)
        const turn = current
        if (turn === undefined) {
          if (held.length > 0 && !output.playing()) yield* flushHeld
          return
        }
        // a cut whose speech has brought no words for this long: the reply goes on
        if (
          turn.cut && resumes && !turn.resumed && turn.texts.length === 0 && !inUtterance && turn.awaiting > 0 &&
          audioMs - turn.silenceFromMs >= falseTimeoutMs
        ) yield* falseInterruption(turn)
        if (sendDue(turn)) yield* maybeSend(turn)
      })

    /** Finals join their turn, which is sent once its silence is over; a final that comes during
     * that silence starts the reply ahead (preemptive generation). A stream that fails is
     * replaced at the next frame (`reopen`). */
    const onTranscripts = (stt: Listening) => stt.stream.events.pipe(
      Stream.catch((error) =>
        Stream.fromEffect(Effect.andThen(Effect.sync(() => {
          stt.failed = true
        }), onError(error))).pipe(Stream.drain)
      ),
      Stream.runForEach((event) =>
        Effect.gen(function*() {
          if (event._tag === "Interim") {
            interim = event.text.trim()
            if (event.text !== "") yield* session.transcribed(event.text, false)
            // the words speech over a reply needed may be these
            if (barge !== undefined && inUtterance) yield* bargeIn(0)
            // words beyond those a reply was started on: the user goes on
            if (ahead !== undefined && inUtterance && current !== undefined && wordsOf(current, true) !== ahead) {
              ahead = undefined
              yield* discardAhead
            }
            if (event.endOfSpeech === true) yield* startAhead
            return
          }
          const entry = pending.shift()
          if (entry === undefined) return
          const turn = entry.turn
          turn.awaiting--
          const text = event.text.trim()
          if (turn === current && !inUtterance) interim = ""
          if (text !== "") {
            turn.texts.push(text)
            yield* session.transcribed(text, true)
          }
          // the final's words decide the silence (an interim may have been wrong), even when the
          // silence decided on the interim is already over
          const waiting = turn === current && !inUtterance && turn.awaiting === 0 && !turn.force && turn.endpointAt !== undefined
          if (waiting) {
            yield* endpoint(turn, wordsOf(turn, false))
            // (one started on the engine's own end of speech for these very words goes on)
            const words = turn.texts.join(" ")
            if (preemptive && turn.texts.length > 0 && audioMs < turn.endpointAt! && words !== ahead) {
              ahead = (yield* startAheadOf(words)) ? words : undefined
            }
          }
          yield* maybeSend(turn)
        })
      )
    )

    /** The reply to `words`, started ahead of the turn's end; its first sentence is synthesized
     * as it comes and held by the output, unheard, until the turn is confirmed. */
    const startAheadOf = (words: string) => Effect.andThen(output.dropAhead, session.preemptive.start(words, output.speakAhead))
    /** The reply made ahead is thrown away, and what was synthesized of it. */
    const discardAhead = Effect.andThen(session.preemptive.discard, output.dropAhead)

    /** The engine heard the user pause after final words (`endOfSpeech`), before the VAD ended
     * the utterance: the holder's reply starts on them now (its model call is the longest wait
     * of a turn); the endpointing silence still decides whether the turn is over. */
    const startAhead = Effect.suspend(() => {
      const turn = current
      if (!preemptive || !inUtterance || turn === undefined || turn.done || turn.awaiting > 0) return Effect.void
      // not over a reply (a barge-in decides that speech), nor on words that trail off
      if (barge !== undefined || output.playing()) return Effect.void
      const words = wordsOf(turn, true)
      if (words === ahead || Endpointing.decide(words, false, minDelayMs, maxDelayMs).reason === "trailing_off") return Effect.void
      return Effect.map(startAheadOf(words), (started) => {
        ahead = started ? words : undefined
      })
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

    const flushHeld = Effect.suspend(() => {
      const text = held.splice(0).join(" ")
      return text === "" ? Effect.void : session.send(text).pipe(Effect.ignore)
    })

    /** Speech the VAD has not ended (the input ended, or went quiet): it ends here, and its turn
     * waits for no silence. */
    const endNow = Effect.gen(function*() {
      if (inUtterance) {
        yield* speaking(false)
        yield* speechEnded(audioMs)
      }
      if (current !== undefined) {
        current.force = true
        yield* maybeSend(current)
      }
      if (current === undefined) yield* flushHeld
    })
    /** A turn still being heard: speech, or the silence that will end it. */
    const hearing = () => inUtterance || (current !== undefined && !current.done && !current.force && current.endpointAt !== undefined && audioMs < current.endpointAt)

    /** The line went quiet: a turn in progress hears silence until it ends (the VAD's silence,
     * then the endpointing delay), as it would on a line that kept sending. */
    let lastRate: number | undefined
    const quiet = Effect.gen(function*() {
      const limit = audioMs + maxDelayMs + QUIET_MARGIN_MS
      // A turn whose final is awaited may be told by it to wait the longest silence: that much is
      // heard now, so the turn goes as soon as the final comes.
      const silent = () =>
        hearing() || (current !== undefined && !current.done && !current.force && current.awaiting > 0 && audioMs < current.silenceFromMs + maxDelayMs)
      while (silent() && lastRate !== undefined && audioMs < limit) yield* onFrame(AudioFrame.silence(20, lastRate))
      // a VAD that hears speech in silence: the turn ends all the same
      if (hearing()) yield* endNow
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
      const turnOpen = inUtterance || (current !== undefined && !current.done && !current.force)
      return turnOpen ? quietAfterMs : held.length > 0 ? heldPollMs : undefined
    }
    for (;;) {
      const taken = yield* inbox.take(quietLimit())
      if (taken === "ended") break
      if (taken === "quiet" && !hearing()) {
        if (!output.playing()) yield* flushHeld
      } else if (taken === "quiet" || isAudioEnd(taken.input)) yield* quiet
      else {
        lastRate = taken.input.sampleRate
        yield* onFrame(taken.input)
      }
    }
    // the input ended: a turn in progress still counts, and is handed on before this ends
    yield* endNow
    if (listening.failed) yield* reopen
    if (!settled()) {
      const sent = yield* Deferred.make<void>()
      onSettled = () => Deferred.doneUnsafe(sent, Exit.void)
      // (an engine that never answers does not hold the input open for ever)
      yield* Deferred.await(sent).pipe(Effect.timeoutOption(SETTLE_LIMIT_MS))
    }
  })
