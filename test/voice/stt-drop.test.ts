/**
 * A speech-to-text stream that fails mid-call (a dropped socket: its transcripts end with an
 * error, its pushes fail) is replaced, and the new one is given again what the old one had not
 * answered: nothing the user said is lost. Scripted engines: speech is non-zero samples; the STT
 * answers each utterance with the number of speech frames it was given for it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Layer, Queue, Stream } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as AudioInput from "../../services/AudioInput.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import { Stt, type SttEvent } from "../../services/Stt.ts"
import { Tts } from "../../services/Tts.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import type { ChatItem } from "../../src/ChatContext.ts"
import { Agent } from "../../src/index.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { until } from "../helpers.ts"
import { recorder } from "./harness.ts"
import * as ScriptedVad from "./scriptedVad.ts"

const RATE = 16000

/** An STT whose streams drop as `drops` says: at the nth `endUtterance` over the engine's life,
 * before answering it (the utterance is then still waiting for its transcript). */
const engines = (drops: (n: number) => boolean, failOpen: (n: number) => boolean = () => false) => {
  const record = { opened: 0, refused: 0 }
  let ends = 0
  const stt = Stt.of({
    sampleRate: RATE,
    stream: () =>
      Effect.gen(function*() {
        if (failOpen(record.opened + record.refused + 1)) {
          record.refused++
          return yield* new VoiceError({ source: "stt", reason: "Transport", description: "connect refused" })
        }
        record.opened++
        const events = yield* Queue.unbounded<SttEvent, VoiceError | Cause.Done>()
        let speech = 0
        let closed = false
        const gone = () => new VoiceError({ source: "stt", reason: "Transport", description: "the socket closed (1006)" })
        return {
          events: Stream.fromQueue(events),
          push: (frame: AudioFrame.AudioFrame) =>
            Effect.suspend(() => {
              if (closed) return Effect.fail(gone())
              if (frame.data[0] !== 0) speech++
              return Effect.void
            }),
          endUtterance: Effect.suspend(() => {
            if (closed) return Effect.fail(gone())
            if (drops(++ends)) {
              closed = true
              Queue.failCauseUnsafe(events, Cause.fail(gone()))
              return Effect.void
            }
            const text = `${speech} frames`
            speech = 0
            return Queue.offer(events, { _tag: "Final", text }).pipe(Effect.asVoid)
          })
        }
      })
  })
  const layer = Layer.mergeAll(
    ScriptedVad.layer({ minSpeechMs: 40, minSilenceMs: 200 }),
    Layer.succeed(Stt, stt),
    Layer.succeed(Tts, Tts.of({ sampleRate: RATE, synthesize: () => Stream.make(AudioFrame.silence(20, RATE)) }))
  )
  return { layer, record }
}

const userTurns = (items: ReadonlyArray<ChatItem>) => items.flatMap((i) => (i._tag === "Message" && i.role === "user" ? [i.text] : []))

/** `speech` frames of speech (20 ms each), then a second of silence: one utterance. */
const utter = (line: AudioInput.AudioInputQueue, speech: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < speech; i++) yield* line.offer(AudioFrame.make(new Int16Array(320).fill(900), RATE)).pipe(Effect.andThen(Effect.sleep(1)))
    for (let i = 0; i < 50; i++) yield* line.offer(AudioFrame.silence(20, RATE)).pipe(Effect.andThen(Effect.sleep(1)))
  })

/** The desk on a voice pipeline fed by a line; `errors` collects what `onError` got, unless
 * `sessionErrors` leaves the engines' failures to the session. */
const desk = (options: { readonly sessionErrors?: boolean } = {}) =>
  Effect.gen(function*() {
    const line = yield* AudioInput.makeQueue
    const errors: Array<string> = []
    const onError = (error: VoiceError) => Effect.sync(() => void errors.push(error.message))
    const { session } = yield* VoicePipeline.start({
      agent: Agent.make({ name: "desk", instructions: "Desk." }),
      input: line.service.frames,
      ...(options.sessionErrors ? {} : { voice: { onError } })
    }).pipe(Effect.provideService(AudioOutput, recorder().output))
    const turns = () => userTurns(Effect.runSync(session.history).items)
    return { line, errors, session, turns }
  })

const model = ScriptedModel.layer([{ when: { user: /frames/ }, reply: { text: "Noted." } }])

describe("voice pipeline: a speech-to-text stream that fails", () => {
  it.live("rule 12: the stream drops while an utterance waits for its transcript: a new one hears it again, the next turns too", () => {
    const { layer, record } = engines((n) => n === 1)
    return Effect.gen(function*() {
      const { line, errors, turns } = yield* desk()
      yield* utter(line, 12)
      yield* until("the first turn", () => turns().length === 1)
      yield* utter(line, 7)
      yield* until("the second turn", () => turns().length === 2)
      // The utterance the dropped stream never answered was heard whole by the new one.
      assert.deepStrictEqual(turns(), ["12 frames", "7 frames"])
      assert.strictEqual(record.opened, 2)
      assert.deepStrictEqual(errors, ["stt Transport: the socket closed (1006)"])
    }).pipe(Effect.scoped, Effect.provide([layer, model]))
  }, 30_000)

  it.live("without an onError, the drop is a recoverable error event of the session, source voice", () => {
    const { layer } = engines((n) => n === 1)
    return Effect.gen(function*() {
      const { line, session, turns } = yield* desk({ sessionErrors: true })
      yield* utter(line, 12)
      yield* until("the turn", () => turns().length === 1)
      const errors = Effect.runSync(session.eventLog).flatMap((e) => (e.type === "error" ? [e] : []))
      assert.deepStrictEqual(errors.map(({ agent, source, message, retryable, recoverable }) => ({ agent, source, message, retryable, recoverable })), [
        { agent: "desk", source: "voice", message: "stt Transport: the socket closed (1006)", retryable: true, recoverable: true }
      ])
    }).pipe(Effect.scoped, Effect.provide([layer, model]))
  }, 30_000)

  it.live("rule 12: a stream that cannot be opened again is tried again a second of audio later; what was said meanwhile is kept", () => {
    // The first stream drops at the first utterance's end; the next open is refused; the one
    // after works.
    const { layer, record } = engines((n) => n === 1, (n) => n === 2)
    return Effect.gen(function*() {
      const { line, errors, turns } = yield* desk()
      yield* utter(line, 12)
      yield* utter(line, 7)
      yield* utter(line, 9)
      yield* until("three turns", () => turns().length === 3)
      assert.deepStrictEqual(turns(), ["12 frames", "7 frames", "9 frames"])
      assert.deepStrictEqual(record, { opened: 2, refused: 1 })
      assert.deepStrictEqual(errors, ["stt Transport: the socket closed (1006)", "stt Transport: connect refused"])
    }).pipe(Effect.scoped, Effect.provide([layer, model]))
  }, 30_000)
})
