/**
 * Plays one model turn as Gemini Live server messages (docs/protocols.md 2.4, 2.5): optional thought part,
 * `serverContent.modelTurn` audio chunks (24 kHz PCM16) or text parts with `outputTranscription`
 * (separate messages, or one multi-part message in 3.1 style), an optional `toolCall`, then
 * `generationComplete` and, after the simulated playback, `turnComplete` with `usageMetadata`.
 * An interruption stops it silently; the state sends `interrupted` / `turnComplete` itself.
 */
import { chunkAudio, PCM16_24K, synthesize, toBase64 } from "../shared/audio.ts"
import { makeId } from "../shared/ids.ts"
import type { SetupInfo } from "./setup.ts"
import type { Content, GeminiTurnPlan } from "./types.ts"

export interface WireCall {
  readonly id?: string
  readonly name: string
  readonly args?: unknown
}

export interface TurnHost {
  readonly emit: (message: object) => boolean
  readonly isOpen: () => boolean
  readonly pause: (ms: number) => Promise<void>
  readonly close: (code: number | undefined, reason: string | undefined, abrupt: boolean) => void
  readonly setup: SetupInfo
  readonly firstAudioMs: number
  readonly deltaIntervalMs: number
  readonly turnCompleteDelayMs: number
  readonly multiPart: boolean
  /** Registers the calls as pending; returns true when at least one is blocking. */
  readonly onToolCalls: (calls: ReadonlyArray<WireCall>) => boolean
  readonly onModelContent: (content: Content) => void
  readonly onTurnComplete: () => void
  readonly usage: (outputChars: number, outputAudioMs: number) => Record<string, unknown>
}

/** Word-sized chunks that concatenate back to the input. */
export const textChunks = (text: string | ReadonlyArray<string>): Array<string> =>
  typeof text === "string" ? (text.match(/\s*\S+\s*/g) ?? (text.length > 0 ? [text] : [])) : [...text]

export class TurnRunner {
  cancelled = false
  private readonly host: TurnHost
  private plan: GeminiTurnPlan = {}
  private messages = 0
  private firstDelta = true
  private readonly finished: Promise<void>
  private resolveFinished!: () => void

  constructor(host: TurnHost) {
    this.host = host
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve))
  }

  get done(): Promise<void> {
    return this.finished
  }

  cancel(): void {
    this.cancelled = true
  }

  private get stopped(): boolean {
    return this.cancelled || !this.host.isOpen()
  }

  private emit(message: object): void {
    if (this.stopped) return
    this.host.emit(message)
    this.messages++
    const close = this.plan.closeAfter
    if (close !== undefined && this.messages === close.messages) this.host.close(close.code, close.reason, close.abrupt === true)
  }

  private async gap(): Promise<void> {
    const ms = this.firstDelta
      ? this.plan.firstAudioMs ?? this.host.firstAudioMs
      : this.plan.deltaIntervalMs ?? this.host.deltaIntervalMs
    this.firstDelta = false
    await this.host.pause(ms)
  }

  async run(plan: GeminiTurnPlan | null): Promise<void> {
    try {
      if (plan !== null) {
        this.plan = plan
        await this.play()
      }
    } finally {
      this.resolveFinished()
    }
  }

  private async play(): Promise<void> {
    const plan = this.plan
    const { setup } = this.host
    if (plan.thought !== undefined) {
      await this.gap()
      this.emit({ serverContent: { modelTurn: { parts: [{ text: plan.thought, thought: true }] } } })
    }
    const texts = plan.text === undefined ? [] : textChunks(plan.text)
    let spoken = ""
    let audioMs = 0
    if (setup.responseModalities[0] === "AUDIO") {
      const full = texts.join("")
      audioMs = plan.audioMs ?? (full.length > 0 ? Math.max(200, full.length * 60) : 0)
      const chunks = audioMs > 0 ? chunkAudio(PCM16_24K, synthesize(PCM16_24K, audioMs), plan.chunkMs ?? 100) : []
      const multi = plan.multiPart ?? this.host.multiPart
      for (let i = 0; i < Math.max(chunks.length, texts.length); i++) {
        await this.gap()
        if (this.stopped) return
        const c = chunks[i]
        const t = texts[i]
        const audioPart = c && { inlineData: { mimeType: "audio/pcm;rate=24000", data: toBase64(c) } }
        const transcript = t !== undefined && setup.outputTranscription ? { text: t } : undefined
        if (multi) {
          this.emit({
            serverContent: {
              ...(audioPart ? { modelTurn: { parts: [audioPart] } } : {}),
              ...(transcript ? { outputTranscription: transcript } : {})
            }
          })
        } else {
          if (audioPart) this.emit({ serverContent: { modelTurn: { parts: [audioPart] } } })
          if (transcript) this.emit({ serverContent: { outputTranscription: transcript } })
        }
        if (t !== undefined) spoken += t
      }
    } else {
      for (const t of texts) {
        await this.gap()
        if (this.stopped) return
        this.emit({ serverContent: { modelTurn: { parts: [{ text: t }] } } })
        spoken += t
      }
    }
    if (spoken.length > 0) this.host.onModelContent({ role: "model", parts: [{ text: spoken }] })
    if (plan.toolCalls !== undefined && plan.toolCalls.length > 0) {
      await this.gap()
      if (this.stopped) return
      const calls: Array<WireCall> = plan.toolCalls.map((c) => ({
        ...(c.id === null ? {} : { id: c.id ?? makeId("fc") }),
        name: c.name,
        ...(c.args === undefined ? {} : { args: c.args })
      }))
      this.emit({ toolCall: { functionCalls: calls } })
      const blocking = this.host.onToolCalls(calls)
      if (blocking) {
        if (plan.generationCompleteAfterToolCall) this.emit({ serverContent: { generationComplete: true } })
        return
      }
    }
    if (plan.generationComplete !== false) this.emit({ serverContent: { generationComplete: true } })
    const playback = plan.turnCompleteDelayMs ?? this.host.turnCompleteDelayMs
    if (playback > 0) await this.host.pause(playback)
    if (this.stopped) return
    const usage = plan.usage === false ? {} : { usageMetadata: { ...this.host.usage(spoken.length, audioMs), ...plan.usage } }
    this.emit({ serverContent: { turnComplete: true }, ...usage })
    this.host.onTurnComplete()
  }
}
