/**
 * G.711 µ-law, the audio of phone lines (8 kHz, one byte a sample): what Twilio Media Streams
 * and SIP trunks carry. Encoding follows the ITU-T reference (bias 0x84, clip at 32635).
 *
 * @since 0.1.0
 * @packageDocumentation
 */

const BIAS = 0x84
const CLIP = 32635

const decodeTable = (() => {
  const table = new Int16Array(256)
  for (let i = 0; i < 256; i++) {
    const u = ~i & 0xff
    const exponent = (u >> 4) & 0x07
    const mantissa = u & 0x0f
    const magnitude = (((mantissa << 3) + BIAS) << exponent) - BIAS
    table[i] = u & 0x80 ? -magnitude : magnitude
  }
  return table
})()

/**
 * One µ-law byte as a PCM16 sample.
 *
 * @since 0.1.0
 * @category utils
 */
export const decodeSample = (byte: number): number => decodeTable[byte & 0xff]!

/**
 * One PCM16 sample as a µ-law byte (G.711).
 *
 * @since 0.1.0
 * @category utils
 */
export const encodeSample = (sample: number): number => {
  let s = Math.max(-32768, Math.min(32767, Math.round(sample)))
  const sign = s < 0 ? 0x80 : 0
  if (s < 0) s = -s
  if (s > CLIP) s = CLIP
  s += BIAS
  let exponent = 7
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--
  const mantissa = (s >> (exponent + 3)) & 0x0f
  return ~(sign | (exponent << 4) | mantissa) & 0xff
}

/**
 * µ-law bytes to PCM16 samples.
 *
 * @since 0.1.0
 * @category utils
 */
export const decode = (bytes: Uint8Array): Int16Array => {
  const out = new Int16Array(bytes.length)
  for (let i = 0; i < bytes.length; i++) out[i] = decodeTable[bytes[i]!]!
  return out
}

/**
 * PCM16 samples to µ-law bytes.
 *
 * @since 0.1.0
 * @category utils
 */
export const encode = (samples: Int16Array): Uint8Array => {
  const out = new Uint8Array(samples.length)
  for (let i = 0; i < samples.length; i++) out[i] = encodeSample(samples[i]!)
  return out
}
