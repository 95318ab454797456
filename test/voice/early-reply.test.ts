/**
 * A reply started on the speech-to-text engine's own end of speech (issue 36, "Target (voice)"),
 * under `TestClock` with scripted engines: the VAD hears non-zero samples as speech and ends it
 * after 300 ms of silence; the STT says one word more of the utterance's text as an interim every
 * 100 ms of speech and, on the first silent frame after speech, tells that every word is final
 * and a pause followed (`endOfSpeech`, Deepgram's `speech_final`), well before the VAD ends the
 * utterance; its `Final` comes on `endUtterance`. Time in the input is the audio's own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Queue, Stream } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Stt, type SttEvent } from "../../services/Stt.ts"
import { Tts } from "../../services/Tts.ts"
import { Agent } from "../../src/index.ts"
import type * as VoiceInput from "../../src/voice/VoiceInput.ts"
import { advance, outcomes, pipeline as fedPipeline, RATE, silence, speech } from "./fedPipeline.ts"
import * as ScriptedVad from "./scriptedVad.ts"

/** What the TTS was asked to say, and which of those syntheses were stopped before their end. */
interface Synth {
  readonly said: Array<string>
  readonly cancelled: Array<string>
}

/** `texts`: each utterance's words, in order; a sentence in `slow` is synthesized for ever (its
 * first frame, then nothing). */
const engines = (texts: Array<string>, options: { readonly endOfSpeech?: boolean; readonly synth?: Synth; readonly slow?: string } = {}) =>
  Layer.mergeAll(
    ScriptedVad.layer({ minSpeechMs: 40, minSilenceMs: 300 }),
    Layer.succeed(Stt, Stt.of({
      sampleRate: RATE,
      stream: () =>
        Effect.gen(function*() {
          const events = yield* Queue.unbounded<SttEvent>()
          let frames = 0
          let told = false
          const words = () => (texts[0] ?? "").split(" ").filter((w) => w !== "")
          return {
            events: Stream.fromQueue(events),
            push: (frame) =>
              Effect.gen(function*() {
                if (frame.data[0] === 0) {
                  if (frames > 0 && !told && options.endOfSpeech !== false) {
                    told = true
                    yield* Queue.offer(events, { _tag: "Interim", text: words().slice(0, Math.ceil(frames / 5)).join(" "), endOfSpeech: true })
                  }
                  return
                }
                told = false
                frames++
                if (frames % 5 === 0) yield* Queue.offer(events, { _tag: "Interim", text: words().slice(0, frames / 5).join(" ") })
              }),
            endUtterance: Effect.suspend(() => {
              frames = 0
              told = false
              return Queue.offer(events, { _tag: "Final", text: texts.shift() ?? "" })
            }).pipe(Effect.asVoid)
          }
        })
    })),
    Layer.succeed(Tts, Tts.of({
      sampleRate: RATE,
      synthesize: (text) => {
        options.synth?.said.push(text)
        const audio = Stream.make(AudioFrame.make(new Int16Array((text.length * 50 * RATE) / 1000).fill(7), RATE))
        return (text === options.slow ? Stream.concat(audio, Stream.never) : audio).pipe(
          Stream.onExit((exit) => Effect.sync(() => void (exit._tag === "Failure" && options.synth?.cancelled.push(text))))
        )
      }
    }))
  )

/** The shared pipeline, with the outcomes of its preemptive generations so far. */
const pipeline = (agent: Agent.Agent, voice: VoiceInput.VoiceInputOptions) =>
  Effect.map(fedPipeline(agent, voice), (fed) => ({ ...fed, preemptive: Effect.map(fed.decisions("preemptive_generation"), outcomes) }))

const waiter = Agent.make({ name: "waiter", instructions: "Take bookings." })

describe("a reply started on the engine's own end of speech", () => {
  it.effect("starts when the engine tells the words are final, before the VAD ends the utterance, and is used at the turn's end", () =>
    Effect.gen(function*() {
      const { out, push, messages, preemptive } = yield* pipeline(waiter, { minEndpointingDelayMs: 500, vad: { minSilenceMs: 300 } })
      const model = yield* ScriptedModel.ScriptedModel
      // 40 ms of silence: the engine's end of speech, the VAD still hears the utterance
      yield* push([...speech(500), ...silence(40)])
      assert.deepStrictEqual(yield* preemptive, ["started"])
      assert.lengthOf(model.requestsFor("waiter"), 1)
      assert.deepStrictEqual(yield* messages("user"), [])
      assert.lengthOf(out.played, 0)
      // the VAD's end and the Final (same words) change nothing: the call made ahead goes on
      yield* push(silence(440))
      assert.deepStrictEqual(yield* preemptive, ["started"])
      assert.deepStrictEqual(yield* messages("user"), [])
      yield* push(silence(40))
      assert.deepStrictEqual(yield* messages("user"), ["book a table for two"])
      assert.deepStrictEqual(yield* preemptive, ["started", "used"])
      yield* advance(10000)
      assert.deepStrictEqual(yield* messages("assistant"), ["For two, at eight."])
      assert.lengthOf(model.requestsFor("waiter"), 1, "one model call, made ahead")
    }).pipe(
      Effect.scoped,
      Effect.provide([engines(["book a table for two"]), ScriptedModel.layer([{ when: { user: /table for two/ }, reply: { text: "For two, at eight." } }])])
    ))

  it.effect("is dropped unheard and unrecorded when the user goes on within the VAD's silence", () =>
    Effect.gen(function*() {
      const { out, push, messages, preemptive } = yield* pipeline(waiter, { minEndpointingDelayMs: 500, vad: { minSilenceMs: 300 } })
      const model = yield* ScriptedModel.ScriptedModel
      // "book a table" and a 100 ms pause: a reply is started on it
      yield* push([...speech(300), ...silence(100)])
      assert.deepStrictEqual(yield* preemptive, ["started"])
      // the user goes on ("for two") before the VAD heard a silence: the new words drop it
      yield* push(speech(200))
      assert.deepStrictEqual(yield* preemptive, ["started", "discarded"])
      yield* push(silence(600))
      yield* advance(10000)
      assert.deepStrictEqual(yield* messages("user"), ["book a table for two"])
      assert.deepStrictEqual(yield* messages("assistant"), ["For two, at eight."])
      assert.deepStrictEqual((yield* preemptive).slice(0, 2), ["started", "discarded"])
      assert.strictEqual((yield* preemptive).at(-1), "used")
      assert.lengthOf(model.requestsFor("waiter"), 2)
      assert.lengthOf([...new Set(out.played.map((p) => p.speechId))], 1, "only the reply to the whole turn was played")
    }).pipe(
      Effect.scoped,
      Effect.provide([
        engines(["book a table for two"]),
        ScriptedModel.layer([
          { when: { user: /table for two/ }, reply: { text: "For two, at eight." } },
          { when: { user: /table$/ }, reply: { text: "For how many?" } }
        ])
      ])
    ))

  const synth: Synth = { said: [], cancelled: [] }
  it.effect("a reply spoken ahead is synthesized during the endpointing wait, unheard, and plays at the confirmed end of turn", () =>
    Effect.gen(function*() {
      synth.said.length = 0
      const { out, push, messages } = yield* pipeline(waiter, { minEndpointingDelayMs: 500, vad: { minSilenceMs: 300 } })
      yield* push([...speech(500), ...silence(40)])
      // its first sentence was synthesized ahead: nothing played, nothing in the history
      assert.deepStrictEqual(synth.said, ["For two, at eight."])
      assert.lengthOf(out.played, 0)
      assert.deepStrictEqual(yield* messages("assistant"), [])
      yield* push(silence(440))
      assert.lengthOf(out.played, 0, "not before the turn is confirmed")
      assert.deepStrictEqual(yield* messages("user"), [])
      yield* push(silence(40))
      assert.deepStrictEqual(yield* messages("user"), ["book a table for two"])
      assert.isAbove(out.played.length, 0, "played as soon as the turn is confirmed")
      yield* advance(10000)
      assert.deepStrictEqual(yield* messages("assistant"), ["For two, at eight."])
      assert.deepStrictEqual(synth.said, ["For two, at eight."], "the audio made ahead is the one played: no second synthesis")
    }).pipe(
      Effect.scoped,
      Effect.provide([engines(["book a table for two"], { synth }), ScriptedModel.layer([{ when: { user: /table for two/ }, reply: { text: "For two, at eight." } }])])
    ))

  const synth2: Synth = { said: [], cancelled: [] }
  it.effect("a reply spoken ahead is dropped unheard when the user goes on: its synthesis is cancelled, nothing played or kept", () =>
    Effect.gen(function*() {
      const { out, push, messages, preemptive } = yield* pipeline(waiter, { minEndpointingDelayMs: 500, vad: { minSilenceMs: 300 } })
      yield* push([...speech(300), ...silence(100)])
      assert.deepStrictEqual(synth2.said, ["For how many people?"])
      assert.deepStrictEqual(synth2.cancelled, [])
      yield* push(speech(200))
      assert.deepStrictEqual(yield* preemptive, ["started", "discarded"])
      assert.deepStrictEqual(synth2.cancelled, ["For how many people?"])
      yield* push(silence(600))
      yield* advance(10000)
      assert.deepStrictEqual(yield* messages("assistant"), ["For two, at eight."])
      assert.lengthOf([...new Set(out.played.map((p) => p.speechId))], 1)
      // every frame played is of the reply to the whole turn (the one made ahead had 20 chars of audio)
      const playedMs = out.played.reduce((ms, p) => ms + AudioFrame.durationMs(p.frame), 0)
      assert.strictEqual(playedMs, "For two, at eight.".length * 50)
    }).pipe(
      Effect.scoped,
      Effect.provide([
        engines(["book a table for two"], { synth: synth2, slow: "For how many people?" }),
        ScriptedModel.layer([
          { when: { user: /table for two/ }, reply: { text: "For two, at eight." } },
          { when: { user: /table$/ }, reply: { text: "For how many people?" } }
        ])
      ])
    ))

  it.effect("the endpointing delay counts from the last voiced frame, not from when the VAD noticed the silence", () =>
    Effect.gen(function*() {
      const { push, messages } = yield* pipeline(waiter, { minEndpointingDelayMs: 500, preemptiveGeneration: false, vad: { minSilenceMs: 300 } })
      // the VAD ends the speech 300 ms into the silence; the turn ends 500 ms after the last voiced frame
      yield* push([...speech(400), ...silence(480)])
      assert.deepStrictEqual(yield* messages("user"), [])
      yield* push(silence(20))
      assert.deepStrictEqual(yield* messages("user"), ["book a table for two"])
    }).pipe(
      Effect.scoped,
      Effect.provide([engines(["book a table for two"], { endOfSpeech: false }), ScriptedModel.layer([{ when: { agent: "waiter" }, reply: { text: "Sure." } }])])
    ))
})
