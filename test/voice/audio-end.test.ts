/**
 * Issue 33 item 8: a push-to-talk turn ends. The user's audio can stop mid-speech (the button
 * released as the words end, a muted track): the VAD then never hears the silence that ends a
 * turn. An `AudioEnd` in the input, or no audio for the endpointing delay during speech (the
 * clock's time: a TestClock here), counts as silence, and the turn is handed on.
 * Scripted engines: the VAD hears non-zero samples as speech; the STT hears "what time is it".
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Layer, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import { Stt, type SttEvent } from "../../services/Stt.ts"
import { Tts } from "../../services/Tts.ts"
import { Agent } from "../../src/index.ts"
import * as VoiceInput from "../../src/voice/VoiceInput.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { recorder } from "./harness.ts"
import * as ScriptedVad from "./scriptedVad.ts"

const RATE = 16000
const engines = Layer.mergeAll(
  ScriptedVad.layer({ minSpeechMs: 40, minSilenceMs: 200 }),
  Layer.succeed(Stt, Stt.of({
    sampleRate: RATE,
    stream: () =>
      Effect.gen(function*() {
        const events = yield* Queue.unbounded<SttEvent>()
        const final = Queue.offer(events, { _tag: "Final", text: "what time is it" }).pipe(Effect.asVoid)
        return { events: Stream.fromQueue(events), push: () => Effect.void, endUtterance: final }
      })
  })),
  Layer.succeed(Tts, Tts.of({ sampleRate: RATE, synthesize: () => Stream.empty }))
)
const agent = Agent.make({ name: "clock", instructions: "Tell the time." })
const speech = (ms: number) => Array.from({ length: ms / 20 }, () => AudioFrame.make(new Int16Array(320).fill(1000), RATE))

/** A pipeline fed by hand; `turns` are the user's messages that reached the session. */
const pipeline = Effect.gen(function*() {
  const line = yield* Queue.unbounded<VoiceInput.Input, Cause.Done>()
  const { session } = yield* VoicePipeline.start({ agent, input: Stream.fromQueue(line), voice: { minEndpointingDelayMs: 500 } }).pipe(
    Effect.provideService(AudioOutput, recorder().output)
  )
  const turns = Effect.map(session.history, (h) => h.items.flatMap((i) => (i._tag === "Message" && i.role === "user" ? [i.text] : [])))
  return { line, turns }
})

/** Lets every fiber run what it can without the clock moving. */
const settle = Effect.forEach(Array.from({ length: 200 }), () => Effect.yieldNow, { discard: true })

describe("voice input: the user's audio stops mid-speech (issue 33 item 8)", () => {
  it.effect("item 8: an AudioEnd after speech ends the turn at once, without waiting for the clock", () =>
    Effect.gen(function*() {
      const { line, turns } = yield* pipeline
      yield* Queue.offerAll(line, speech(400))
      yield* settle
      assert.deepStrictEqual(yield* turns, [])
      yield* Queue.offer(line, VoiceInput.audioEnd)
      yield* settle
      assert.deepStrictEqual(yield* turns, ["what time is it"])
    }).pipe(Effect.scoped, Effect.provide([engines, ScriptedModel.layer([])])))

  it.effect("item 8: a line that sends nothing for the endpointing delay during speech counts as silence; a shorter pause does not", () =>
    Effect.gen(function*() {
      const { line, turns } = yield* pipeline
      yield* Queue.offerAll(line, speech(400))
      yield* settle
      yield* TestClock.adjust("499 millis")
      yield* settle
      assert.deepStrictEqual(yield* turns, [], "a pause shorter than the endpointing delay ends nothing")
      // the speech goes on after the pause, then the line stops
      yield* Queue.offerAll(line, speech(200))
      yield* settle
      yield* TestClock.adjust("499 millis")
      yield* settle
      assert.deepStrictEqual(yield* turns, [])
      yield* TestClock.adjust("1 millis")
      yield* settle
      assert.deepStrictEqual(yield* turns, ["what time is it"])
    }).pipe(Effect.scoped, Effect.provide([engines, ScriptedModel.layer([])])))
})
