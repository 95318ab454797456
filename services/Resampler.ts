/**
 * Sample-rate conversion between a transport's rate and a model's (8 kHz phone audio, 16 kHz
 * STT, 24 kHz realtime models, 48 kHz browsers and LiveKit). A stage keeps state between pushes
 * (its filter needs the samples around a frame edge), so one stage serves one stream.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Effect, Layer } from "effect"
import { RtcNode } from "../layers/rtc/RtcNode.ts"
import * as AudioFrame from "./AudioFrame.ts"

/**
 * One conversion between two rates: push frames, flush at the end.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResamplerStage {
  readonly inputRate: number
  readonly outputRate: number
  /** Converts a frame; may return fewer samples than it took (the rest come with later pushes). */
  readonly push: (frame: AudioFrame.AudioFrame) => ReadonlyArray<AudioFrame.AudioFrame>
  /** What is still buffered, at the end of the stream. */
  readonly flush: () => ReadonlyArray<AudioFrame.AudioFrame>
}

/**
 * Makes resampling stages.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResamplerService {
  readonly make: (inputRate: number, outputRate: number, channels?: number) => Effect.Effect<ResamplerStage>
}

/** A stage that passes frames through (input and output rates equal). */
const identity = (rate: number): ResamplerStage => ({
  inputRate: rate,
  outputRate: rate,
  push: (frame) => [frame],
  flush: () => []
})

/**
 * Converts audio between sample rates. `SincResampler.layer` needs no native code;
 * `Resampler.layer` uses rtc-node's.
 *
 * @since 0.1.0
 * @category services
 */
export class Resampler extends Context.Service<Resampler, ResamplerService>()("baton/Resampler") {
  /**
   * Conversion by `@livekit/rtc-node`'s `AudioResampler`. It needs the `RtcNode` resource, which
   * the application provides once (`RtcNode.layer`) for every part that uses rtc-node.
   */
  static readonly layer: Layer.Layer<Resampler, never, RtcNode> = Layer.effect(
    Resampler,
    Effect.gen(function*() {
      const rtc = yield* RtcNode
      return {
        make: (inputRate, outputRate, channels = 1) =>
          Effect.sync((): ResamplerStage => {
            if (inputRate === outputRate) return identity(inputRate)
            const native = new rtc.AudioResampler(inputRate, outputRate, channels)
            const convert = (frames: ReadonlyArray<InstanceType<RtcNodeFrame>>) =>
              frames.map((f) => AudioFrame.make(f.data, f.sampleRate, f.channels))
            return {
              inputRate,
              outputRate,
              push: (frame) => {
                if (frame.sampleRate !== inputRate) {
                  throw new RangeError(`resampler for ${inputRate} Hz was pushed ${frame.sampleRate} Hz`)
                }
                return convert(native.push(
                  new rtc.AudioFrame(frame.data, frame.sampleRate, frame.channels, AudioFrame.samplesPerChannel(frame))
                ))
              },
              flush: () => convert(native.flush())
            }
          })
      }
    })
  )
}

type RtcNodeFrame = typeof import("@livekit/rtc-node").AudioFrame
