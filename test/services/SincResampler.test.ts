/**
 * The TypeScript resampler (services/SincResampler.ts), which the service uses so that it needs
 * no optional peer: a tone keeps its frequency, level and timing at every rate pair a transport
 * meets, a tone above the new Nyquist frequency is removed, and streaming in any frame sizes
 * gives the same samples as one push.
 */
import { assert, describe, it } from "@effect/vitest"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as SincResampler from "../../services/SincResampler.ts"

const tone = (hz: number, samples: number, rate: number, amplitude = 10000) =>
  AudioFrame.make(Int16Array.from({ length: samples }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate))), rate)

const convert = (frames: ReadonlyArray<AudioFrame.AudioFrame>, from: number, to: number, channels = 1) => {
  const stage = SincResampler.stage(from, to, channels)
  const out = [...frames.flatMap((f) => stage.push(f)), ...stage.flush()]
  return AudioFrame.concat(out)
}

/** Chunks of pseudo-random sizes (a fixed sequence), as a network delivers them. */
const chunks = (frame: AudioFrame.AudioFrame) => {
  const parts: Array<AudioFrame.AudioFrame> = []
  let seed = 7
  for (let at = 0; at < frame.data.length;) {
    seed = (seed * 1103515245 + 12345) % 2147483648
    const size = Math.min(frame.data.length - at, 1 + (seed % 997))
    parts.push(AudioFrame.make(frame.data.subarray(at, at + size), frame.sampleRate))
    at += size
  }
  return parts
}

const pairs: ReadonlyArray<readonly [number, number]> = [
  [8000, 16000], [8000, 24000], [8000, 48000], [16000, 24000], [16000, 48000], [24000, 48000],
  [48000, 24000], [48000, 16000], [48000, 8000], [24000, 16000], [24000, 8000], [16000, 8000], [44100, 16000]
]

describe("SincResampler", () => {
  for (const [from, to] of pairs) {
    it(`${from} Hz -> ${to} Hz: a 440 Hz tone comes out on time, at its level, within 1%`, () => {
      const input = tone(440, from, from) // one second
      const out = convert(chunks(input), from, to)
      assert.strictEqual(out.sampleRate, to)
      assert.strictEqual(out.data.length, Math.ceil((input.data.length * to) / from))
      const ideal = tone(440, out.data.length, to)
      // away from the ends (where the input starts and stops abruptly), sample by sample
      const edge = Math.ceil(to / 50)
      let worst = 0
      for (let i = edge; i < out.data.length - edge; i++) worst = Math.max(worst, Math.abs(out.data[i]! - ideal.data[i]!))
      assert.isBelow(worst, 100, `largest error ${worst} of 10000`)
    })
  }

  it("streaming in frames of any size gives the same samples as one push", () => {
    const input = tone(1000, 4800, 48000)
    for (const [from, to] of [[48000, 16000], [48000, 44100]] as const) {
      const whole = convert([input], from, to)
      const streamed = convert(chunks(input), from, to)
      assert.deepStrictEqual(Array.from(streamed.data), Array.from(whole.data))
    }
  })

  it("downsampling removes a tone above the new Nyquist frequency instead of folding it back", () => {
    const input = tone(6000, 48000, 48000) // above 4 kHz, the Nyquist frequency of 8 kHz
    const out = convert([input], 48000, 8000)
    const edge = 200
    const inner = AudioFrame.make(out.data.subarray(edge, out.data.length - edge), 8000)
    assert.isBelow(AudioFrame.rms(inner), AudioFrame.rms(input) * 0.01) // more than 40 dB down
  })

  it("keeps silence silent and a constant level constant (gain 1 at DC)", () => {
    const dc = AudioFrame.make(new Int16Array(2400).fill(1234), 24000)
    const out = convert([dc], 24000, 16000)
    for (let i = 40; i < out.data.length - 40; i++) assert.strictEqual(out.data[i], 1234)
    assert.isTrue(convert([AudioFrame.silence(100, 16000)], 16000, 48000).data.every((s) => s === 0))
  })

  it("converts interleaved stereo channel by channel", () => {
    const left = tone(440, 4800, 48000)
    const right = tone(880, 4800, 48000, 5000)
    const stereo = new Int16Array(9600)
    for (let i = 0; i < 4800; i++) {
      stereo[2 * i] = left.data[i]!
      stereo[2 * i + 1] = right.data[i]!
    }
    const out = convert([AudioFrame.make(stereo, 48000, 2)], 48000, 16000, 2)
    const mono = (c: number) => AudioFrame.make(out.data.filter((_, i) => i % 2 === c), 16000)
    assert.deepStrictEqual(Array.from(mono(0).data), Array.from(convert([left], 48000, 16000).data))
    assert.deepStrictEqual(Array.from(mono(1).data), Array.from(convert([right], 48000, 16000).data))
  })

  it("a stage starts a new stream after flush, and refuses a frame at another rate", () => {
    const stage = SincResampler.stage(16000, 8000)
    const first = [...stage.push(tone(440, 1600, 16000)), ...stage.flush()]
    const second = [...stage.push(tone(440, 1600, 16000)), ...stage.flush()]
    assert.deepStrictEqual(Array.from(AudioFrame.concat(second).data), Array.from(AudioFrame.concat(first).data))
    assert.throws(() => stage.push(tone(440, 160, 8000)), /resampler for 16000 Hz was pushed 8000 Hz/)
    assert.throws(() => SincResampler.stage(0, 8000), /inputRate must be a positive integer/)
  })
})
