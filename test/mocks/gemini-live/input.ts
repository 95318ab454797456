/**
 * Realtime audio input of the Gemini Live mock: automatic activity detection (an energy VAD standing
 * in for the server's), explicit `activityStart`/`activityEnd` when it is disabled, `audioStreamEnd`
 * flushing, barge-in per `activityHandling`, input transcription, and the user turn that follows
 * (docs/protocols.md 2.3, 2.5).
 */
import { EnergyVad } from "../shared/vad.ts"
import type { GeminiState } from "./state.ts"

export class GeminiInput {
  private readonly state: GeminiState
  private vad: EnergyVad | undefined
  private cursorMs = 0
  private utteranceStartMs = 0
  private activityOpen = false
  private activityStartMs = 0
  private lastRate = 16000

  constructor(state: GeminiState) {
    this.state = state
  }

  audio(bytes: Uint8Array, rate: number): void {
    const setup = this.state.setup!
    const start = this.cursorMs
    this.lastRate = rate
    this.cursorMs += bytes.byteLength / ((rate / 1000) * 2)
    if (!setup.aad) return
    this.vad ??= new EnergyVad({ thresholdRms: 0.02, silenceMs: setup.silenceMs })
    for (const ev of this.vad.feed({ kind: "pcm16", rate }, bytes, start)) {
      if (ev.type === "speech_started") {
        this.utteranceStartMs = ev.atMs
        this.speechStarted()
      } else this.turnEnded(ev.atMs - this.utteranceStartMs, undefined)
    }
  }

  activityStart(): void {
    this.activityOpen = true
    this.activityStartMs = this.cursorMs
    this.speechStarted()
  }

  activityEnd(): void {
    if (!this.activityOpen) return
    this.activityOpen = false
    this.turnEnded(this.cursorMs - this.activityStartMs, undefined)
  }

  /** Flushes an open utterance (sent by clients after a pause with automatic detection on). */
  audioStreamEnd(): void {
    const stop = this.vad?.flush()
    if (stop !== undefined) this.turnEnded(stop.atMs - this.utteranceStartMs, undefined)
  }

  /** A scripted user turn: barge-in, transcription, then a model turn. */
  userSpeaks(durationMs: number, transcript: string | undefined): void {
    this.vad?.reset()
    this.speechStarted()
    this.cursorMs += durationMs
    this.turnEnded(durationMs, transcript)
  }

  private speechStarted(): void {
    if (this.state.setup?.interrupts) this.state.interrupt()
  }

  private turnEnded(audioMs: number, hint: string | undefined): void {
    const s = this.state
    const ms = Math.max(0, Math.round(audioMs))
    const text = s.ctx.options.transcribe?.({ connection: s.conn.index, audioMs: ms, hint }) ?? hint ?? `[audio ${ms}ms]`
    if (s.setup?.inputTranscription) s.emit({ serverContent: { inputTranscription: { text } } })
    // The audio itself is not kept; the history entry carries what was said.
    s.history.push({
      content: { role: "user", parts: [{ inlineData: { mimeType: `audio/pcm;rate=${this.lastRate}`, data: "" } }] },
      transcript: text
    })
    s.startTurn("realtimeInput")
  }
}
