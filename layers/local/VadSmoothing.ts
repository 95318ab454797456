/**
 * What both offline VADs share: cutting pushed audio into the engine's window, and turning one
 * speech/no-speech decision per window into `SpeechStarted`/`SpeechEnded` events with the
 * `minSpeechMs`/`minSilenceMs` hysteresis of `VadOptions`. Times count audio pushed, not wall
 * time, so the events are the same on any machine.
 */
import type * as AudioFrame from "../../services/AudioFrame.ts"
import type { VadEvent, VadOptions } from "../../services/Vad.ts"
import { VoiceError } from "../../services/VoiceError.ts"

export interface Smoother {
  /** One window's decision, `ms` long; returns the event it completes, if any. */
  readonly decide: (isSpeech: boolean, ms: number) => VadEvent | undefined
  readonly speaking: () => boolean
}

export const makeSmoother = (options: VadOptions = {}): Smoother => {
  const minSpeechMs = options.minSpeechMs ?? 100
  const minSilenceMs = options.minSilenceMs ?? 300
  let at = 0
  let speaking = false
  let run = 0 // speech (while silent) or silence (while speaking) in a row, ms
  let startedAt = 0
  return {
    speaking: () => speaking,
    decide: (isSpeech, ms) => {
      at += ms
      if (speaking === isSpeech) {
        run = 0
        return undefined
      }
      run += ms
      if (!speaking && run >= minSpeechMs) {
        speaking = true
        startedAt = at - run
        run = 0
        return { _tag: "SpeechStarted", atMs: startedAt }
      }
      if (speaking && run >= minSilenceMs) {
        speaking = false
        const endedAt = at - run
        run = 0
        return { _tag: "SpeechEnded", atMs: endedAt, speechMs: endedAt - startedAt }
      }
      return undefined
    }
  }
}

/**
 * Gathers pushed samples into windows of a fixed size. The stream's rate is fixed by its first
 * frame; a frame at another rate, or not mono, is refused.
 */
export interface Windower {
  /** The rate, once the first frame fixed it. */
  readonly rate: () => number | undefined
  /**
   * Whole windows ready after adding `frame` (the rest waits for the next push). A window may be
   * a view of the frame's own samples, or of the windower's one buffer for a window that spans
   * frames: read it before the frame is reused and before the next `add`.
   */
  readonly add: (frame: AudioFrame.AudioFrame) => ReadonlyArray<Int16Array> | VoiceError
}

const none: ReadonlyArray<Int16Array> = []

export const makeWindower = (
  rates: ReadonlyArray<number>,
  windowOf: (rate: number) => number,
  engine: string
): Windower => {
  let rate: number | undefined
  /** Samples of the next window gathered so far (the first `filled`). */
  let partial = new Int16Array(0)
  /** The window that spans frames (at most one per `add`: the first), reused. */
  let spanning = new Int16Array(0)
  let filled = 0
  const refuse = (description: string) => new VoiceError({ source: "vad", reason: "InvalidAudio", description })
  return {
    rate: () => rate,
    add: (frame) => {
      if (frame.channels !== 1) return refuse(`${engine} takes mono audio, got ${frame.channels} channels`)
      if (rate === undefined) {
        if (!rates.includes(frame.sampleRate)) {
          return refuse(`${engine} takes ${rates.join(", ")} Hz, got ${frame.sampleRate} Hz (resample first)`)
        }
        rate = frame.sampleRate
        partial = new Int16Array(windowOf(rate))
        spanning = new Int16Array(partial.length)
      } else if (frame.sampleRate !== rate) {
        return refuse(`this ${engine} stream is at ${rate} Hz, got a frame at ${frame.sampleRate} Hz`)
      }
      const size = partial.length
      const data = frame.data
      // Per frame, no copy: nothing is waiting and the frame holds whole windows (a 20 ms frame
      // for WebRTC VAD).
      if (filled === 0 && data.length === size) return [data]
      if (filled + data.length < size) {
        partial.set(data, filled)
        filled += data.length
        return none
      }
      const out: Array<Int16Array> = []
      let at = 0
      while (data.length - at >= size - filled) {
        const take = size - filled
        if (filled === 0) out.push(data.subarray(at, at + take))
        else {
          spanning.set(partial.subarray(0, filled))
          spanning.set(data.subarray(at, at + take), filled)
          out.push(spanning)
        }
        at += take
        filled = 0
      }
      partial.set(data.subarray(at), 0)
      filled = data.length - at
      return out
    }
  }
}
