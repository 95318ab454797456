/**
 * What the Deepgram mock hears on one `/v1/listen` connection, as Deepgram documents it: audio in,
 * server messages out, all timed by the audio's own clock (the position in the stream), never by
 * the wall clock.
 *
 * - Words of the scripted transcript are revealed as speech audio arrives (`msPerWord` of speech
 *   each, speech counted in 10 ms windows), as interim `Results` (`is_final: false`) when `interim_results=true`. One script is one
 *   utterance: the next starts after a `Finalize` (the client's end of the utterance), or, for a
 *   client that never sends one, with speech after a second of silence once every word of the
 *   script was said and finalized (Deepgram keeps transcribing a stream without `Finalize`).
 * - Endpointing (`endpointing`, default 10 ms; `false` disables it): after that much silence
 *   following speech, the words revealed so far are finalized (`is_final` and `speech_final`
 *   true); the transcript of such a final may be empty. Long speech without a pause is
 *   finalized every `segmentMs` (`is_final` alone), as Deepgram does once a segment is accurate.
 * - `UtteranceEnd` (only with `utterance_end_ms` and `interim_results=true`): after that gap
 *   following the last word, once per run of words.
 * - `SpeechStarted` only with `vad_events=true`.
 * - `Finalize` flushes: the unfinalized words of the current utterance come back with
 *   `from_finalize: true` only if there was speech since the last final; otherwise nothing, since
 *   Deepgram does not guarantee an answer without a significant amount of audio.
 * - `CloseStream` finalizes what is unfinalized, then `Metadata`.
 *
 * The message types below are what the mock sends; a type-level test checks them against the
 * official SDK's wire types.
 */
import { type AudioEncoding, decodeToLinear } from "../shared/audio.ts"
import { EnergyVad } from "../shared/vad.ts"

export interface Word {
  readonly word: string
  readonly start: number
  readonly end: number
  readonly confidence: number
  readonly punctuated_word: string
}

export interface ResultsMessage {
  readonly type: "Results"
  readonly channel_index: Array<number>
  readonly duration: number
  readonly start: number
  readonly is_final: boolean
  readonly speech_final: boolean
  readonly from_finalize?: boolean
  readonly channel: { readonly alternatives: Array<{ readonly transcript: string; readonly confidence: number; readonly words: Array<Word> }> }
  readonly metadata: {
    readonly request_id: string
    readonly model_info: { readonly name: string; readonly version: string; readonly arch: string }
    readonly model_uuid: string
  }
}

export interface SpeechStartedMessage {
  readonly type: "SpeechStarted"
  readonly channel: Array<number>
  readonly timestamp: number
}

export interface UtteranceEndMessage {
  readonly type: "UtteranceEnd"
  readonly channel: Array<number>
  readonly last_word_end: number
}

export interface MetadataMessage {
  readonly type: "Metadata"
  readonly transaction_key: string
  readonly request_id: string
  readonly sha256: string
  readonly created: string
  readonly duration: number
  readonly channels: number
}

export type ServerMessage = ResultsMessage | SpeechStartedMessage | UtteranceEndMessage | MetadataMessage

export interface ListenSettings {
  readonly scripts: ReadonlyArray<string>
  readonly msPerWord: number
  /** Continuous speech after which the words so far are finalized without a pause (`is_final`, not `speech_final`). */
  readonly segmentMs: number
  readonly requestId: string
}

/** Silence after a script said in full before speech is the next script's, without a Finalize. */
const NEXT_UTTERANCE_SILENCE_MS = 1000

/** RMS (fraction of full scale) above which audio counts as speech. */
const threshold = 0.01

const numberParam = (query: URLSearchParams, name: string, fallback: number | undefined) => {
  const value = query.get(name)
  if (value === null) return fallback
  if (value === "false") return undefined
  const n = Number(value)
  return Number.isFinite(n) && n >= 0 ? n : fallback
}

/** Milliseconds of speech in a chunk: its 10 ms windows above the threshold. Counted by window, not
 * by chunk, so that a client sending 100 ms chunks is heard speaking as long as one sending 20 ms
 * frames of the same audio (a whole chunk counted as speech revealed words early). */
const loudMs = (encoding: AudioEncoding, bytes: Uint8Array, sampleRate: number) => {
  const samples = decodeToLinear(encoding, bytes)
  const window = Math.max(1, Math.round(sampleRate / 100))
  let ms = 0
  for (let start = 0; start < samples.length; start += window) {
    const end = Math.min(samples.length, start + window)
    let sum = 0
    for (let i = start; i < end; i++) sum += samples[i]! * samples[i]!
    if (Math.sqrt(sum / (end - start)) / 32768 > threshold) ms += ((end - start) / sampleRate) * 1000
  }
  return ms
}

export class Listener {
  readonly sampleRate: number
  private readonly encoding: AudioEncoding
  private readonly interim: boolean
  private readonly vadEvents: boolean
  private readonly endpointing: number | undefined
  private readonly utteranceEndMs: number | undefined
  private readonly endpointVad: EnergyVad | undefined
  private readonly gapVad: EnergyVad | undefined
  /** Audio received, in ms of the stream. */
  positionMs = 0
  private script = 0
  private revealed = 0
  private finalized = 0
  /** Speech heard for the current script, and since the last final. */
  private scriptSpeechMs = 0
  private segmentSpeechMs = 0
  private segmentStartMs = 0
  private wordsSinceUtteranceEnd = false
  private lastWordEndMs = 0
  private speaking = false
  /** Where the last loud audio ended (ms of the stream). */
  private lastLoudMs = 0

  private readonly settings: ListenSettings

  constructor(query: URLSearchParams, settings: ListenSettings) {
    this.settings = settings
    this.sampleRate = Number(query.get("sample_rate") ?? 16000)
    this.encoding = { kind: "pcm16", rate: this.sampleRate }
    this.interim = query.get("interim_results") === "true"
    this.vadEvents = query.get("vad_events") === "true"
    this.endpointing = numberParam(query, "endpointing", 10)
    this.utteranceEndMs = this.interim ? numberParam(query, "utterance_end_ms", undefined) : undefined
    this.endpointVad = this.endpointing === undefined ? undefined : new EnergyVad({ thresholdRms: threshold, silenceMs: this.endpointing })
    this.gapVad = this.utteranceEndMs === undefined ? undefined : new EnergyVad({ thresholdRms: threshold, silenceMs: this.utteranceEndMs })
  }

  private get words(): ReadonlyArray<string> {
    const scripts = this.settings.scripts
    return scripts[Math.min(this.script, scripts.length - 1)]!.split(" ")
  }

  /** The messages one chunk of audio (PCM16 at `sampleRate`) brings. */
  audio(bytes: Uint8Array): Array<ServerMessage> {
    const out: Array<ServerMessage> = []
    const chunkMs = (bytes.byteLength / 2 / this.sampleRate) * 1000
    const at = this.positionMs
    this.positionMs += chunkMs
    const speechMs = loudMs(this.encoding, bytes, this.sampleRate)
    const speech = speechMs > 0
    // A new utterance without Finalize (agents-js's plugin sends none): the script was all said
    // and finalized, and a second of silence came before this speech.
    if (speech && this.scriptSpeechMs > 0 && this.finalized === this.words.length && at - this.lastLoudMs >= NEXT_UTTERANCE_SILENCE_MS) {
      this.script++
      this.finalized = this.revealed = this.scriptSpeechMs = 0
    }
    if (speech) this.lastLoudMs = this.positionMs
    if (speech) {
      if (!this.speaking && this.vadEvents) out.push({ type: "SpeechStarted", channel: [0], timestamp: at / 1000 })
      this.speaking = true
      this.scriptSpeechMs += speechMs
      this.segmentSpeechMs += speechMs
      const due = Math.min(this.words.length, Math.floor(this.scriptSpeechMs / this.settings.msPerWord))
      if (due > this.revealed) {
        this.revealed = due
        this.lastWordEndMs = this.positionMs
        this.wordsSinceUtteranceEnd = true
        if (this.interim) out.push(this.results(this.finalized, due, { is_final: false, speech_final: false }))
      }
      if (this.segmentSpeechMs >= this.settings.segmentMs && this.revealed > this.finalized) {
        out.push(this.finalize(this.revealed, { is_final: true, speech_final: false }))
      }
    }
    for (const event of this.endpointVad?.feed(this.encoding, bytes, at) ?? []) {
      if (event.type === "speech_stopped") {
        this.speaking = false
        out.push(this.finalize(this.revealed, { is_final: true, speech_final: true }))
      }
    }
    if (!speech && this.endpointVad === undefined) this.speaking = false
    for (const event of this.gapVad?.feed(this.encoding, bytes, at) ?? []) {
      if (event.type === "speech_stopped" && this.wordsSinceUtteranceEnd) {
        this.wordsSinceUtteranceEnd = false
        out.push({ type: "UtteranceEnd", channel: [0, 1], last_word_end: this.lastWordEndMs / 1000 })
      }
    }
    return out
  }

  /** The answer to `Finalize`, if there is one: the rest of the utterance, if speech came since the last final. */
  flush(): ResultsMessage | undefined {
    const answer = this.segmentSpeechMs === 0
      ? undefined
      : this.finalize(this.words.length, { is_final: true, speech_final: false, from_finalize: true })
    this.endpointVad?.reset()
    this.speaking = false
    // The client says the utterance ended: the next speech is the next script's.
    if (this.scriptSpeechMs > 0) this.script++
    this.finalized = this.revealed = this.scriptSpeechMs = 0
    return answer
  }

  /** What `CloseStream` sends: the last final (if any audio is unfinalized), then `Metadata`. */
  close(): Array<ServerMessage> {
    const last = this.segmentSpeechMs > 0 ? [this.finalize(this.words.length, { is_final: true, speech_final: true })] : []
    return [...last, {
      type: "Metadata",
      transaction_key: "deprecated",
      request_id: this.settings.requestId,
      sha256: "0".repeat(64),
      created: new Date(0).toISOString(),
      duration: this.positionMs / 1000,
      channels: 1
    }]
  }

  /** Finalizes the words from the last final up to `upTo`. */
  private finalize(upTo: number, flags: Pick<ResultsMessage, "is_final" | "speech_final" | "from_finalize">) {
    const message = this.results(this.finalized, upTo, flags)
    if (upTo > this.revealed) {
      this.lastWordEndMs = this.positionMs
      this.wordsSinceUtteranceEnd = true
    }
    this.finalized = this.revealed = upTo
    this.segmentStartMs = this.positionMs
    this.segmentSpeechMs = 0
    return message
  }

  private results(from: number, to: number, flags: Pick<ResultsMessage, "is_final" | "speech_final" | "from_finalize">): ResultsMessage {
    const words = this.words.slice(from, to)
    const start = this.segmentStartMs / 1000
    const step = Math.max(0.01, (this.positionMs - this.segmentStartMs) / 1000 / Math.max(1, words.length))
    return {
      type: "Results",
      channel_index: [0, 1],
      duration: (this.positionMs - this.segmentStartMs) / 1000,
      start,
      ...flags,
      channel: {
        alternatives: [{
          transcript: words.join(" "),
          confidence: 0.98,
          words: words.map((word, i) => ({
            word: word.toLowerCase().replace(/[^a-z0-9']/g, ""),
            start: start + i * step,
            end: start + (i + 0.9) * step,
            confidence: 0.98,
            punctuated_word: word
          }))
        }]
      },
      metadata: {
        request_id: this.settings.requestId,
        model_info: { name: "2-general-nova", version: "2024-01-01.0", arch: "nova-3" },
        model_uuid: "c0d1a568-ce81-4fea-97e7-bd45cb1fdf3c"
      }
    }
  }
}
