/**
 * The input audio buffer (`input_audio_buffer.append/commit/clear`), the server VAD stand-in
 * (speech_started / speech_stopped / committed, interruption, auto-response) and input transcription
 * (docs/protocols.md 1.3, 1.4 B and D).
 */
import { bytesPerMs, concatBytes, synthesize } from "../shared/audio.ts"
import { makeId } from "../shared/ids.ts"
import { EnergyVad } from "../shared/vad.ts"
import type { Entry } from "./conversation.ts"
import { Errors } from "./errors.ts"
import { startResponse } from "./respond.ts"
import { textChunks } from "./response.ts"
import { encodingOf, vadSilenceMs, vadThresholdRms } from "./session.ts"
import type { RealtimeState } from "./state.ts"
import type { TurnDetection } from "./types.ts"

export class InputAudio {
  private readonly state: RealtimeState
  private chunks: Array<Uint8Array> = []
  private bufferedBytes = 0
  /** Absolute position (ms) of all input audio appended during the session. */
  private cursorMs = 0
  private vad: EnergyVad | undefined
  /** The item id announced by `speech_started`, reused by `committed` and the user item. */
  private pendingItemId: string | undefined

  constructor(state: RealtimeState) {
    this.state = state
  }

  private get encoding() {
    return encodingOf(this.state.session.audio.input.format)
  }

  private get turnDetection(): TurnDetection | null {
    return this.state.session.audio.input.turn_detection
  }

  get bufferedMs(): number {
    return this.bufferedBytes / bytesPerMs(this.encoding)
  }

  private push(bytes: Uint8Array): number {
    const start = this.cursorMs
    this.chunks.push(bytes)
    this.bufferedBytes += bytes.byteLength
    this.cursorMs += bytes.byteLength / bytesPerMs(this.encoding)
    return start
  }

  append(bytes: Uint8Array): void {
    const start = this.push(bytes)
    const td = this.turnDetection
    if (td === null) return
    const settings = { thresholdRms: vadThresholdRms(td), silenceMs: vadSilenceMs(td) }
    this.vad ??= new EnergyVad(settings)
    this.vad.settings = settings
    for (const ev of this.vad.feed(this.encoding, bytes, start)) {
      if (ev.type === "speech_started") this.speechStarted(ev.atMs, td)
      else {
        this.speechStopped(Math.min(this.cursorMs, ev.atMs + settings.silenceMs))
        this.commitBuffer(undefined, td.create_response)
        if (td.create_response) startResponse(this.state, "server_vad", undefined, null)
      }
    }
  }

  private speechStarted(atMs: number, td: TurnDetection | null): void {
    this.pendingItemId = makeId("item")
    const prefix = td?.type === "server_vad" ? td.prefix_padding_ms ?? 300 : 300
    this.state.emit({
      type: "input_audio_buffer.speech_started",
      audio_start_ms: Math.max(0, Math.floor(atMs - prefix)),
      item_id: this.pendingItemId
    })
    const active = this.state.defaultResponse
    if (active !== undefined && (td?.interrupt_response ?? true)) active.cancel("turn_detected")
  }

  private speechStopped(atMs: number): void {
    this.pendingItemId ??= makeId("item")
    this.state.emit({ type: "input_audio_buffer.speech_stopped", audio_end_ms: Math.round(atMs), item_id: this.pendingItemId })
  }

  /** Explicit `input_audio_buffer.commit`: never starts a response by itself. */
  commit(eventId: string | null): void {
    const ms = this.bufferedMs
    if (ms < 100) return this.state.error(Errors.commitEmpty(ms), eventId)
    const stop = this.vad?.flush()
    if (stop !== undefined) this.speechStopped(this.cursorMs)
    this.commitBuffer(undefined, false)
  }

  clear(): void {
    this.reset()
    this.vad?.reset()
    this.state.emit({ type: "input_audio_buffer.cleared" })
  }

  private reset(): Uint8Array {
    const audio = concatBytes(this.chunks)
    this.chunks = []
    this.bufferedBytes = 0
    return audio
  }

  /** A scripted user turn: speech events, commit, transcription, auto-response per turn_detection. */
  userSpeaks(durationMs: number, transcript: string | undefined): void {
    const td = this.turnDetection
    this.vad?.reset()
    const start = this.push(synthesize(this.encoding, durationMs))
    this.speechStarted(start, td)
    this.speechStopped(this.cursorMs)
    this.commitBuffer(transcript, td?.create_response ?? false)
    if (td?.create_response) startResponse(this.state, "server_vad", undefined, null)
  }

  /** `answered`: an automatic response follows (the transcript may then come after its events). */
  private commitBuffer(hint: string | undefined, answered: boolean): void {
    const itemId = this.pendingItemId ?? makeId("item")
    this.pendingItemId = undefined
    const audio = this.reset()
    const entry: Entry = {
      item: {
        id: itemId,
        object: "realtime.item",
        type: "message",
        status: "completed",
        role: "user",
        content: [{ type: "input_audio", transcript: null }]
      },
      audio,
      encoding: this.encoding,
      spoken: hint
    }
    const inserted = this.state.conversation.insert(entry, undefined)
    const previous = inserted.ok ? inserted.previousItemId : null
    this.state.emit({ type: "input_audio_buffer.committed", previous_item_id: previous, item_id: itemId })
    this.state.emit({ type: "conversation.item.added", previous_item_id: previous, item: entry.item })
    this.state.emit({ type: "conversation.item.done", previous_item_id: previous, item: entry.item })
    this.transcribe(entry, hint, answered)
  }

  private transcribe(entry: Entry, hint: string | undefined, answered: boolean): void {
    if (this.state.session.audio.input.transcription === null) return
    const o = this.state.ctx.options
    const audioMs = Math.round(audioLength(entry, this.bufferedBytesPerMs()))
    const run = () => {
      const result = o.transcribe?.({ connection: this.state.conn.index, itemId: entry.item.id, audioMs, hint }) ??
        hint ?? `[audio ${audioMs}ms]`
      const ids = { item_id: entry.item.id, content_index: 0 }
      if (typeof result !== "string") {
        const e = result.error
        this.state.emit({
          type: "conversation.item.input_audio_transcription.failed",
          ...ids,
          error: { type: e.type ?? "transcription_error", code: e.code, message: e.message, param: e.param ?? null }
        })
        return
      }
      for (const delta of textChunks(result)) {
        this.state.emit({ type: "conversation.item.input_audio_transcription.delta", ...ids, delta })
      }
      this.state.emit({
        type: "conversation.item.input_audio_transcription.completed",
        ...ids,
        transcript: result,
        usage: { type: "duration", seconds: Math.ceil(audioMs / 1000) }
      })
      const stored = this.state.conversation.get(entry.item.id)
      if (stored !== undefined) stored.item = { ...stored.item, content: [{ type: "input_audio", transcript: result }] }
    }
    const delay = o.transcriptionDelayMs ?? 0
    const later = delay > 0 ? () => this.state.conn.later(delay, run) : run
    const order = o.transcriptOrder ?? "beforeResponse"
    if (answered && order !== "beforeResponse") {
      this.state.after(order === "afterResponseCreated" ? "response.created" : "response.done", later)
    } else later()
  }

  private bufferedBytesPerMs(): number {
    return bytesPerMs(this.encoding)
  }
}

const audioLength = (entry: Entry, perMs: number): number => (entry.audio?.byteLength ?? 0) / perMs
