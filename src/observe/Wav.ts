/**
 * WAV (RIFF, PCM16) headers: written before a recording's samples and rewritten with the final
 * sizes when it closes; read back to check a recording or to replay one.
 */

export const HEADER_BYTES = 44

/** The 44-byte header of a PCM16 WAV file holding `dataBytes` bytes of samples. */
export const header = (sampleRate: number, channels: number, dataBytes: number): Uint8Array => {
  const bytes = new Uint8Array(HEADER_BYTES)
  const view = new DataView(bytes.buffer)
  const ascii = (offset: number, text: string) => {
    for (let i = 0; i < text.length; i++) bytes[offset + i] = text.charCodeAt(i)
  }
  ascii(0, "RIFF")
  view.setUint32(4, 36 + dataBytes, true)
  ascii(8, "WAVE")
  ascii(12, "fmt ")
  view.setUint32(16, 16, true) // fmt chunk size
  view.setUint16(20, 1, true) // PCM
  view.setUint16(22, channels, true)
  view.setUint32(24, sampleRate, true)
  view.setUint32(28, sampleRate * channels * 2, true) // byte rate
  view.setUint16(32, channels * 2, true) // block align
  view.setUint16(34, 16, true) // bits per sample
  ascii(36, "data")
  view.setUint32(40, dataBytes, true)
  return bytes
}

export interface Wav {
  readonly sampleRate: number
  readonly channels: number
  readonly samples: Int16Array
}

/** A PCM16 WAV file's format and samples; an error names what is wrong. */
export const parse = (bytes: Uint8Array): Wav | Error => {
  if (bytes.byteLength < HEADER_BYTES) return new Error(`a WAV file has at least ${HEADER_BYTES} bytes, got ${bytes.byteLength}`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const text = (offset: number) => String.fromCharCode(...bytes.subarray(offset, offset + 4))
  if (text(0) !== "RIFF" || text(8) !== "WAVE") return new Error("not a RIFF/WAVE file")
  let offset = 12
  let format: { sampleRate: number; channels: number } | undefined
  while (offset + 8 <= bytes.byteLength) {
    const id = text(offset)
    const size = view.getUint32(offset + 4, true)
    if (id === "fmt ") {
      if (view.getUint16(offset + 8, true) !== 1 || view.getUint16(offset + 22, true) !== 16) return new Error("not PCM16")
      format = { channels: view.getUint16(offset + 10, true), sampleRate: view.getUint32(offset + 12, true) }
    } else if (id === "data") {
      if (!format) return new Error("data chunk before fmt chunk")
      const end = Math.min(bytes.byteLength, offset + 8 + size)
      const data = new Uint8Array(bytes.subarray(offset + 8, end)) // a copy (a Buffer's slice is a view)
      return { ...format, samples: new Int16Array(data.buffer, 0, data.byteLength >> 1) }
    }
    offset += 8 + size + (size & 1)
  }
  return new Error("no data chunk")
}
