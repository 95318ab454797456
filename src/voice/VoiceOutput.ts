/**
 * The agents' words as speech: a `TextOutput` that cuts each reply into sentences as the model
 * streams it, synthesizes them in order with the `Tts` of the context (the agent's own voice
 * options when it has some), and plays the frames to the `AudioOutput` in real time, a little
 * ahead (`leadMs`) so the transport never starves.
 *
 * Playing in real time is what makes a cut honest: at any moment the output knows how much of a
 * reply was heard (`Heard.ts`), so a barge-in or a handoff keeps only those words in the history,
 * and the speech lasts (`drain`) until its audio has been played.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Cause, Clock, Deferred, Effect, Fiber, Queue, Scope, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import type { SpeechInfo, TextOutputService } from "../../services/TextOutput.ts"
import { Tts, type TtsOptions } from "../../services/Tts.ts"
import type { VoiceError } from "../../services/VoiceError.ts"
import { heard, type Spoken } from "./Heard.ts"
import * as Sentences from "./Sentences.ts"

/**
 * How the voice output speaks: how far ahead of real time audio is handed over, how sentences are
 * joined, and the TTS options per agent.
 *
 * @since 0.1.0
 * @category models
 */
export interface VoiceOutputOptions {
  /** Audio handed to the output ahead of real time (ms; default 200). */
  readonly leadMs?: number
  /** Sentences shorter than this are joined to the next (characters; default 20). */
  readonly minSentenceChars?: number
  /** The TTS options of each agent, by name (its voice); others use `tts`. */
  readonly voices?: Readonly<Record<string, TtsOptions>>
  readonly tts?: TtsOptions
  /** An engine failed; for synthesis, the sentence is skipped and the reply goes on (default: a warning in the log). */
  readonly onError?: (error: VoiceError, info?: SpeechInfo) => Effect.Effect<void>
}

/**
 * The speaking half of the voice pipeline: a `TextOutput` whose words are spoken, whether audio is
 * playing, `cut` for barge-in, and what was heard of the last reply cut.
 *
 * @since 0.1.0
 * @category models
 */
export interface VoiceOutput {
  readonly textOutput: TextOutputService
  /** Audio of a reply is playing (or about to). */
  readonly playing: () => boolean
  /** Stops every reply's audio now (a barge-in): the output is cleared, what was heard is kept. */
  readonly cut: Effect.Effect<void>
  /** The last reply cut short: its whole text and what was heard of it. */
  readonly lastCut: () => { readonly agent: string; readonly text: string; readonly heard: string } | undefined
  /**
   * Sees the text of a reply made ahead of the user's turn end (preemptive generation) and
   * synthesizes its first sentence now, unheard: held until a speech of `agent` begins with that
   * very sentence, which then plays it at once; any other first sentence drops it.
   */
  readonly speakAhead: (agent: string, delta: string, complete: boolean) => Effect.Effect<void>
  /** Drops what `speakAhead` holds (the user went on, the reply made ahead was thrown away):
   * nothing of it is heard, its synthesis is cancelled. */
  readonly dropAhead: Effect.Effect<void>
}

/** The first sentence of a reply made ahead, being synthesized (or done), not played. */
interface Ahead {
  readonly agent: string
  readonly chunker: Sentences.Chunker
  sentence: string | undefined
  frames: Queue.Queue<AudioFrame.AudioFrame, VoiceError | Cause.Done> | undefined
  fiber: Fiber.Fiber<void> | undefined
}

/** One reply's audio: its sentences in order, their place in its audio, and the clock of its playout. */
interface Playback {
  readonly info: SpeechInfo
  readonly chunker: Sentences.Chunker
  readonly queue: Queue.Queue<string, Cause.Done>
  readonly spoken: Array<Spoken>
  /** True once its audio was played to the end; false when it was cut. */
  readonly done: Deferred.Deferred<boolean>
  text: string
  /** Audio written so far (ms of the reply's audio). */
  writtenMs: number
  /** Wall time (ms) at which the reply's audio started playing. */
  startedAt: number | undefined
  /** Set when cut: how much had been heard at that moment. */
  frozenMs: number | undefined
  fiber: Fiber.Fiber<void> | undefined
}

/** Roughly how long a sentence takes to say, until its audio is complete (for cuts mid-synthesis). */
const estimateMs = (text: string) => text.length * 65

/**
 * Makes the voice output: sentences of each speech are synthesized with `Tts` and played to
 * `AudioOutput` in real time; a cut clears the output and keeps what was heard. Lives in the
 * current Scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: VoiceOutputOptions = {}) =>
  Effect.gen(function*() {
    const tts = yield* Tts
    const audio = yield* AudioOutput
    const scope = yield* Scope.Scope
    const leadMs = options.leadMs ?? 200
    const playbacks = new Map<string, Playback>()
    let lastCut: ReturnType<VoiceOutput["lastCut"]>

    let ahead: Ahead | undefined

    const dropAheadNow = () => {
      const held = ahead
      ahead = undefined
      // (interrupting the synthesis cancels the provider's generation)
      held?.fiber?.interruptUnsafe()
    }

    /** The audio synthesized ahead for `p`'s first sentence, if it is this one (taken once). */
    const heldFor = (p: Playback, sentence: string) => {
      if (ahead === undefined || p.spoken.length !== 1) return undefined
      const held = ahead
      if (held.agent !== p.info.agent || held.sentence !== sentence || held.frames === undefined) {
        dropAheadNow()
        return undefined
      }
      ahead = undefined
      return Stream.fromQueue(held.frames)
    }

    const speakAhead = (agent: string, delta: string, complete: boolean) =>
      Effect.suspend(() => {
        if (ahead !== undefined && ahead.agent !== agent) dropAheadNow()
        const held = ahead ?? (ahead = { agent, chunker: Sentences.make(options.minSentenceChars ?? 20), sentence: undefined, frames: undefined, fiber: undefined })
        if (held.sentence !== undefined) return Effect.void
        // (the reply's own chunker cuts the same text the same way: its first sentence is this one)
        const first = held.chunker.push(delta)[0] ?? (complete ? held.chunker.flush() : undefined)
        if (first === undefined || first === "") return Effect.void
        held.sentence = first
        return Effect.gen(function*() {
          const frames = yield* Queue.unbounded<AudioFrame.AudioFrame, VoiceError | Cause.Done>()
          held.frames = frames
          const voice = options.voices?.[agent] ?? options.tts
          held.fiber = yield* tts.synthesize(first, voice).pipe(
            Stream.runForEach((frame) => Queue.offer(frames, frame)),
            Effect.matchCauseEffect({
              onFailure: (cause) => Effect.sync(() => void Queue.failCauseUnsafe(frames, cause)),
              onSuccess: () => Queue.end(frames)
            }),
            Effect.asVoid,
            Effect.forkIn(scope)
          )
        })
      })

    const now = Clock.currentTimeMillis
    const playedMs = (p: Playback, at: number) =>
      p.frozenMs ?? (p.startedAt === undefined ? 0 : Math.min(p.writtenMs, Math.max(0, at - p.startedAt)))

    /** Writes one frame when its time comes: no more than `leadMs` ahead of real time. */
    const play = (p: Playback, frame: AudioFrame.AudioFrame) =>
      Effect.gen(function*() {
        const t = yield* now
        p.startedAt ??= t
        const due = p.startedAt + p.writtenMs - leadMs
        if (due > t) yield* Effect.sleep(due - t)
        yield* audio.write(AudioFrame.toPcm16(frame), frame.sampleRate, p.info)
        p.writtenMs += AudioFrame.durationMs(frame)
      })

    const speak = (p: Playback, sentence: string) =>
      Effect.gen(function*() {
        const spoken: { -readonly [K in keyof Spoken]: Spoken[K] } = { text: sentence, startMs: p.writtenMs, durationMs: estimateMs(sentence) }
        p.spoken.push(spoken)
        const startMs = p.writtenMs
        const voice = options.voices?.[p.info.agent] ?? options.tts
        yield* (heldFor(p, sentence) ?? tts.synthesize(sentence, voice)).pipe(
          Stream.flatMap((frame) => Stream.fromIterable(AudioFrame.split(frame, 20))),
          Stream.runForEach((frame) =>
            play(p, frame).pipe(Effect.andThen(Effect.sync(() => {
              // the sentence is at least as long as what was written of it
              spoken.durationMs = Math.max(spoken.durationMs, p.writtenMs - startMs)
            })))
          ),
          Effect.andThen(Effect.sync(() => {
            spoken.durationMs = p.writtenMs - startMs
          })),
          Effect.catch((error) =>
            options.onError ? options.onError(error, p.info) : Effect.logWarning(`voice output (${p.info.agent}): ${error.message}`)
          )
        )
      })

    /** Plays the reply's sentences as they come; the last frame's time is waited out too. */
    const player = (p: Playback) =>
      Stream.fromQueue(p.queue).pipe(
        Stream.runForEach((sentence) => speak(p, sentence)),
        Effect.andThen(Effect.gen(function*() {
          if (p.startedAt === undefined) return
          const end = p.startedAt + p.writtenMs
          const t = yield* now
          if (end > t) yield* Effect.sleep(end - t)
        })),
        Effect.ensuring(Deferred.succeed(p.done, p.frozenMs === undefined))
      )

    const open = (info: SpeechInfo) =>
      Effect.gen(function*() {
        const p: Playback = {
          info,
          chunker: Sentences.make(options.minSentenceChars ?? 20),
          queue: yield* Queue.unbounded<string, Cause.Done>(),
          spoken: [],
          done: yield* Deferred.make<boolean>(),
          text: "",
          writtenMs: 0,
          startedAt: undefined,
          frozenMs: undefined,
          fiber: undefined
        }
        playbacks.set(info.speechId, p)
        p.fiber = yield* player(p).pipe(Effect.forkIn(scope))
        return p
      })

    const playbackOf = (info: SpeechInfo) =>
      Effect.suspend(() => {
        const p = playbacks.get(info.speechId)
        return p ? Effect.succeed(p) : open(info)
      })

    const finishText = (p: Playback) =>
      Effect.suspend(() => {
        const rest = p.chunker.flush()
        return (rest === "" ? Effect.void : Queue.offer(p.queue, rest).pipe(Effect.asVoid)).pipe(
          Effect.andThen(Queue.end(p.queue))
        )
      })

    /** Stops a reply's audio (once); what was heard is frozen at this moment. */
    const stop = (p: Playback) =>
      Effect.gen(function*() {
        if (p.frozenMs !== undefined) return
        p.frozenMs = playedMs(p, yield* now)
        yield* Deferred.succeed(p.done, false)
        if (p.fiber) yield* Fiber.interrupt(p.fiber)
        yield* audio.clear(p.info)
      })

    const heardOf = (p: Playback) => heard(p.spoken, p.frozenMs ?? p.writtenMs)

    const textOutput: TextOutputService = {
      start: (info) => playbackOf(info).pipe(Effect.asVoid),
      write: (text, info) =>
        playbackOf(info).pipe(Effect.flatMap((p) => {
          p.text += text
          const sentences = p.chunker.push(text)
          return sentences.length === 0 ? Effect.void : Queue.offerAll(p.queue, sentences).pipe(Effect.asVoid)
        })),
      drain: (info) =>
        Effect.suspend(() => {
          const p = playbacks.get(info.speechId)
          // a reply cut while it plays is interrupted: the history keeps what was heard
          return p
            ? finishText(p).pipe(
              Effect.andThen(Deferred.await(p.done)),
              Effect.flatMap((played) => (played ? Effect.void : Effect.interrupt))
            )
            : Effect.void
        }),
      heard: (info) => {
        const p = playbacks.get(info.speechId)
        return p ? heardOf(p) : undefined
      },
      end: (info, interrupted) =>
        Effect.gen(function*() {
          const p = playbacks.get(info.speechId)
          if (!p) return
          if (interrupted) {
            yield* stop(p)
            lastCut = { agent: info.agent, text: p.text, heard: heardOf(p) }
          } else {
            yield* finishText(p)
          }
          playbacks.delete(info.speechId)
        })
    }

    const service: VoiceOutput = {
      textOutput,
      playing: () => {
        for (const p of playbacks.values()) if (p.frozenMs === undefined) return true
        return false
      },
      cut: Effect.suspend(() => Effect.forEach(Array.from(playbacks.values()), stop, { discard: true })),
      lastCut: () => lastCut,
      speakAhead,
      dropAhead: Effect.sync(dropAheadNow)
    }
    return service
  })

