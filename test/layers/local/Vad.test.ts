import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { execFile } from "node:child_process"
import { rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { fileURLToPath } from "node:url"
import * as FliteTts from "../../../layers/local/FliteTts.ts"
import * as SileroVad from "../../../layers/local/SileroVad.ts"
import * as WebRtcVad from "../../../layers/local/WebRtcVad.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { Vad, type VadEvent } from "../../../services/Vad.ts"
import { VoiceError } from "../../../services/VoiceError.ts"
import { pad, speak } from "./helpers.ts"

const failureOf = <A>(exit: Exit.Exit<A, VoiceError>): VoiceError => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
  assert.instanceOf(error, VoiceError)
  return error as VoiceError
}

/** Pushes `audio` in `frameMs` frames; the events with `speaking()` right after each. */
const detect = (audio: AudioFrame.AudioFrame, frameMs: number, minSpeechMs = 100) =>
  Effect.gen(function*() {
    const vad = yield* Vad
    const stream = yield* vad.stream({ minSpeechMs, minSilenceMs: 400 })
    const events: Array<VadEvent & { readonly speakingAfter: boolean }> = []
    for (const frame of AudioFrame.split(audio, frameMs)) {
      for (const e of yield* stream.push(frame)) events.push({ ...e, speakingAfter: stream.speaking() })
    }
    return { events, speaking: stream.speaking() }
  })

/** Where flite's own audio starts and ends (its WAV has a little silence at both ends). */
const soundEdges = (audio: AudioFrame.AudioFrame) => {
  const loud = (i: number) => Math.abs(audio.data[i]!) > 300
  let first = 0
  while (!loud(first)) first++
  let last = audio.data.length - 1
  while (!loud(last)) last--
  return { startMs: (first / audio.sampleRate) * 1000, endMs: (last / audio.sampleRate) * 1000 }
}

const engines = [
  ["WebRtcVad", WebRtcVad.layer()],
  ["SileroVad", SileroVad.layer()],
  ["SileroVad on the event loop", SileroVad.layer({ inference: "event-loop" })]
] as const

for (const [name, vadLayer] of engines) {
  describe(name, () => {
    it.effect("finds where flite's speech starts and ends inside silence", () =>
      Effect.gen(function*() {
        const audio = pad(yield* speak("I would like to speak to someone about my booking."), 1000, 1500)
        const edges = soundEdges(audio)
        for (const frameMs of [20, 30]) {
          const { events, speaking } = yield* detect(audio, frameMs)
          // The sentence has pauses shorter than minSilenceMs, so it is one stretch of speech.
          assert.deepStrictEqual(events.map((e) => e._tag), ["SpeechStarted", "SpeechEnded"], JSON.stringify(events))
          const [started, ended] = events
          assert.isTrue(started!.speakingAfter)
          assert.isFalse(ended!.speakingAfter)
          assert.isFalse(speaking)
          assert.approximately(started!.atMs, edges.startMs, 150)
          assert.approximately(ended!.atMs, edges.endMs, 250)
          assert.strictEqual(ended!._tag === "SpeechEnded" && ended!.speechMs, ended!.atMs - started!.atMs)
        }
      }).pipe(Effect.provide(Layer.mergeAll(vadLayer, FliteTts.layer()))), 30_000)

    it.effect("works at 8 kHz too (flite's kal voice, phone audio)", () =>
      Effect.gen(function*() {
        const audio = pad(yield* speak("Thank you for calling, how can I help?", "kal"), 800, 1000)
        assert.strictEqual(audio.sampleRate, 8000)
        const edges = soundEdges(audio)
        const { events } = yield* detect(audio, 20)
        assert.deepStrictEqual(events.map((e) => e._tag), ["SpeechStarted", "SpeechEnded"], JSON.stringify(events))
        assert.approximately(events[0]!.atMs, edges.startMs, 150)
        assert.approximately(events[1]!.atMs, edges.endMs, 250)
      }).pipe(Effect.provide(Layer.mergeAll(vadLayer, FliteTts.layer()))), 30_000)

    it.effect("pure silence gives no events; a 40 ms click is shorter than minSpeechMs", () =>
      Effect.gen(function*() {
        const silent = yield* detect(AudioFrame.silence(2000, 16000), 20)
        assert.deepStrictEqual(silent.events, [])
        const click = AudioFrame.make(
          Int16Array.from({ length: 640 }, (_, i) => Math.round(12000 * Math.sin(i / 3))),
          16000
        )
        // WebRTC VAD keeps saying speech for a while after a sound (its own hangover).
        const { events } = yield* detect(pad(click, 500, 500), 20, 300)
        assert.deepStrictEqual(events, [])
      }).pipe(Effect.provide(vadLayer)))

    it.effect("refuses a rate it does not take and a change of rate mid-stream", () =>
      Effect.gen(function*() {
        const vad = yield* Vad
        const stream = yield* vad.stream()
        const odd = failureOf(yield* stream.push(AudioFrame.silence(20, 44100)).pipe(Effect.exit))
        assert.strictEqual(odd.reason, "InvalidAudio")
        assert.include(odd.message, "resample")
        yield* stream.push(AudioFrame.silence(20, 16000))
        const changed = failureOf(yield* stream.push(AudioFrame.silence(20, 8000)).pipe(Effect.exit))
        assert.include(changed.message, "16000")
      }).pipe(Effect.scoped, Effect.provide(vadLayer)))
  })
}

describe("WebRtcVad without WebRTC's own hangover", () => {
  /** The events of `audio` in 20 ms frames with the pipeline's 100 ms of silence. */
  const ends = (audio: AudioFrame.AudioFrame) =>
    Effect.gen(function*() {
      const vad = yield* Vad
      const stream = yield* vad.stream({ minSilenceMs: 100 })
      const events: Array<VadEvent & { readonly heardAtMs: number }> = []
      let at = 0
      for (const frame of AudioFrame.split(audio, 20)) {
        at += 20
        for (const e of yield* stream.push(frame)) events.push({ ...e, heardAtMs: at })
      }
      return events
    }).pipe(Effect.scoped)

  it.effect("hears the end of speech about 100 ms sooner, after the speech, and does not split a sentence at its pauses", () =>
    Effect.gen(function*() {
      for (const sentence of ["What is the weather in Paris?", "I would like to speak to someone about my booking."]) {
        const audio = pad(yield* speak(sentence), 500, 1000)
        const edges = soundEdges(audio)
        const fast = yield* ends(audio).pipe(Effect.provide(WebRtcVad.layer()))
        const slow = yield* ends(audio).pipe(Effect.provide(WebRtcVad.layer({ hangover: true })))
        for (const events of [fast, slow]) {
          assert.deepStrictEqual(events.map((e) => e._tag), ["SpeechStarted", "SpeechEnded"], `${sentence}: ${JSON.stringify(events)}`)
        }
        assert.strictEqual(fast[0]!.atMs, slow[0]!.atMs, "the start is the same")
        // WebRTC's hangover at mode 2 and 20 ms windows: up to 5 windows
        assert.isAtLeast(slow[1]!.heardAtMs - fast[1]!.heardAtMs, 60, sentence)
        assert.isAtLeast(slow[1]!.atMs - fast[1]!.atMs, 60, sentence)
        // never before the sound is over (a 20 ms window's rounding)
        assert.isAtLeast(fast[1]!.atMs, edges.endMs - 40, sentence)
      }
    }).pipe(Effect.provide(FliteTts.layer({ voice: "rms" }))), 30_000)
})

describe("SileroVad's worker thread", () => {
  it.effect("hears what the event loop's inference hears, event for event, on the same speech", () =>
    Effect.gen(function*() {
      const audio = pad(yield* speak("Could you book me a table for two tonight? Thank you."), 600, 900)
      const run = (inference: "worker" | "event-loop") =>
        detect(audio, 20).pipe(Effect.provide(SileroVad.layer({ inference })))
      const worker = yield* run("worker")
      const eventLoop = yield* run("event-loop")
      assert.isAbove(worker.events.length, 1)
      assert.deepStrictEqual(worker.events, eventLoop.events)
    }).pipe(Effect.provide(FliteTts.layer())), 30_000)

  it.effect("ends with its Layer: a stream pushed after the Layer closed fails with a VoiceError, not a hang", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(SileroVad.layer(), scope)
      const stream = yield* Context.get(context, Vad).stream()
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Effect.exit(stream.push(AudioFrame.silence(40, 16000)))
      const error = failureOf(exit)
      assert.strictEqual(error.reason, "Transport")
      assert.include(error.message, "worker thread stopped")
    }))

  it.effect("a program that used it exits on its own once its Layer is released", () =>
    Effect.gen(function*() {
      const fixture = fileURLToPath(new URL("./fixtures/silero-settles.ts", import.meta.url))
      const run = yield* Effect.promise(() =>
        new Promise<{ code: number | null; out: string }>((resolve) => {
          execFile(process.execPath, [fixture], { timeout: 20_000 }, (_error, stdout) =>
            resolve({ code: _error === null ? 0 : (_error as { code?: number }).code ?? null, out: stdout }))
        })
      )
      assert.strictEqual(run.code, 0, run.out)
      assert.include(run.out, "settled with 0 events")
    }), 30_000)

  it.effect("a model file onnxruntime cannot read fails the Layer Unavailable, in either mode", () =>
    Effect.gen(function*() {
      const bad = `${tmpdir()}/baton-bad-silero-${process.pid}.onnx`
      writeFileSync(bad, "not a model")
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(bad, { force: true })))
      for (const inference of ["worker", "event-loop"] as const) {
        const error = failureOf(yield* Layer.build(SileroVad.layer({ modelPath: bad, inference })).pipe(Effect.scoped, Effect.exit))
        assert.strictEqual(error.reason, "Unavailable", inference)
        assert.include(error.message, "get it again with", inference)
      }
    }).pipe(Effect.scoped))
})

describe("SileroVad without its model", () => {
  it.effect("fails the layer with the command that fetches it", () =>
    Effect.gen(function*() {
      const error = failureOf(yield* Layer.build(SileroVad.layer({ modelPath: "/nonexistent/silero_vad.onnx" })).pipe(Effect.exit))
      assert.strictEqual(error.reason, "Unavailable")
      assert.include(error.message, "npm run setup")
      assert.include(error.message, "scripts/fetch-silero.sh")
    }))
})
