import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { RtcNode } from "../../layers/rtc/RtcNode.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Resampler } from "../../services/Resampler.ts"

const tone = (hz: number, ms: number, rate: number) => {
  const n = Math.round((ms / 1000) * rate)
  const data = new Int16Array(n)
  for (let i = 0; i < n; i++) data[i] = Math.round(Math.sin((2 * Math.PI * hz * i) / rate) * 16000)
  return AudioFrame.make(data, rate)
}

describe("AudioFrame", () => {
  it("round-trips PCM16 bytes, also from an odd offset", () => {
    const frame = tone(440, 20, 16000)
    const bytes = AudioFrame.toPcm16(frame)
    assert.strictEqual(bytes.byteLength, 640)
    const shifted = new Uint8Array(bytes.byteLength + 1)
    shifted.set(bytes, 1)
    const back = AudioFrame.fromPcm16(shifted.subarray(1), 16000)
    assert.deepStrictEqual(Array.from(back.data), Array.from(frame.data))
    assert.throws(() => AudioFrame.fromPcm16(new Uint8Array(3), 16000), /even number/)
  })

  it("converts to float and back within one step", () => {
    const frame = tone(300, 10, 8000)
    const back = AudioFrame.fromFloat32(AudioFrame.toFloat32(frame), 8000)
    for (let i = 0; i < frame.data.length; i++) assert.isAtMost(Math.abs(back.data[i]! - frame.data[i]!), 1)
  })

  it("splits into frames of a duration and joins them back", () => {
    const frame = tone(440, 55, 16000)
    const parts = AudioFrame.split(frame, 20)
    assert.deepStrictEqual(parts.map(AudioFrame.durationMs), [20, 20, 15])
    assert.deepStrictEqual(Array.from(AudioFrame.concat(parts).data), Array.from(frame.data))
    assert.throws(() => AudioFrame.concat([frame, AudioFrame.silence(10, 8000)]), /cannot join/)
  })
})

describe("Resampler", () => {
  it.effect("converts 48 kHz to 16 kHz keeping the duration and the tone's level", () =>
    Effect.gen(function*() {
      const stage = yield* (yield* Resampler).make(48000, 16000)
      const input = tone(440, 1000, 48000)
      const out = [...AudioFrame.split(input, 20).flatMap((f) => stage.push(f)), ...stage.flush()]
      const joined = AudioFrame.concat(out)
      assert.strictEqual(joined.sampleRate, 16000)
      assert.approximately(AudioFrame.durationMs(joined), 1000, 25)
      assert.approximately(AudioFrame.rms(joined), AudioFrame.rms(input), 0.02)
    }).pipe(Effect.provide(Resampler.layer.pipe(Layer.provide(RtcNode.layer)))))
})
