/**
 * Sample-rate conversion in TypeScript: a polyphase windowed-sinc filter (Kaiser window), so
 * that a service converts audio without the optional `@livekit/rtc-node` peer. The ratio is
 * exact (`outputRate / inputRate` reduced to `L / M`); each of the `L` phases has its own taps,
 * normalised to a gain of exactly 1 at DC. Downsampling moves the cutoff below the new Nyquist
 * frequency, so a tone above it is removed, not folded back.
 *
 * Output sample `m` is the input's value at time `m * M / L` (no delay): a stage holds back the
 * last `halfWidth` input samples until the samples after them arrive, and `flush` pads the end
 * with silence. After `flush`, `n` input samples have given exactly `ceil(n * L / M)` outputs, and
 * the stage starts a new stream.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Layer } from "effect"
import * as AudioFrame from "./AudioFrame.ts"
import { Resampler, type ResamplerStage } from "./Resampler.ts"

/** Zero crossings of the sinc on each side, at the lower of the two rates. */
const ZERO_CROSSINGS = 16
/** The passband edge as a fraction of the lower rate's Nyquist frequency. */
const CUTOFF = 0.9
/** Kaiser window shape: about 80 dB of stopband attenuation. */
const KAISER_BETA = 8

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b))

/** The zeroth-order modified Bessel function of the first kind (its power series). */
const bessel0 = (x: number): number => {
  let sum = 1
  let term = 1
  for (let k = 1; k < 50; k++) {
    term *= (x / (2 * k)) ** 2
    sum += term
    if (term < sum * 1e-12) break
  }
  return sum
}

interface Filter {
  /** Input samples on each side of an output's time that its taps reach. */
  readonly halfWidth: number
  /** `phases[p][k]`: the weight of input `i - halfWidth + 1 + k` for output time `i + p / L`. */
  readonly phases: ReadonlyArray<Float64Array>
}

const design = (up: number, down: number): Filter => {
  const scale = Math.min(1, up / down) // the cutoff, relative to the input's Nyquist frequency
  const halfWidth = Math.ceil(ZERO_CROSSINGS / scale)
  const norm = bessel0(KAISER_BETA)
  const phases: Array<Float64Array> = []
  for (let p = 0; p < up; p++) {
    const taps = new Float64Array(2 * halfWidth)
    let sum = 0
    for (let k = 0; k < taps.length; k++) {
      const t = halfWidth - 1 - k + p / up // distance in input samples from the output's time
      const x = CUTOFF * scale * t
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x)
      const r = t / halfWidth
      const window = Math.abs(r) >= 1 ? 0 : bessel0(KAISER_BETA * Math.sqrt(1 - r * r)) / norm
      taps[k] = sinc * window
      sum += taps[k]!
    }
    for (let k = 0; k < taps.length; k++) taps[k]! /= sum
    phases.push(taps)
  }
  return { halfWidth, phases }
}

/** Filters by ratio, shared by every stage of that ratio (they are read-only). */
const filters = new Map<string, Filter>()
const filterFor = (up: number, down: number): Filter => {
  const key = `${up}/${down}`
  let filter = filters.get(key)
  if (filter === undefined) {
    filter = design(up, down)
    filters.set(key, filter)
  }
  return filter
}

const checkRate = (name: string, rate: number) => {
  if (!Number.isInteger(rate) || rate <= 0) throw new RangeError(`${name} must be a positive integer (Hz), got ${rate}`)
}

/**
 * A stage converting `channels`-channel PCM16 audio from `inputRate` to `outputRate`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stage = (inputRate: number, outputRate: number, channels = 1): ResamplerStage => {
  checkRate("inputRate", inputRate)
  checkRate("outputRate", outputRate)
  if (!Number.isInteger(channels) || channels <= 0) throw new RangeError(`channels must be a positive integer, got ${channels}`)
  if (inputRate === outputRate) return { inputRate, outputRate, push: (frame) => [frame], flush: () => [] }
  const divisor = gcd(inputRate, outputRate)
  const up = outputRate / divisor
  const down = inputRate / divisor
  const { halfWidth, phases } = filterFor(up, down)
  // input samples `base ..` (per channel) kept in `buffer`, interleaved; the next output's time
  // is input sample `index` plus `phase / up`
  let buffer = new Float64Array(0)
  let base = 0
  let received = 0
  let index = 0
  let phase = 0
  const start = () => {
    // the first output needs `halfWidth - 1` samples before time 0: silence
    buffer = new Float64Array((halfWidth - 1) * channels)
    base = -(halfWidth - 1)
    received = 0
    index = 0
    phase = 0
  }
  start()

  const append = (data: Int16Array) => {
    const next = new Float64Array(buffer.length + data.length)
    next.set(buffer)
    for (let i = 0; i < data.length; i++) next[buffer.length + i] = data[i]!
    buffer = next
    received += data.length / channels
  }

  /** Every output whose taps reach no further than input `available - 1`. */
  const produce = (available: number): ReadonlyArray<AudioFrame.AudioFrame> => {
    const out = new Int16Array((Math.ceil(((received - index) * up) / down) + 1) * channels)
    let n = 0
    while (index + halfWidth < available && index < received) {
      const taps = phases[phase]!
      const from = (index - halfWidth + 1 - base) * channels
      for (let c = 0; c < channels; c++) {
        let acc = 0
        for (let k = 0, at = from + c; k < taps.length; k++, at += channels) acc += taps[k]! * buffer[at]!
        out[n++] = acc > 32767 ? 32767 : acc < -32768 ? -32768 : Math.round(acc)
      }
      phase += down
      index += Math.floor(phase / up)
      phase %= up
    }
    const keepFrom = index - halfWidth + 1
    if (keepFrom > base) {
      buffer = buffer.slice((keepFrom - base) * channels)
      base = keepFrom
    }
    return n === 0 ? [] : [AudioFrame.make(out.slice(0, n), outputRate, channels)]
  }

  return {
    inputRate,
    outputRate,
    push: (frame) => {
      if (frame.sampleRate !== inputRate) throw new RangeError(`resampler for ${inputRate} Hz was pushed ${frame.sampleRate} Hz`)
      if (frame.channels !== channels) throw new RangeError(`resampler for ${channels} channel(s) was pushed ${frame.channels}`)
      append(frame.data)
      return produce(received)
    },
    flush: () => {
      append(new Int16Array(halfWidth * channels))
      received -= halfWidth // the padding is silence after the end, not input
      const rest = produce(received + halfWidth)
      start()
      return rest
    }
  }
}

/**
 * `Resampler` by this module: no native code, nothing to load or dispose.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Resampler> = Layer.succeed(Resampler, {
  make: (inputRate, outputRate, channels = 1) => Effect.sync(() => stage(inputRate, outputRate, channels))
})
