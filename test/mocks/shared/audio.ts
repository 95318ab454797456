/**
 * Audio helpers: PCM16 little-endian mono synthesis, G.711 (mu-law / A-law) coding, durations, and
 * base64. OpenAI Realtime speaks PCM16 at 24 kHz or G.711 at 8 kHz; Gemini Live takes PCM16 at the
 * rate named in the MIME type (16 kHz native) and always answers PCM16 at 24 kHz (docs/protocols.md 1.2,
 * 2.3).
 */

export type AudioEncoding =
  | { readonly kind: "pcm16"; readonly rate: number }
  | { readonly kind: "pcmu" }
  | { readonly kind: "pcma" }

export const PCM16_24K: AudioEncoding = { kind: "pcm16", rate: 24000 }
export const PCM16_16K: AudioEncoding = { kind: "pcm16", rate: 16000 }

export const sampleRate = (enc: AudioEncoding): number => (enc.kind === "pcm16" ? enc.rate : 8000)
export const bytesPerSample = (enc: AudioEncoding): number => (enc.kind === "pcm16" ? 2 : 1)
export const bytesPerMs = (enc: AudioEncoding): number => (sampleRate(enc) / 1000) * bytesPerSample(enc)
export const durationMs = (enc: AudioEncoding, byteLength: number): number =>
  Math.floor(byteLength / bytesPerMs(enc))

export const toBase64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64")
export const fromBase64 = (b64: string): Uint8Array => new Uint8Array(Buffer.from(b64, "base64"))

// --- G.711 -----------------------------------------------------------------------------------

const ULAW_BIAS = 0x84
const ULAW_CLIP = 32635

export const linearToUlaw = (sample: number): number => {
  let s = sample
  const sign = s < 0 ? 0x80 : 0
  if (sign) s = -s
  if (s > ULAW_CLIP) s = ULAW_CLIP
  s += ULAW_BIAS
  let exponent = 7
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--
  const mantissa = (s >> (exponent + 3)) & 0x0f
  return ~(sign | (exponent << 4) | mantissa) & 0xff
}

export const ulawToLinear = (byte: number): number => {
  const u = ~byte & 0xff
  const exponent = (u >> 4) & 0x07
  const magnitude = ((((u & 0x0f) << 3) + ULAW_BIAS) << exponent) - ULAW_BIAS
  return u & 0x80 ? -magnitude : magnitude
}

const ALAW_SEGMENT_END = [0x1f, 0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff]

export const linearToAlaw = (sample: number): number => {
  let p = sample >> 3
  let mask: number
  if (p >= 0) mask = 0xd5
  else {
    mask = 0x55
    p = -p - 1
  }
  let seg = 0
  while (seg < 8 && p > ALAW_SEGMENT_END[seg]!) seg++
  if (seg >= 8) return 0x7f ^ mask
  const aval = (seg << 4) | (seg < 2 ? (p >> 1) & 0x0f : (p >> seg) & 0x0f)
  return aval ^ mask
}

export const alawToLinear = (byte: number): number => {
  const a = byte ^ 0x55
  let t = (a & 0x0f) << 4
  const seg = (a & 0x70) >> 4
  if (seg === 0) t += 8
  else {
    t += 0x108
    if (seg > 1) t <<= seg - 1
  }
  return a & 0x80 ? t : -t
}

// --- synthesis and decoding ------------------------------------------------------------------

export interface SynthOptions {
  /** `"tone"` (a 220 Hz sine, loud enough for the mocks' energy VAD) or `"silence"`. */
  readonly kind?: "tone" | "silence"
  readonly frequencyHz?: number
  /** Peak amplitude as a fraction of full scale (default 0.3). */
  readonly amplitude?: number
}

/** Synthesizes `ms` milliseconds of audio in the given encoding. */
export const synthesize = (enc: AudioEncoding, ms: number, options: SynthOptions = {}): Uint8Array => {
  const rate = sampleRate(enc)
  const samples = Math.round((rate * ms) / 1000)
  const silent = options.kind === "silence"
  const freq = options.frequencyHz ?? 220
  const amp = (options.amplitude ?? 0.3) * 32767
  const out = new Uint8Array(samples * bytesPerSample(enc))
  const view = new DataView(out.buffer)
  for (let i = 0; i < samples; i++) {
    const value = silent ? 0 : Math.round(amp * Math.sin((2 * Math.PI * freq * i) / rate))
    if (enc.kind === "pcm16") view.setInt16(i * 2, value, true)
    else out[i] = enc.kind === "pcmu" ? linearToUlaw(value) : linearToAlaw(value)
  }
  return out
}

/** Decodes audio bytes to linear 16-bit samples. */
export const decodeToLinear = (enc: AudioEncoding, bytes: Uint8Array): Int16Array => {
  if (enc.kind === "pcm16") {
    const n = Math.floor(bytes.byteLength / 2)
    const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2)
    const out = new Int16Array(n)
    for (let i = 0; i < n; i++) out[i] = view.getInt16(i * 2, true)
    return out
  }
  const out = new Int16Array(bytes.byteLength)
  for (let i = 0; i < bytes.byteLength; i++) {
    out[i] = enc.kind === "pcmu" ? ulawToLinear(bytes[i]!) : alawToLinear(bytes[i]!)
  }
  return out
}

/** Splits `bytes` into chunks of `chunkMs` milliseconds (the last one may be shorter). */
export const chunkAudio = (enc: AudioEncoding, bytes: Uint8Array, chunkMs: number): Array<Uint8Array> => {
  const size = Math.max(bytesPerSample(enc), Math.round(bytesPerMs(enc) * chunkMs))
  const out: Array<Uint8Array> = []
  for (let off = 0; off < bytes.byteLength; off += size) out.push(bytes.subarray(off, off + size))
  return out
}

export const concatBytes = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const total = parts.reduce((n, p) => n + p.byteLength, 0)
  const out = new Uint8Array(total)
  let off = 0
  for (const p of parts) {
    out.set(p, off)
    off += p.byteLength
  }
  return out
}
