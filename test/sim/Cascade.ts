/**
 * Cascaded voice scenarios: the session runs through `VoicePipeline` with scripted engines that
 * run on the TestClock. The user's audio is marked samples: an utterance of input n is frames
 * whose samples are `1000 + n` (noise is `999`), silence is zeros. The VAD hears non-zero
 * frames as speech; the STT turns the marks it was pushed into `inputText(n)` after
 * `sttDelay`, with interim guesses on the way; the TTS makes `msPerChar` of audio a character
 * after `ttsDelay`. Either engine can fail every n-th time. What the agents played (and when it
 * was cut) is recorded for the voice checks.
 */
import { Cause, Clock, Effect, Layer, Queue, Semaphore, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as AudioInput from "../../services/AudioInput.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import { Stt, type SttEvent } from "../../services/Stt.ts"
import type { SpeechInfo } from "../../services/TextOutput.ts"
import { Tts } from "../../services/Tts.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import type { SessionStoreService } from "../../services/SessionStore.ts"
import type { Agent, AgentSession, Tool } from "../../src/index.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import * as ScriptedVad from "../voice/scriptedVad.ts"
import type { CascadeSpec } from "./Scenario.ts"

const RATE = 16000
export const FRAME_MS = 20
const NOISE = 999

export const inputOf = (mark: number) => (mark === NOISE ? undefined : mark - 1000)

export interface Write {
  readonly speechId: string
  readonly agent: string
  /** The sequence number the next event would get when the frame was written. */
  readonly seq: number
  readonly order: number
}

export interface Cut {
  readonly speechId: string
  readonly seq: number
  readonly order: number
}

export interface CascadeWorld {
  readonly writes: Array<Write>
  readonly cuts: Array<Cut>
  /** The text of each reply step (a speech has one per model step), with its speech and agent. */
  readonly texts: Array<{ readonly speechId: string; readonly agent: string; text: string }>
  /** The STT's finals with words, in order, with the tick they were made at. */
  readonly finals: Array<{ readonly text: string; readonly order: number; readonly at: number }>
  readonly errors: Array<string>
  /** The texts whose synthesis failed (scripted): skipped, never heard (VoiceOutput's onError). */
  readonly unsynthesized: Array<string>
  line: AudioInput.AudioInputQueue | undefined
  /** Serializes utterances: one user, one voice. */
  readonly mic: Semaphore.Semaphore
}

export const makeCascadeWorld = (): CascadeWorld => ({
  writes: [],
  cuts: [],
  texts: [],
  finals: [],
  errors: [],
  unsynthesized: [],
  line: undefined,
  mic: Semaphore.makeUnsafe(1)
})

const marked = (mark: number, ms: number) => AudioFrame.make(new Int16Array((ms / 1000) * RATE).fill(mark), RATE)

const every = (n: number | undefined, count: number) => n !== undefined && count % n === 0

/** Input n's words trail off ("... and"): its turn waits `maxEndpointingMs`. */
const trails = (spec: CascadeSpec, input: number) => every(spec.trailingEvery, input)

/** The scripted engines, on the TestClock. */
export const engines = (spec: CascadeSpec, world: CascadeWorld, tick: () => number) => {
  let ttsCalls = 0
  let sttUtterances = 0
  let sttEnds = 0
  const stt = Stt.of({
    sampleRate: RATE,
    stream: () =>
      Effect.gen(function*() {
        const events = yield* Queue.unbounded<SttEvent, VoiceError | Cause.Done>()
        // A dropped stream: its transcripts end with an error, and nothing more goes in.
        let dropped = false
        const gone = () => new VoiceError({ source: "stt", reason: "Transport", description: "scripted drop of the stream" })
        let marks: Array<number> = []
        let speechMs = 0
        yield* Effect.addFinalizer(() => Queue.end(events))
        const textOf = (list: ReadonlyArray<number>) => {
          const inputs = [...new Set(list.map(inputOf).filter((n): n is number => n !== undefined))]
          return inputs.map((n) => (trails(spec, n) ? `u${n} please and` : `u${n} please`)).join(" ")
        }
        return {
          events: Stream.fromQueue(events),
          push: (frame) =>
            Effect.gen(function*() {
              if (dropped) return yield* gone()
              if (frame.data[0] === 0) return
              marks.push(frame.data[0]!)
              speechMs += AudioFrame.durationMs(frame)
              if (spec.interims && speechMs % 200 === 0 && textOf(marks) !== "") yield* Queue.offer(events, { _tag: "Interim", text: textOf(marks) })
            }),
          endUtterance: Effect.gen(function*() {
            if (dropped) return yield* gone()
            if (every(spec.sttDropEvery, ++sttEnds)) {
              dropped = true
              return void Queue.failCauseUnsafe(events, Cause.fail(gone()))
            }
            const text = textOf(marks)
            marks = []
            speechMs = 0
            if (spec.sttDelay > 0) yield* Effect.sleep(spec.sttDelay)
            if (every(spec.sttFailEvery, ++sttUtterances)) {
              return yield* new VoiceError({ source: "stt", reason: "Transport", description: `scripted failure of utterance ${sttUtterances}` })
            }
            if (text !== "") world.finals.push({ text, order: tick(), at: yield* Clock.currentTimeMillis })
            yield* Queue.offer(events, { _tag: "Final", text })
          })
        }
      })
  })
  const tts = Tts.of({
    sampleRate: RATE,
    synthesize: (text) =>
      Stream.fromEffect(Effect.gen(function*() {
        const call = ++ttsCalls
        if (spec.ttsDelay > 0) yield* Effect.sleep(spec.ttsDelay)
        if (every(spec.ttsFailEvery, call)) {
          world.unsynthesized.push(text)
          return yield* new VoiceError({ source: "tts", reason: "Transport", description: `scripted failure of synthesis ${call}` })
        }
        return AudioFrame.silence(Math.max(FRAME_MS, text.length * spec.msPerChar), RATE)
      }))
  })
  return Layer.mergeAll(ScriptedVad.layer({ minSpeechMs: 60, minSilenceMs: 200 }, RATE), Layer.succeed(Stt, stt), Layer.succeed(Tts, tts))
}

/** Where a durable cascade session is journaled (the crash simulation, Crash.ts). */
export interface Durability {
  readonly store: SessionStoreService
  readonly id: string
}

/** Starts the session as a cascaded voice session, recording what was played and cut; with
 * `durable`, journaled there. */
export const start = (
  spec: CascadeSpec,
  world: CascadeWorld,
  seq: () => number,
  tick: () => number,
  options: { readonly agent: Agent.Agent; readonly tools?: ReadonlyArray<Tool.Tool> },
  durable?: Durability
): Effect.Effect<AgentSession.AgentSession, never, import("effect").Scope.Scope> =>
  open(spec, world, seq, tick, (parts) =>
    VoicePipeline.start({ ...options, ...(durable ? { store: durable.store, id: durable.id } : {}), ...parts }))

/** Resumes a durable cascade session from its store with the same engines (life 2 of the crash
 * simulation): `VoicePipeline.resume`. */
export const resume = (
  spec: CascadeSpec,
  world: CascadeWorld,
  seq: () => number,
  tick: () => number,
  options: { readonly agents: ReadonlyArray<Agent.Agent>; readonly tools?: ReadonlyArray<Tool.Tool> },
  durable: Durability
): Effect.Effect<AgentSession.AgentSession, never, import("effect").Scope.Scope> =>
  open(spec, world, seq, tick, (parts) => VoicePipeline.resume({ ...options, store: durable.store, id: durable.id, ...parts }))

/** The voice parts of a session (input line, recorded output, engines), opened by `make`. */
const open = <E>(
  spec: CascadeSpec,
  world: CascadeWorld,
  seq: () => number,
  tick: () => number,
  make: (parts: VoicePipeline.VoiceParts) => Effect.Effect<VoicePipeline.VoiceSession<undefined>, E, any>
): Effect.Effect<AgentSession.AgentSession, never, import("effect").Scope.Scope> =>
  Effect.gen(function*() {
    const line = yield* AudioInput.makeQueue
    world.line = line
    const record = (info: SpeechInfo) => ({ speechId: info.speechId, seq: seq(), order: tick() })
    const output = {
      write: (_pcm: Uint8Array, _rate: number, info: SpeechInfo) => Effect.sync(() => void world.writes.push({ ...record(info), agent: info.agent })),
      clear: (info: SpeechInfo) => Effect.sync(() => void world.cuts.push(record(info)))
    }
    const text = {
      start: (info: SpeechInfo) => Effect.sync(() => void world.texts.push({ speechId: info.speechId, agent: info.agent, text: "" })),
      write: (delta: string, info: SpeechInfo) =>
        Effect.sync(() => {
          const step = world.texts.findLast((t) => t.speechId === info.speechId)
          if (step) step.text += delta
        }),
      end: () => Effect.void
    }
    const voice = yield* make({
      input: line.service.frames,
      alsoText: text,
      voice: {
        minEndpointingDelayMs: spec.endpointingMs,
        maxEndpointingDelayMs: spec.maxEndpointingMs ?? spec.endpointingMs,
        preemptiveGeneration: spec.preemptive ?? false,
        minInterruptionMs: spec.interruptionMs,
        minInterruptionWords: spec.minInterruptionWords ?? 0,
        resumeFalseInterruption: spec.resumeFalseInterruption ?? true,
        ...(spec.falseInterruptionTimeoutMs !== undefined ? { falseInterruptionTimeoutMs: spec.falseInterruptionTimeoutMs } : {}),
        // the VAD's own silence (its layer's 200 ms), as drawn before adaptive endpointing
        vad: { minSilenceMs: 200 },
        leadMs: 100,
        minSentenceChars: 1,
        onError: (error) => Effect.sync(() => void world.errors.push(error.message))
      }
    }).pipe(Effect.provideService(AudioOutput, output), Effect.provide(engines(spec, world, tick)), Effect.orDie)
    return voice.session
  })

/** The user says input n (or makes a noise) for `duration` ms, then is silent long enough to end
 * the turn; `stops`: the line sends nothing after the words (no silence frames), for as long. */
export const utter = (world: CascadeWorld, spec: CascadeSpec, input: number | undefined, duration: number, stops = false) =>
  world.mic.withPermit(Effect.gen(function*() {
    const line = world.line
    if (!line) return
    const mark = input === undefined ? NOISE : 1000 + input
    const speech = Math.max(FRAME_MS, Math.round(duration / FRAME_MS) * FRAME_MS)
    const silenceMs = (input !== undefined && trails(spec, input) ? spec.maxEndpointingMs ?? spec.endpointingMs : spec.endpointingMs) + 300
    const frames = speech / FRAME_MS + Math.ceil(silenceMs / FRAME_MS)
    for (let i = 0; i < frames; i++) {
      const speaking = i < speech / FRAME_MS
      if (speaking || !stops) yield* line.offer(speaking ? marked(mark, FRAME_MS) : AudioFrame.silence(FRAME_MS, RATE))
      yield* Effect.sleep(FRAME_MS)
    }
  }))
