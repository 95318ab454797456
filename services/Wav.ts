/**
 * PCM16 WAV files in and out: the offline TTS (flite) writes them, tests and examples read a
 * user's utterance from one and write the agent's reply to one. The reader walks the RIFF chunks
 * (a `LIST` or `fact` chunk may sit before `data`) and says exactly what is wrong with a file it
 * cannot use, so a bad file fails with its reason instead of playing noise.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect } from "effect"
import * as Fs from "node:fs/promises"
import * as AudioFrame from "./AudioFrame.ts"
import { VoiceError } from "./VoiceError.ts"

const invalid = (description: string) => new VoiceError({ source: "audio", reason: "InvalidAudio", description })

const ascii = (view: DataView, at: number): string =>
  String.fromCharCode(view.getUint8(at), view.getUint8(at + 1), view.getUint8(at + 2), view.getUint8(at + 3))

/** The format chunk's fields this module uses. */
interface Format {
  readonly audioFormat: number
  readonly channels: number
  readonly sampleRate: number
  readonly bitsPerSample: number
}

/** PCM (1) or WAVE_FORMAT_EXTENSIBLE (0xFFFE) whose sub-format is PCM. */
const readFormat = (view: DataView, at: number, size: number): Format | string => {
  if (size < 16) return `its fmt chunk is ${size} bytes, needs at least 16`
  let audioFormat = view.getUint16(at, true)
  if (audioFormat === 0xfffe && size >= 26) audioFormat = view.getUint16(at + 24, true)
  return {
    audioFormat,
    channels: view.getUint16(at + 2, true),
    sampleRate: view.getUint32(at + 4, true),
    bitsPerSample: view.getUint16(at + 14, true)
  }
}

/**
 * The samples of a PCM16 WAV file as one frame. A `data` size past the end of the file (what a
 * writer that streamed to a pipe leaves, 0 or 0xFFFFFFFF) is read to the end of the file.
 *
 * @since 0.1.0
 * @category utils
 */
export const decode = (bytes: Uint8Array): Effect.Effect<AudioFrame.AudioFrame, VoiceError> =>
  Effect.suspend(() => {
    const result = decodeSync(bytes)
    return typeof result === "string" ? Effect.fail(invalid(`not a usable WAV file: ${result}`)) : Effect.succeed(result)
  })

/**
 * {@link decode} without Effect: a frame, or why the bytes are not one.
 *
 * @since 0.1.0
 * @category utils
 */
export const decodeSync = (bytes: Uint8Array): AudioFrame.AudioFrame | string => {
  if (bytes.byteLength < 12) return `${bytes.byteLength} bytes is shorter than a RIFF header`
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (ascii(view, 0) !== "RIFF" || ascii(view, 8) !== "WAVE") return "it does not start with RIFF....WAVE"
  let format: Format | undefined
  let at = 12
  while (at + 8 <= bytes.byteLength) {
    const id = ascii(view, at)
    const size = view.getUint32(at + 4, true)
    const body = at + 8
    if (id === "fmt ") {
      const read = readFormat(view, body, Math.min(size, bytes.byteLength - body))
      if (typeof read === "string") return read
      format = read
    } else if (id === "data") {
      if (format === undefined) return "its data chunk comes before any fmt chunk"
      if (format.audioFormat !== 1) return `its encoding is format ${format.audioFormat}, only PCM (1) is read`
      if (format.bitsPerSample !== 16) return `it has ${format.bitsPerSample}-bit samples, only 16-bit are read`
      if (format.channels < 1) return "it declares 0 channels"
      if (format.sampleRate < 1) return "it declares a sample rate of 0"
      const end = size === 0 || body + size > bytes.byteLength ? bytes.byteLength : body + size
      const blockAlign = 2 * format.channels
      const usable = end - body - ((end - body) % blockAlign)
      return AudioFrame.fromPcm16(bytes.slice(body, body + usable), format.sampleRate, format.channels)
    }
    at = body + size + (size % 2)
  }
  return format === undefined ? "it has no fmt chunk" : "it has no data chunk"
}

/**
 * The size of the header `header` writes.
 *
 * @since 0.1.0
 * @category constants
 */
export const HEADER_BYTES = 44

/**
 * The 44-byte header of a PCM16 WAV file holding `dataBytes` bytes of samples. A recorder that
 * streams to disk writes it first with 0 and again with the final size when it closes.
 *
 * @since 0.1.0
 * @category utils
 */
export const header = (sampleRate: number, channels: number, dataBytes: number): Uint8Array => {
  const out = new Uint8Array(HEADER_BYTES)
  const view = new DataView(out.buffer)
  const text = (at: number, s: string) => {
    for (let i = 0; i < 4; i++) view.setUint8(at + i, s.charCodeAt(i))
  }
  text(0, "RIFF")
  view.setUint32(4, 36 + dataBytes, true)
  text(8, "WAVE")
  text(12, "fmt ")
  view.setUint32(16, 16, true)
  view.setUint16(20, 1, true) // PCM
  view.setUint16(22, channels, true)
  view.setUint32(24, sampleRate, true)
  view.setUint32(28, sampleRate * channels * 2, true) // byte rate
  view.setUint16(32, channels * 2, true) // block align
  view.setUint16(34, 16, true) // bits per sample
  text(36, "data")
  view.setUint32(40, dataBytes, true)
  return out
}

/**
 * A PCM16 WAV file (44-byte header) holding `frame`.
 *
 * @since 0.1.0
 * @category utils
 */
export const encode = (frame: AudioFrame.AudioFrame): Uint8Array => {
  const pcm = AudioFrame.toPcm16(frame)
  const out = new Uint8Array(HEADER_BYTES + pcm.byteLength)
  out.set(header(frame.sampleRate, frame.channels, pcm.byteLength))
  out.set(pcm, HEADER_BYTES)
  return out
}

/**
 * Reads and decodes a WAV file.
 *
 * @since 0.1.0
 * @category utils
 */
export const readFile = (path: string): Effect.Effect<AudioFrame.AudioFrame, VoiceError> =>
  Effect.tryPromise({
    try: () => Fs.readFile(path),
    catch: (e) => invalid(`cannot read ${path}: ${(e as Error).message}`)
  }).pipe(
    Effect.flatMap((bytes) => decode(bytes)),
    Effect.mapError((e) => e.description.includes(path) ? e : invalid(`${path}: ${e.description}`))
  )

/**
 * Encodes `frame` and writes it to `path`.
 *
 * @since 0.1.0
 * @category utils
 */
export const writeFile = (path: string, frame: AudioFrame.AudioFrame): Effect.Effect<void, VoiceError> =>
  Effect.tryPromise({
    try: () => Fs.writeFile(path, encode(frame)),
    catch: (e) => invalid(`cannot write ${path}: ${(e as Error).message}`)
  })
