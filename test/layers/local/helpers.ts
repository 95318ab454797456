/**
 * Real audio for the offline-engine tests: flite speaks a sentence (through the FliteTts layer),
 * padded with digital silence where a test needs the VAD to find its edges.
 */
import { Effect, Stream } from "effect"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { Tts } from "../../../services/Tts.ts"

/** The whole of what flite says for `text`, as one frame. */
export const speak = (text: string, voice?: string) =>
  Effect.gen(function*() {
    const tts = yield* Tts
    const frames = yield* Stream.runCollect(tts.synthesize(text, voice === undefined ? undefined : { voice }))
    return AudioFrame.concat(frames)
  })

/** `audio` with `beforeMs` of silence before it and `afterMs` after. */
export const pad = (audio: AudioFrame.AudioFrame, beforeMs: number, afterMs: number) =>
  AudioFrame.concat([
    AudioFrame.silence(beforeMs, audio.sampleRate),
    audio,
    AudioFrame.silence(afterMs, audio.sampleRate)
  ])

/** Lower-case words without punctuation. */
export const words = (text: string): Array<string> =>
  text.toLowerCase().replace(/[^a-z' ]/g, " ").split(/\s+/).filter((w) => w !== "")

/** The share of `expected`'s words found, in order, in `heard` (longest common subsequence). */
export const wordAccuracy = (expected: string, heard: string): number => {
  const a = words(expected)
  const b = words(heard)
  const table = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      table[i]![j] = a[i - 1] === b[j - 1] ? table[i - 1]![j - 1]! + 1 : Math.max(table[i - 1]![j]!, table[i]![j - 1]!)
    }
  }
  return a.length === 0 ? 1 : table[a.length]![b.length]! / a.length
}
