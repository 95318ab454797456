/**
 * Cartesia's TTS contexts on one socket of the mock: the messages it sends (typed, so a test can
 * check them against the official SDK's wire types) and one context's state: its audio so far,
 * how much was sent, the flushes still to answer, the word timestamps still to send (when asked
 * with `add_timestamps`), and whether an input with `continue: false` ended it.
 */

export interface ChunkMessage {
  readonly type: "chunk"
  readonly context_id: string
  readonly data: string
  readonly done: false
  readonly status_code: 206
  readonly step_time: number
}

export interface FlushDoneMessage {
  readonly type: "flush_done"
  readonly context_id: string
  readonly done: false
  readonly flush_done: true
  readonly flush_id: number
  readonly status_code: 206
}

export interface DoneMessage {
  readonly type: "done"
  readonly context_id: string
  readonly done: true
  readonly status_code: 206
}

export interface ErrorMessage {
  readonly type: "error"
  readonly context_id: string
  readonly done: true
  readonly status_code: number
  readonly title: string
  readonly message: string
  readonly error_code: string
  readonly doc_url: string
  readonly request_id: string
}

/** Word timing of a context's audio (seconds from its start), sent when a request asks `add_timestamps`. */
export interface TimestampsMessage {
  readonly type: "timestamps"
  readonly context_id: string
  readonly done: false
  readonly status_code: 206
  readonly word_timestamps: { readonly words: Array<string>; readonly start: Array<number>; readonly end: Array<number> }
}

export type ServerMessage = ChunkMessage | FlushDoneMessage | DoneMessage | ErrorMessage | TimestampsMessage

export interface ErrorFault {
  readonly status: number
  readonly message: string
  readonly title?: string
  readonly errorCode?: string
}

/** An error frame in the current API shape. */
export const errorFrame = (contextId: string, fault: ErrorFault, requestId: string): ErrorMessage => ({
  type: "error",
  context_id: contextId,
  done: true,
  status_code: fault.status,
  title: fault.title ?? (fault.status >= 500 ? "Internal server error" : "Invalid request"),
  message: fault.message,
  error_code: fault.errorCode ?? (fault.status >= 500 ? "internal_error" : "invalid_request"),
  doc_url: "https://docs.cartesia.ai/api-reference/tts/websocket",
  request_id: requestId
})

/** What a context's later inputs must repeat (Cartesia: all fields but transcript, continue, duration). */
const fixedFields = (message: Record<string, unknown>) =>
  JSON.stringify(["model_id", "voice", "output_format", "language"].map((k) => message[k]))

export class Context {
  readonly id: string
  readonly rate: number
  private readonly fields: string
  audio: Buffer = Buffer.alloc(0)
  /** Bytes of `audio` sent, chunks sent. */
  at = 0
  chunks = 0
  ended = false
  pumping = false
  afterCancel = 0
  /** performance.now() at the context's first input. */
  readonly startedAt = performance.now()
  private flushId = 0
  private flushes: Array<{ readonly at: number; readonly id: number }> = []
  /** Whether the context asked for word timestamps (`add_timestamps`), and those not sent yet: each
   * input's words, from the byte of the audio where they start. */
  private readonly timestamps: boolean
  private words: Array<{ readonly at: number; readonly words: Array<string>; readonly start: Array<number>; readonly end: Array<number> }> = []

  constructor(id: string, first: Record<string, unknown>, rate: number) {
    this.id = id
    this.rate = rate
    this.fields = fixedFields(first)
    this.timestamps = first["add_timestamps"] === true
  }

  /** Whether a later input keeps the fields Cartesia requires to stay the same. */
  matches(message: Record<string, unknown>): boolean {
    return fixedFields(message) === this.fields
  }

  /** One more input: its audio, a flush to answer after it, the end of the context. */
  add(audio: Buffer, flush: boolean, more: boolean, transcript = "") {
    const found = [...transcript.matchAll(/\S+/g)]
    if (this.timestamps && found.length > 0) {
      // The input's audio spreads evenly over its characters (the mock speaks a tone per character).
      const from = this.audio.length / 2 / this.rate
      const perChar = audio.length / 2 / this.rate / transcript.length
      this.words.push({
        at: this.audio.length,
        words: found.map((m) => m[0]),
        start: found.map((m) => from + m.index * perChar),
        end: found.map((m) => from + (m.index + m[0].length) * perChar)
      })
    }
    this.audio = Buffer.concat([this.audio, audio])
    if (flush) this.flushes.push({ at: this.audio.length, id: ++this.flushId })
    if (!more) this.ended = true
  }

  /** The word timestamps of the inputs whose audio starts before byte `end`. */
  timestamped(end: number): Array<TimestampsMessage> {
    const due = this.words.filter((w) => w.at < end)
    this.words = this.words.filter((w) => w.at >= end)
    return due.map((w) => ({
      type: "timestamps",
      context_id: this.id,
      done: false,
      status_code: 206,
      word_timestamps: { words: w.words, start: w.start, end: w.end }
    }))
  }

  /** The `flush_done`s whose audio has all been sent. */
  flushed(): Array<FlushDoneMessage> {
    const due = this.flushes.filter((f) => f.at <= this.at)
    this.flushes = this.flushes.filter((f) => f.at > this.at)
    return due.map((f) => ({ type: "flush_done", context_id: this.id, done: false, flush_done: true, flush_id: f.id, status_code: 206 }))
  }
}
