/**
 * The caller of every call in the capacity bench: one spoken question (a 16 kHz WAV made with
 * flite), then silence to the end of the cycle, repeated. Frames are 20 ms.
 */
import { Effect, Stream } from "effect"
import * as FliteTts from "../../layers/local/FliteTts.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Tts } from "../../services/Tts.ts"
import * as Wav from "../../services/Wav.ts"

export interface CallerLoop {
  /** Where the question's speech ends in the cycle (ms): after its last loud 10 ms window. */
  readonly speechEndMs: number
  /** The samples of the loop's frame `k` (counting from the call's start), shared: copy before keeping. */
  readonly frameAt: (k: number) => Int16Array
}

const FRAME_MS = 20

/** Where speech ends in `audio`: after its last 10 ms window louder than an RMS of 500. */
export const speechEndMs = (audio: AudioFrame.AudioFrame): number => {
  const window = audio.sampleRate / 100
  let last = 0
  for (let start = 0; start + window <= audio.data.length; start += window) {
    let energy = 0
    for (let i = start; i < start + window; i++) energy += audio.data[i]! * audio.data[i]!
    if (Math.sqrt(energy / window) > 500) last = start + window
  }
  return (last / audio.sampleRate) * 1000
}

export const loopOf = (question: AudioFrame.AudioFrame, cycleMs: number): CallerLoop => {
  if (question.sampleRate !== 16000 || question.channels !== 1) throw new Error("the caller must be a 16 kHz mono WAV")
  const perFrame = (16000 / 1000) * FRAME_MS
  const frames = Math.round(cycleMs / FRAME_MS)
  if (question.data.length > frames * perFrame) throw new Error(`the question is longer than the cycle (${cycleMs} ms)`)
  const loop = new Int16Array(frames * perFrame)
  loop.set(question.data)
  return {
    speechEndMs: speechEndMs(question),
    frameAt: (k) => {
      const at = (k % frames) * perFrame
      return loop.subarray(at, at + perFrame)
    }
  }
}

/** The caller's question. */
export const QUESTION = "What is the weather in Paris?"

/** Speaks {@link QUESTION} with flite (16 kHz) into a WAV file at `path`; its length in ms. */
export const writeQuestion = (path: string) =>
  Effect.gen(function*() {
    const tts = yield* Tts
    const question = AudioFrame.concat(yield* Stream.runCollect(tts.synthesize(QUESTION)))
    yield* Wav.writeFile(path, question)
    return { durationMs: AudioFrame.durationMs(question), speechEndMs: speechEndMs(question), sampleRate: question.sampleRate }
  }).pipe(Effect.provide(FliteTts.layer()))
