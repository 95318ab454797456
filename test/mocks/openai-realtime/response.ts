/**
 * Plays one response plan as the GA event sequence of docs/protocols.md 1.4 B/C:
 * `response.created`, per item `response.output_item.added` + `conversation.item.added`, content part
 * events, audio/transcript/text or function-argument deltas, the `.done` events, `response.done`
 * with usage. Cancellation (client or turn_detected) flushes the open `.done` events and ends with
 * `response.done` status `cancelled`.
 */
import { type AudioEncoding, chunkAudio, concatBytes, durationMs, synthesize, toBase64 } from "../shared/audio.ts"
import { makeId } from "../shared/ids.ts"
import { type Conversation, type Entry, itemText } from "./conversation.ts"
import type { AudioFormat, FunctionCallOutput, MessageOutput, RealtimeItem, ResponsePlan } from "./types.ts"

export interface ResponseParams {
  readonly conversation: "auto" | "none"
  readonly outputModalities: ReadonlyArray<"audio" | "text">
  readonly format: AudioFormat
  readonly encoding: AudioEncoding
  readonly voice: unknown
  readonly maxOutputTokens: number | "inf"
  readonly metadata: Readonly<Record<string, string>> | null
  readonly inputItems: ReadonlyArray<RealtimeItem>
  readonly inputAudioMs: number
  readonly instructions: string
}

export interface ResponseHost {
  readonly emit: (event: object) => boolean
  readonly isOpen: () => boolean
  readonly pause: (ms: number) => Promise<void>
  readonly close: (code: number | undefined, reason: string | undefined, abrupt: boolean) => void
  readonly conversation: Conversation
  readonly markAssistantAudio: () => void
  readonly firstAudioMs: number
  readonly deltaIntervalMs: number
  readonly rateLimits: "none" | "afterCreated" | "afterDone"
  readonly conversationItemAddedFirst: boolean
  readonly conversationItemDoneFirst: boolean
}

/** Splits text into word-sized deltas that concatenate back to the input. */
export const textChunks = (text: string | ReadonlyArray<string>): Array<string> =>
  typeof text === "string" ? (text.match(/\s*\S+\s*/g) ?? (text.length > 0 ? [text] : [])) : [...text]

const splitEven = (s: string, n: number): Array<string> => {
  const count = Math.max(1, Math.min(n, s.length))
  const size = Math.ceil(s.length / count)
  const out: Array<string> = []
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size))
  return out.length > 0 ? out : [""]
}

const tokens = (chars: number) => Math.ceil(chars / 4)

export class ResponseRunner {
  readonly id = makeId("resp")
  cancelled: "client_cancelled" | "turn_detected" | undefined
  private readonly host: ResponseHost
  private readonly params: ResponseParams
  private plan: ResponsePlan = {}
  private events = 0
  private firstDelta = true
  private outputTextChars = 0
  private outputAudioMs = 0
  private readonly finished: Promise<void>
  private resolveFinished!: () => void

  constructor(host: ResponseHost, params: ResponseParams) {
    this.host = host
    this.params = params
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve))
  }

  get done(): Promise<void> {
    return this.finished
  }

  get alive(): boolean {
    return this.host.isOpen()
  }

  /** Ends a runner that will never run (its plan was an error). */
  abandon(): void {
    this.resolveFinished()
  }

  cancel(reason: "client_cancelled" | "turn_detected"): void {
    this.cancelled ??= reason
  }

  private base(): Record<string, unknown> {
    const p = this.params
    return {
      object: "realtime.response",
      id: this.id,
      conversation_id: p.conversation === "auto" ? this.host.conversation.id : null,
      output_modalities: p.outputModalities,
      max_output_tokens: p.maxOutputTokens,
      audio: { output: { format: p.format, voice: p.voice } },
      metadata: p.metadata
    }
  }

  private emit(event: object): void {
    if (!this.alive) return
    this.host.emit(event)
    this.events++
    const close = this.plan.closeAfter
    if (close !== undefined && this.events === close.events) {
      this.host.close(close.code, close.reason, close.abrupt === true)
    }
  }

  /** Waits before a delta: `firstAudioMs` before the first one, `deltaIntervalMs` between the others. */
  private async gap(): Promise<void> {
    const ms = this.firstDelta
      ? this.plan.firstAudioMs ?? this.host.firstAudioMs
      : this.plan.deltaIntervalMs ?? this.host.deltaIntervalMs
    this.firstDelta = false
    await this.host.pause(ms)
  }

  private get stopped(): boolean {
    return this.cancelled !== undefined || !this.alive
  }

  async run(plan: ResponsePlan): Promise<void> {
    this.plan = plan
    try {
      await this.play()
    } finally {
      this.resolveFinished()
    }
  }

  private async play(): Promise<void> {
    this.emit({
      type: "response.created",
      response: { ...this.base(), status: "in_progress", status_details: null, output: [], usage: null }
    })
    this.rateLimits("afterCreated")
    const outputs = this.plan.output ?? []
    const items: Array<RealtimeItem> = []
    for (let k = 0; k < outputs.length && !this.stopped; k++) {
      const out = outputs[k]!
      const last = k === outputs.length - 1
      items.push(out.type === "message" ? await this.message(k, out, last) : await this.functionCall(k, out, last))
    }
    if (!this.alive) return
    const status = this.cancelled ? "cancelled" : this.plan.status ?? "completed"
    const statusDetails = this.cancelled
      ? { type: "cancelled", reason: this.cancelled }
      : status === "incomplete"
      ? { type: "incomplete", reason: this.plan.reason ?? "max_output_tokens" }
      : status === "failed"
      ? {
        type: "failed",
        error: { type: this.plan.failure?.type ?? "invalid_request_error", code: this.plan.failure?.code ?? "server_error" }
      }
      : null
    this.emit({
      type: "response.done",
      response: { ...this.base(), status, status_details: statusDetails, output: items, usage: this.usage() }
    })
    this.rateLimits("afterDone")
  }

  private rateLimits(at: "afterCreated" | "afterDone"): void {
    if (this.host.rateLimits !== at) return
    const reserved = tokens(this.params.instructions.length) + 100
    this.emit({
      type: "rate_limits.updated",
      rate_limits: [
        { name: "requests", limit: 5000, remaining: 4999, reset_seconds: 0.012 },
        { name: "tokens", limit: 40000, remaining: 40000 - reserved, reset_seconds: 0.2 }
      ]
    })
  }

  private usage(): Record<string, unknown> {
    const inputText = tokens(this.params.instructions.length + this.params.inputItems.reduce((n, i) => n + itemText(i).length, 0))
    const inputAudio = Math.ceil(this.params.inputAudioMs / 100)
    const outputText = tokens(this.outputTextChars)
    const outputAudio = Math.ceil(this.outputAudioMs / 50)
    return {
      total_tokens: inputText + inputAudio + outputText + outputAudio,
      input_tokens: inputText + inputAudio,
      output_tokens: outputText + outputAudio,
      input_token_details: {
        text_tokens: inputText,
        audio_tokens: inputAudio,
        image_tokens: 0,
        cached_tokens: 0,
        cached_tokens_details: { text_tokens: 0, audio_tokens: 0, image_tokens: 0 }
      },
      output_token_details: { text_tokens: outputText, audio_tokens: outputAudio },
      ...this.plan.usage
    }
  }

  private added(k: number, entry: Entry): void {
    const outputAdded = () =>
      this.emit({ type: "response.output_item.added", response_id: this.id, output_index: k, item: entry.item })
    const conversationAdded = () => {
      if (this.params.conversation !== "auto") return
      const r = this.host.conversation.insert(entry, undefined)
      if (r.ok) this.emit({ type: "conversation.item.added", previous_item_id: r.previousItemId, item: entry.item })
    }
    if (this.host.conversationItemAddedFirst) {
      conversationAdded()
      outputAdded()
    } else {
      outputAdded()
      conversationAdded()
    }
  }

  private finish(k: number, entry: Entry, item: RealtimeItem): void {
    entry.item = item
    const outputDone = () => this.emit({ type: "response.output_item.done", response_id: this.id, output_index: k, item })
    const conversationDone = () => {
      if (this.params.conversation !== "auto" || this.host.conversation.get(item.id) === undefined) return
      this.emit({ type: "conversation.item.done", previous_item_id: this.host.conversation.previousIdOf(item.id), item })
    }
    if (this.host.conversationItemDoneFirst) {
      conversationDone()
      outputDone()
    } else {
      outputDone()
      conversationDone()
    }
  }

  private itemStatus(last: boolean): "completed" | "incomplete" {
    return this.cancelled !== undefined || (last && this.plan.status === "incomplete") ? "incomplete" : "completed"
  }

  private async message(k: number, out: MessageOutput, last: boolean): Promise<RealtimeItem> {
    const audio = this.params.outputModalities.includes("audio")
    const id = makeId("item")
    const entry: Entry = {
      item: { id, object: "realtime.item", type: "message", status: "in_progress", role: "assistant", content: [] },
      audio: undefined,
      encoding: audio ? this.params.encoding : undefined
    }
    this.added(k, entry)
    const ids = { response_id: this.id, item_id: id, output_index: k, content_index: 0 }
    this.emit({ type: "response.content_part.added", ...ids, part: audio ? { type: "audio", transcript: "" } : { type: "text", text: "" } })
    const texts = textChunks(out.text)
    let text = ""
    if (audio) {
      // The part exists (and can be truncated) from its first delta on, as on the real server,
      // where a cancel and a truncate sent mid-stream apply to what was generated so far.
      entry.item = { ...entry.item, content: [{ type: "output_audio", transcript: "" }] }
      entry.audio = new Uint8Array(0)
      const fullText = texts.join("")
      const ms = out.audioMs ?? Math.max(200, fullText.length * 60)
      const chunks = chunkAudio(this.params.encoding, synthesize(this.params.encoding, ms), out.chunkMs ?? 100)
      const played: Array<Uint8Array> = []
      for (let i = 0; i < Math.max(chunks.length, texts.length); i++) {
        await this.gap()
        if (this.stopped) break
        const t = texts[i]
        if (t !== undefined) {
          this.emit({ type: "response.output_audio_transcript.delta", ...ids, delta: t })
          text += t
        }
        const c = chunks[i]
        if (c !== undefined) {
          this.emit({ type: "response.output_audio.delta", ...ids, delta: toBase64(c) })
          played.push(c)
          entry.audio = concatBytes([entry.audio ?? new Uint8Array(0), c])
          this.host.markAssistantAudio()
        }
      }
      this.outputAudioMs += durationMs(this.params.encoding, concatBytes(played).byteLength)
      this.emit({ type: "response.output_audio.done", ...ids })
      this.emit({ type: "response.output_audio_transcript.done", ...ids, transcript: text })
      this.emit({ type: "response.content_part.done", ...ids, part: { type: "audio", transcript: text } })
    } else {
      for (const t of texts) {
        await this.gap()
        if (this.stopped) break
        this.emit({ type: "response.output_text.delta", ...ids, delta: t })
        text += t
      }
      this.emit({ type: "response.output_text.done", ...ids, text })
      this.emit({ type: "response.content_part.done", ...ids, part: { type: "text", text } })
    }
    this.outputTextChars += text.length
    const content = audio
      ? [{ type: "output_audio", transcript: entry.truncated ? "" : text }]
      : [{ type: "output_text", text }]
    const item: RealtimeItem = { ...entry.item, status: this.itemStatus(last), content }
    this.finish(k, entry, item)
    return item
  }

  private async functionCall(k: number, out: FunctionCallOutput, last: boolean): Promise<RealtimeItem> {
    const id = makeId("item")
    const callId = out.callId ?? makeId("call")
    const args = typeof out.arguments === "string" ? out.arguments : JSON.stringify(out.arguments)
    const entry: Entry = {
      item: { id, object: "realtime.item", type: "function_call", status: "in_progress", name: out.name, call_id: callId, arguments: "" },
      audio: undefined,
      encoding: undefined
    }
    this.added(k, entry)
    const ids = { response_id: this.id, item_id: id, output_index: k, call_id: callId }
    let acc = ""
    for (const delta of splitEven(args, out.argumentChunks ?? 3)) {
      await this.gap()
      if (this.stopped) break
      this.emit({ type: "response.function_call_arguments.delta", ...ids, delta })
      acc += delta
    }
    this.emit({ type: "response.function_call_arguments.done", ...ids, name: out.name, arguments: acc })
    this.outputTextChars += acc.length
    const item: RealtimeItem = { ...entry.item, status: this.itemStatus(last), arguments: acc }
    this.finish(k, entry, item)
    return item
  }
}
