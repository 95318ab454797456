/**
 * A VAD for tests that need exact decisions rather than real engines: a frame is speech when its
 * first sample is not zero, smoothed as the real engines are (layers/local/VadSmoothing.ts).
 */
import { Effect, Layer } from "effect"
import { makeSmoother } from "../../layers/local/VadSmoothing.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Vad, type VadOptions } from "../../services/Vad.ts"

export const layer = (defaults: VadOptions = {}, sampleRate = 16000): Layer.Layer<Vad> =>
  Layer.succeed(Vad, Vad.of({
    sampleRates: [sampleRate],
    stream: (options) =>
      Effect.sync(() => {
        const smoother = makeSmoother({ ...defaults, ...options })
        return {
          speaking: smoother.speaking,
          push: (frame) =>
            Effect.sync(() => {
              const event = smoother.decide(frame.data[0] !== 0, AudioFrame.durationMs(frame))
              return event ? [event] : []
            })
        }
      })
  }))
