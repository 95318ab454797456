/**
 * The audio of one Deepgram stream gathered into messages: PCM16 frames go out `chunkMs` at a
 * time (a message is a socket write, the largest cost of a call's audio path), except the first
 * 60 ms of a pause after loud audio, sent frame by frame so that Deepgram's endpointing hears the
 * pause at once. Internal to DeepgramStt.ts.
 */
import type * as VoiceSocket from "../shared/VoiceSocket.ts"

/** What is gathered for the next message, and how long the audio has been quiet. */
export interface Gathering {
  /** Bytes in one message (`chunkMs` of 16-bit mono audio). */
  readonly chunkBytes: number
  /** The next message's audio: a fresh buffer each message (the socket may keep a sent one
   * queued), its first `bytes` pushed so far. */
  buffer: Uint8Array
  bytes: number
  /** Quiet audio since the last loud frame (ms): the first of a pause goes out frame by frame. */
  quietMs: number
}

/** A frame quieter than this (RMS, 1% of full scale) may be a pause after words. */
const QUIET_RMS = 328
/** A pause's first audio is sent at once: Deepgram's endpointing (25 ms by default) hears it
 * without waiting for a whole message, so its final for the words before it comes sooner. */
const PAUSE_SEND_MS = 60

const isQuiet = (samples: Int16Array) => {
  let sum = 0
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!
  return samples.length === 0 || sum < QUIET_RMS * QUIET_RMS * samples.length
}

/** Nothing gathered yet; the stream starts as if after a pause's first audio (nothing to hurry). */
export const make = (chunkMs: number, sampleRate: number): Gathering => {
  const chunkBytes = Math.max(2, Math.round((chunkMs * sampleRate) / 1000) * 2)
  return { chunkBytes, buffer: new Uint8Array(chunkBytes), bytes: 0, quietMs: PAUSE_SEND_MS }
}

/** Sends the audio gathered so far as one message, and starts the next in a fresh buffer;
 * false when the socket is not open. */
export const flush = (gathering: Gathering, socket: VoiceSocket.VoiceSocket): boolean => {
  if (gathering.bytes === 0) return true
  const message = gathering.buffer.subarray(0, gathering.bytes)
  gathering.buffer = new Uint8Array(gathering.buffer.byteLength)
  gathering.bytes = 0
  return socket.send(message)
}

/** Adds a frame, and sends a message when one is full or the frame is a pause's first audio;
 * false when the socket is not open. */
export const add = (gathering: Gathering, socket: VoiceSocket.VoiceSocket, samples: Int16Array, sampleRate: number): boolean => {
  const bytes = new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength)
  if (gathering.bytes + bytes.byteLength > gathering.buffer.byteLength) {
    // a frame larger than a message: what is gathered goes first, then the frame as it is (copied)
    if (!flush(gathering, socket)) return false
    if (bytes.byteLength >= gathering.chunkBytes) return socket.send(bytes.slice())
  }
  gathering.buffer.set(bytes, gathering.bytes)
  gathering.bytes += bytes.byteLength
  gathering.quietMs = isQuiet(samples) ? gathering.quietMs + (samples.length / sampleRate) * 1000 : 0
  const pause = gathering.quietMs > 0 && gathering.quietMs <= PAUSE_SEND_MS
  if (gathering.bytes < gathering.chunkBytes && !pause) return socket.isOpen()
  return flush(gathering, socket)
}
