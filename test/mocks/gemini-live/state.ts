/**
 * Per-connection state of the Gemini Live mock (setup, history, the current model turn, pending tool
 * calls, resumption) and its `ProtocolSession` face: framing, close-frame errors, noise, actions.
 */
import { Predicate } from "effect"
import type { MockConnection, ProtocolSession } from "../shared/connection.ts"
import type { MalformedKind, RecordedFrame } from "../shared/rules.ts"
import { protoDuration } from "../shared/timing.ts"
import { dispatch } from "./handlers.ts"
import { GeminiInput } from "./input.ts"
import { type HistoryEntry, type ResumptionStore, type SetupInfo } from "./setup.ts"
import { type TurnHost, TurnRunner, type WireCall } from "./turn.ts"
import type {
  CloseSpec,
  FunctionResponse,
  GeminiAction,
  GeminiClientMessage,
  GeminiLiveMockOptions,
  GeminiScriptContext,
  GeminiScriptTrigger,
  GeminiTurnPlan
} from "./types.ts"

export type GeminiConnection = MockConnection<GeminiClientMessage, CloseSpec, GeminiAction>

export interface GeminiServerContext {
  readonly options: GeminiLiveMockOptions
  readonly nextPlan: (ctx: GeminiScriptContext) => GeminiTurnPlan | null | Promise<GeminiTurnPlan | null>
  readonly store: ResumptionStore
}

const CLIENT_KEYS = ["setup", "clientContent", "realtimeInput", "toolResponse"]
const REALTIME_KEYS = ["audio", "video", "text", "activityStart", "activityEnd", "audioStreamEnd", "mediaChunks"]
const SERVER_CONTENT_ORDER = ["interrupted", "modelTurn", "outputTranscription", "inputTranscription", "generationComplete", "turnComplete"]
const SERVER_KEYS = ["setupComplete", "serverContent", "toolCall", "toolCallCancellation", "goAway", "sessionResumptionUpdate", "usageMetadata"]

interface PendingCall {
  readonly id: string | undefined
  readonly name: string
  readonly blocking: boolean
}

export class GeminiState implements ProtocolSession<GeminiClientMessage, CloseSpec, GeminiAction> {
  readonly conn: GeminiConnection
  readonly ctx: GeminiServerContext
  setup: SetupInfo | undefined
  history: Array<HistoryEntry> = []
  modelTurns = 0
  turnCount = 0
  resumed = false
  generating: TurnRunner | undefined
  awaitingTools = false
  readonly pending = new Map<string, PendingCall>()
  readonly unmatchedResponses: Array<FunctionResponse> = []
  /** Index of the last client message consumed (for transparent resumption). */
  consumed = -1
  readonly input: GeminiInput

  constructor(conn: GeminiConnection, ctx: GeminiServerContext) {
    this.conn = conn
    this.ctx = ctx
    this.input = new GeminiInput(this)
  }

  emit(message: object): boolean {
    return this.conn.send(message)
  }

  /** Protocol errors are close frames. */
  fail(close: CloseSpec): void {
    this.conn.close(close.code, close.reason ?? "")
  }

  // --- turns -----------------------------------------------------------------------------------

  private host(setup: SetupInfo): TurnHost {
    const o = this.ctx.options
    return {
      emit: (m) => this.emit(m),
      isOpen: () => this.conn.isOpen,
      pause: (ms) => this.conn.pause(ms),
      close: (code, reason, abrupt) => (abrupt ? this.conn.terminate() : this.conn.close(code ?? 1011, reason ?? "")),
      setup,
      firstAudioMs: o.firstAudioMs ?? 0,
      deltaIntervalMs: o.deltaIntervalMs ?? 0,
      turnCompleteDelayMs: o.turnCompleteDelayMs ?? 0,
      multiPart: o.multiPart ?? setup.family31,
      onToolCalls: (calls) => this.registerCalls(calls),
      onModelContent: (content) => void this.history.push({ content }),
      onTurnComplete: () => {
        this.modelTurns++
        if (setup.resumption !== undefined) this.resumptionUpdate(this.pending.size === 0)
      },
      usage: (chars, audioMs) => this.usage(chars, audioMs)
    }
  }

  private registerCalls(calls: ReadonlyArray<WireCall>): boolean {
    const setup = this.setup!
    let blocking = false
    for (const c of calls) {
      const b = setup.tools.find((t) => t.name === c.name)?.behavior !== "NON_BLOCKING"
      blocking ||= b
      this.pending.set(c.id ?? `name:${c.name}`, { id: c.id, name: c.name, blocking: b })
    }
    this.history.push({ content: { role: "model", parts: calls.map((c) => ({ functionCall: c })) } })
    if (blocking) this.awaitingTools = true
    if (setup.resumption !== undefined) this.resumptionUpdate(false)
    return blocking
  }

  usage(outputChars: number, outputAudioMs: number): Record<string, unknown> {
    const setup = this.setup
    const promptText = Math.ceil(
      ((setup?.systemInstruction.length ?? 0) +
        this.history.reduce((n, h) => n + JSON.stringify(h.content.parts).length, 0)) / 4
    )
    const audio = setup?.responseModalities[0] === "AUDIO"
    const response = audio ? Math.ceil(outputAudioMs / 40) : Math.ceil(outputChars / 4)
    return {
      promptTokenCount: promptText,
      responseTokenCount: response,
      totalTokenCount: promptText + response,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: promptText }],
      responseTokensDetails: [{ modality: audio ? "AUDIO" : "TEXT", tokenCount: response }]
    }
  }

  lastUserText(): string | undefined {
    for (let i = this.history.length - 1; i >= 0; i--) {
      const h = this.history[i]!
      if (h.content.role === "model") continue
      if (h.transcript !== undefined) return h.transcript
      const text = h.content.parts.map((p) => p.text ?? "").join("")
      if (text.length > 0) return text
    }
    return undefined
  }

  /** Starts a model turn (queued behind a running one). */
  startTurn(trigger: GeminiScriptTrigger, functionResponses: ReadonlyArray<FunctionResponse> = [], plan?: GeminiTurnPlan): void {
    const setup = this.setup
    if (setup === undefined || !this.conn.isOpen) return
    const running = this.generating
    if (running !== undefined) {
      void running.done.then(() => this.startTurn(trigger, functionResponses, plan))
      return
    }
    const runner = new TurnRunner(this.host(setup))
    this.generating = runner
    const ctx: GeminiScriptContext = {
      trigger,
      connection: this.conn.index,
      turnNumber: this.turnCount++,
      model: setup.model,
      setup: setup.raw,
      systemInstruction: setup.systemInstruction,
      tools: setup.tools,
      responseModalities: setup.responseModalities,
      history: this.history.map((h) => h.content),
      lastUserText: this.lastUserText(),
      functionResponses,
      resumed: this.resumed
    }
    void (async () => {
      try {
        await runner.run(plan ?? (await this.ctx.nextPlan(ctx)))
      } finally {
        if (this.generating === runner) this.generating = undefined
      }
    })().catch((error) => this.conn.guard(() => {
      throw error
    }))
  }

  /** A barge-in: `interrupted`, cancellation of pending calls, `turnComplete`. False if idle. */
  interrupt(force = false): boolean {
    const busy = this.generating !== undefined || this.awaitingTools || this.pending.size > 0
    if (!busy && !force) return false
    this.generating?.cancel()
    this.generating = undefined
    this.emit({ serverContent: { interrupted: true } })
    this.cancelCalls(undefined)
    this.emit({ serverContent: { turnComplete: true } })
    return true
  }

  cancelCalls(ids: ReadonlyArray<string> | undefined): void {
    const targets = ids ?? [...this.pending.values()].flatMap((p) => (p.id === undefined ? [] : [p.id]))
    for (const [key, p] of this.pending) if (ids === undefined || (p.id !== undefined && ids.includes(p.id))) this.pending.delete(key)
    if (![...this.pending.values()].some((p) => p.blocking)) this.awaitingTools = false
    if (targets.length > 0) this.emit({ toolCallCancellation: { ids: targets } })
  }

  resumptionUpdate(resumable: boolean): void {
    const setup = this.setup
    if (setup === undefined) return
    const handle = resumable
      ? this.ctx.store.save({ model: setup.model, history: [...this.history], modelTurns: this.modelTurns })
      : ""
    this.emit({
      sessionResumptionUpdate: {
        newHandle: handle,
        resumable,
        ...(setup.resumption?.transparent ? { lastConsumedClientMessageIndex: String(this.consumed) } : {})
      }
    })
  }

  goAway(timeLeftMs: number, closeAfterMs: number | null, code: number, reason: string): void {
    this.emit({ goAway: { timeLeft: protoDuration(timeLeftMs) } })
    if (closeAfterMs !== null) this.conn.later(closeAfterMs, () => this.conn.close(code, reason))
  }

  // --- ProtocolSession -------------------------------------------------------------------------

  parse(text: string) {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return { ok: false as const, reason: "Invalid JSON payload received." }
    }
    if (!Predicate.isObject(json)) return { ok: false as const, reason: "Invalid message: expected a JSON object." }
    const keys = Object.keys(json)
    const known = keys.filter((k) => CLIENT_KEYS.includes(k) || (k === "config" && this.ctx.options.acceptConfigAlias))
    if (keys.length !== 1 || known.length !== 1) {
      return {
        ok: false as const,
        reason: `Invalid message: exactly one of setup, clientContent, realtimeInput, toolResponse is required (got ${keys.join(", ") || "none"}).`
      }
    }
    let type = known[0] === "config" ? "setup" : known[0]!
    if (type === "realtimeInput") {
      const sub = Object.keys(Predicate.isObject(json.realtimeInput) ? json.realtimeInput : {}).find((k) => REALTIME_KEYS.includes(k))
      type = sub === undefined ? type : `realtimeInput.${sub}`
    }
    const message = known[0] === "config" ? { setup: json.config } : json
    return { ok: true as const, event: message as GeminiClientMessage, type }
  }

  onInvalid(_frame: RecordedFrame, reason: string): void {
    this.fail({ code: 1007, reason })
  }

  onOpen(): void {
    const key = this.ctx.options.apiKey
    if (key === undefined) return
    const q = this.conn.info.url.searchParams
    const auth = this.conn.info.headers.authorization
    const presented = q.get("key") ?? q.get("access_token") ?? (typeof auth === "string" ? auth.replace(/^Bearer /, "") : undefined)
    if (presented !== key) this.fail({ code: 1007, reason: "API key not valid. Please pass a valid API key." })
  }

  handle(event: GeminiClientMessage, type: string): void {
    this.consumed++
    dispatch(this, event, type)
  }

  reject(_event: GeminiClientMessage, _type: string, payload: CloseSpec): void {
    this.fail(payload)
  }

  perform(action: GeminiAction): void {
    switch (action.type) {
      case "respond":
        return this.startTurn("push", [], action.plan)
      case "toolCall":
        return this.startTurn("push", [], { toolCalls: action.calls })
      case "cancelToolCalls":
        return this.cancelCalls(action.ids)
      case "interrupt":
        return void this.interrupt(true)
      case "userSpeaks":
        return this.input.userSpeaks(action.durationMs ?? 800, action.transcript)
      case "goAway": {
        const left = action.timeLeftMs ?? 1000
        return this.goAway(left, action.closeAfterMs === undefined ? left : action.closeAfterMs, action.code ?? 1000, action.reason ?? "")
      }
      case "resumptionUpdate":
        return this.resumptionUpdate(action.resumable ?? (this.generating === undefined && this.pending.size === 0))
      case "usage":
        return void this.emit({ usageMetadata: this.usage(0, 0) })
      case "send":
        return void this.emit(action.message)
      case "raw":
        return void this.conn.sendRaw(action.data, action.binary ?? false)
      case "noise":
        return this.conn.sendNoise(action.kind)
      case "close":
        return this.conn.close(action.code ?? 1000, action.reason ?? "")
      case "terminate":
        return this.conn.terminate()
    }
  }

  onClose(): void {
    this.generating?.cancel()
  }

  serverType(message: object): string | undefined {
    if (!Predicate.isObject(message)) return undefined
    const key = SERVER_KEYS.find((k) => k in message) ?? Object.keys(message)[0]
    if (key !== "serverContent") return key
    const sc = Predicate.isObject(message.serverContent) ? message.serverContent : {}
    const sub = SERVER_CONTENT_ORDER.find((k) => k in sc)
    return sub === undefined ? key : `serverContent.${sub}`
  }

  prepareOutgoing(message: object): object {
    return message
  }

  noiseFrame(kind: "unknown" | MalformedKind) {
    const binary = this.ctx.options.frameEncoding === "binary"
    switch (kind) {
      case "unknown":
        return { binary, data: JSON.stringify({ mockUnknownMessage: { note: "a message type the client does not know" } }) }
      case "invalid-json":
        return { binary, data: "{\"serverContent\":{\"modelTurn\":" }
      case "not-object":
        return { binary, data: "\"hello\"" }
      case "missing-type":
        return { binary, data: "{}" }
      case "binary-garbage":
        return { binary: true, data: new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0x00, 0xff]) }
    }
  }
}
