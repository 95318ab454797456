/**
 * One shape for audio across baton: PCM16 samples with their rate and channel count. The
 * transports (WebSocket clients, phone bridges, LiveKit tracks), the voice pipeline (VAD, STT,
 * TTS) and the realtime models all meet here, so conversions live in this one module.
 *
 * @since 0.1.0
 * @packageDocumentation
 */

/**
 * PCM16 audio: interleaved signed 16-bit samples with their rate and channel count. Every
 * transport, voice engine and realtime model in baton passes audio as frames; the functions of
 * this module convert and measure them.
 *
 * @since 0.1.0
 * @category models
 */
export interface AudioFrame {
  /** Interleaved signed 16-bit samples. */
  readonly data: Int16Array
  readonly sampleRate: number
  readonly channels: number
}

/**
 * A frame of PCM16 samples; throws a `RangeError` when the rate or channel count is not a positive
 * integer or the samples do not divide into the channels.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (data: Int16Array, sampleRate: number, channels = 1): AudioFrame => {
  if (!Number.isInteger(sampleRate) || sampleRate <= 0) throw new RangeError(`sample rate must be a positive integer, got ${sampleRate}`)
  if (!Number.isInteger(channels) || channels <= 0) throw new RangeError(`channels must be a positive integer, got ${channels}`)
  if (data.length % channels !== 0) throw new RangeError(`${data.length} samples do not divide into ${channels} channels`)
  return { data, sampleRate, channels }
}

/**
 * Samples per channel.
 *
 * @since 0.1.0
 * @category getters
 */
export const samplesPerChannel = (frame: AudioFrame): number => frame.data.length / frame.channels

/**
 * How long the frame plays, in milliseconds.
 *
 * @since 0.1.0
 * @category getters
 */
export const durationMs = (frame: AudioFrame): number => (samplesPerChannel(frame) / frame.sampleRate) * 1000

/**
 * Little-endian PCM16 bytes (what WebSockets, WAV files and realtime models carry) as a frame.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromPcm16 = (bytes: Uint8Array, sampleRate: number, channels = 1): AudioFrame => {
  if (bytes.byteLength % 2 !== 0) throw new RangeError(`PCM16 needs an even number of bytes, got ${bytes.byteLength}`)
  const aligned = bytes.byteOffset % 2 === 0 ? bytes : bytes.slice()
  return make(new Int16Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 2), sampleRate, channels)
}

/**
 * The frame's samples as little-endian PCM16 bytes (a view, not a copy).
 *
 * @since 0.1.0
 * @category utils
 */
export const toPcm16 = (frame: AudioFrame): Uint8Array =>
  new Uint8Array(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength)

/**
 * Samples scaled to [-1, 1) (what WebAudio, ONNX VADs and some STT engines take).
 *
 * @since 0.1.0
 * @category utils
 */
export const toFloat32 = (frame: AudioFrame): Float32Array => {
  const out = new Float32Array(frame.data.length)
  for (let i = 0; i < out.length; i++) out[i] = frame.data[i]! / 32768
  return out
}

/**
 * A frame from samples in [-1, 1] (clipped), as WebAudio and ONNX models give them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromFloat32 = (samples: Float32Array, sampleRate: number, channels = 1): AudioFrame => {
  const out = new Int16Array(samples.length)
  for (let i = 0; i < out.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]!))
    out[i] = s < 0 ? Math.round(s * 32768) : Math.round(s * 32767)
  }
  return make(out, sampleRate, channels)
}

/**
 * `ms` of silence at `sampleRate`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const silence = (ms: number, sampleRate: number, channels = 1): AudioFrame =>
  make(new Int16Array(Math.round((ms / 1000) * sampleRate) * channels), sampleRate, channels)

/**
 * Frames of one format joined into one.
 *
 * @since 0.1.0
 * @category combinators
 */
export const concat = (frames: ReadonlyArray<AudioFrame>): AudioFrame => {
  if (frames.length === 0) throw new RangeError("concat needs at least one frame")
  const { sampleRate, channels } = frames[0]!
  for (const f of frames) {
    if (f.sampleRate !== sampleRate || f.channels !== channels) {
      throw new RangeError(`cannot join ${f.sampleRate} Hz × ${f.channels} with ${sampleRate} Hz × ${channels}`)
    }
  }
  const out = new Int16Array(frames.reduce((n, f) => n + f.data.length, 0))
  let at = 0
  for (const f of frames) {
    out.set(f.data, at)
    at += f.data.length
  }
  return make(out, sampleRate, channels)
}

/**
 * Cuts a frame into frames of `ms` each (transports send 10 or 20 ms); the last may be shorter.
 *
 * @since 0.1.0
 * @category combinators
 */
export const split = (frame: AudioFrame, ms: number): ReadonlyArray<AudioFrame> => {
  const step = Math.max(1, Math.round((ms / 1000) * frame.sampleRate)) * frame.channels
  const out: Array<AudioFrame> = []
  for (let at = 0; at < frame.data.length; at += step) {
    out.push(make(frame.data.subarray(at, Math.min(at + step, frame.data.length)), frame.sampleRate, frame.channels))
  }
  return out
}

/**
 * Root mean square level in [0, 1]: a cheap "is anything there" for tests and meters.
 *
 * @since 0.1.0
 * @category utils
 */
export const rms = (frame: AudioFrame): number => {
  if (frame.data.length === 0) return 0
  let sum = 0
  for (let i = 0; i < frame.data.length; i++) sum += (frame.data[i]! / 32768) ** 2
  return Math.sqrt(sum / frame.data.length)
}
