/**
 * A small energy-based voice activity detector standing in for the providers' server VAD.
 *
 * Audio is cut into 10 ms frames; a frame is "speech" when its RMS (as a fraction of full scale)
 * exceeds `thresholdRms`. Speech starts at the first speech frame and stops once `silenceMs` of
 * non-speech follows the last speech frame. The synthesized tone of `audio.ts` is speech, digital
 * silence is not. Positions are absolute milliseconds of the session's input audio stream, supplied by
 * the caller with each chunk.
 */
import { type AudioEncoding, decodeToLinear, sampleRate } from "./audio.ts"

export interface VadSettings {
  /** RMS threshold as a fraction of full scale. */
  readonly thresholdRms: number
  /** Silence after the last speech frame that ends the utterance. */
  readonly silenceMs: number
}

export type VadEvent =
  | { readonly type: "speech_started"; readonly atMs: number }
  | { readonly type: "speech_stopped"; readonly atMs: number }

const FRAME_MS = 10

export class EnergyVad {
  private inSpeech = false
  private speechStartMs = 0
  private lastSpeechEndMs = 0
  settings: VadSettings

  constructor(settings: VadSettings) {
    this.settings = settings
  }

  get speaking(): boolean {
    return this.inSpeech
  }

  get utteranceStartMs(): number {
    return this.speechStartMs
  }

  /** Feeds a chunk whose first sample is at absolute position `startMs`. */
  feed(enc: AudioEncoding, bytes: Uint8Array, startMs: number): Array<VadEvent> {
    const samples = decodeToLinear(enc, bytes)
    const perFrame = Math.max(1, Math.round((sampleRate(enc) * FRAME_MS) / 1000))
    const msPerSample = 1000 / sampleRate(enc)
    const events: Array<VadEvent> = []
    for (let off = 0; off < samples.length; off += perFrame) {
      const end = Math.min(samples.length, off + perFrame)
      let sum = 0
      for (let i = off; i < end; i++) sum += samples[i]! * samples[i]!
      const rms = Math.sqrt(sum / (end - off)) / 32768
      const frameStart = startMs + off * msPerSample
      const frameEnd = startMs + end * msPerSample
      if (rms > this.settings.thresholdRms) {
        if (!this.inSpeech) {
          this.inSpeech = true
          this.speechStartMs = Math.floor(frameStart)
          events.push({ type: "speech_started", atMs: this.speechStartMs })
        }
        this.lastSpeechEndMs = frameEnd
      } else if (this.inSpeech && frameEnd - this.lastSpeechEndMs >= this.settings.silenceMs) {
        this.inSpeech = false
        events.push({ type: "speech_stopped", atMs: Math.round(this.lastSpeechEndMs) })
      }
    }
    return events
  }

  /** Ends an open utterance now (explicit commit, `audioStreamEnd`); returns the stop event if any. */
  flush(): VadEvent | undefined {
    if (!this.inSpeech) return undefined
    this.inSpeech = false
    return { type: "speech_stopped", atMs: Math.round(this.lastSpeechEndMs) }
  }

  reset(): void {
    this.inSpeech = false
  }
}
