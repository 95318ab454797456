/**
 * Per-connection server state of the OpenAI Realtime mock (session config, conversation, input
 * buffer, active responses) and its `ProtocolSession` face: framing, parse errors, noise, actions.
 */
import { Predicate } from "effect"
import type { MockConnection, ProtocolSession } from "../shared/connection.ts"
import { makeId } from "../shared/ids.ts"
import type { MalformedKind, RecordedFrame } from "../shared/rules.ts"
import { Conversation } from "./conversation.ts"
import { Errors } from "./errors.ts"
import { handleClientEvent } from "./handlers.ts"
import { InputAudio } from "./input.ts"
import { startResponse } from "./respond.ts"
import type { ResponseHost, ResponseRunner } from "./response.ts"
import { defaultSession } from "./session.ts"
import type {
  ClientEvent,
  ErrorSpec,
  OpenAIAction,
  OpenAIRealtimeMockOptions,
  ResponsePlan,
  ScriptContext,
  SessionConfig
} from "./types.ts"

export type OpenAIConnection = MockConnection<ClientEvent, ErrorSpec, OpenAIAction>

/** What all connections of one server share. */
export interface ServerContext {
  readonly options: OpenAIRealtimeMockOptions
  readonly nextPlan: (ctx: ScriptContext) => ResponsePlan | Promise<ResponsePlan>
}

/** The API key a client presented: Bearer header, Azure `api-key`, or the browser subprotocol. */
export const presentedKey = (conn: Pick<OpenAIConnection, "info">): string | undefined => {
  const auth = conn.info.headers.authorization
  if (typeof auth === "string" && auth.startsWith("Bearer ")) return auth.slice(7)
  const azure = conn.info.headers["api-key"]
  if (typeof azure === "string") return azure
  return conn.info.protocols.find((p) => p.startsWith("openai-insecure-api-key."))?.slice(24)
}

export class RealtimeState implements ProtocolSession<ClientEvent, ErrorSpec, OpenAIAction> {
  readonly conn: OpenAIConnection
  readonly ctx: ServerContext
  session: SessionConfig
  readonly conversation = new Conversation()
  readonly input: InputAudio
  readonly responses = new Map<string, ResponseRunner>()
  defaultResponse: ResponseRunner | undefined
  assistantAudioPresent = false
  responseCount = 0
  private afterEvent: Array<{ readonly type: string; readonly run: () => void }> = []
  readonly host: ResponseHost

  constructor(conn: OpenAIConnection, ctx: ServerContext) {
    this.conn = conn
    this.ctx = ctx
    const o = ctx.options
    const model = conn.info.url.searchParams.get("model") ?? conn.info.url.searchParams.get("deployment") ?? o.model ??
      "gpt-realtime"
    const lifetimeMs = o.sessionExpiresAfterMs ?? 60 * 60 * 1000
    this.session = defaultSession(
      model,
      o.defaultInstructions ?? "You are a helpful, witty, and friendly AI. (mock server default instructions)",
      Math.floor((Date.now() + lifetimeMs) / 1000)
    )
    this.input = new InputAudio(this)
    this.host = {
      emit: (event) => this.emit(event),
      isOpen: () => conn.isOpen,
      pause: (ms) => conn.pause(ms),
      close: (code, reason, abrupt) => (abrupt ? conn.terminate() : conn.close(code ?? 1011, reason ?? "")),
      conversation: this.conversation,
      markAssistantAudio: () => {
        this.assistantAudioPresent = true
      },
      firstAudioMs: o.firstAudioMs ?? 0,
      deltaIntervalMs: o.deltaIntervalMs ?? 0,
      rateLimits: o.rateLimits ?? "afterDone",
      conversationItemAddedFirst: o.order?.conversationItemAddedFirst ?? false,
      conversationItemDoneFirst: o.order?.conversationItemDoneFirst ?? false
    }
  }

  emit(event: object): boolean {
    const sent = this.conn.send(event)
    const type = (event as { readonly type?: unknown }).type
    const due = this.afterEvent.filter((w) => w.type === type)
    if (due.length > 0) {
      this.afterEvent = this.afterEvent.filter((w) => w.type !== type)
      for (const w of due) w.run()
    }
    return sent
  }

  /** Runs `run` right after the next server event of this `type` is sent. */
  after(type: string, run: () => void): void {
    this.afterEvent.push({ type, run })
  }

  /** An `error` event; `eventId` is the client `event_id` it answers (null if none). */
  error(spec: ErrorSpec, eventId: string | null): void {
    this.emit({
      type: "error",
      error: {
        type: spec.type ?? "invalid_request_error",
        code: spec.code,
        message: spec.message,
        param: spec.param ?? null,
        event_id: eventId
      }
    })
  }

  // --- ProtocolSession -------------------------------------------------------------------------

  parse(text: string, binary: boolean) {
    if (binary) return { ok: false as const, reason: "binary" }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return { ok: false as const, reason: "json" }
    }
    if (!Predicate.isObject(json)) return { ok: false as const, reason: "not-object" }
    if (!Predicate.isString(json.type)) return { ok: false as const, reason: "missing-type" }
    return { ok: true as const, event: json as unknown as ClientEvent, type: json.type }
  }

  onInvalid(frame: RecordedFrame, reason: string): void {
    const eventId = Predicate.isObject(frame.json) && Predicate.isString(frame.json.event_id) ? frame.json.event_id : null
    const spec = reason === "binary"
      ? Errors.binaryFrame()
      : reason === "json"
      ? Errors.invalidJson()
      : reason === "not-object"
      ? Errors.notObject()
      : Errors.missingType()
    this.error(spec, eventId)
  }

  onOpen(): void {
    const o = this.ctx.options
    if (o.apiKey !== undefined && o.authFailure === "event" && presentedKey(this.conn) !== o.apiKey) {
      this.error(Errors.invalidApiKey(), null)
      return this.conn.close(1008, "invalid_api_key")
    }
    this.emit({ type: "session.created", session: this.session })
    if (o.sendConversationCreated) {
      this.emit({ type: "conversation.created", conversation: { id: this.conversation.id, object: "realtime.conversation" } })
    }
    if (o.sessionExpiresAfterMs !== undefined) this.conn.later(o.sessionExpiresAfterMs, () => this.perform({ type: "expire" }))
  }

  handle(event: ClientEvent): void {
    handleClientEvent(this, event)
  }

  reject(event: ClientEvent, _type: string, payload: ErrorSpec): void {
    this.error(payload, Predicate.isString(event.event_id) ? event.event_id : null)
  }

  perform(action: OpenAIAction): void {
    switch (action.type) {
      case "respond":
        return startResponse(this, "push", { conversation: action.conversation ?? "auto" }, null, action.plan)
      case "userSpeaks":
        return this.input.userSpeaks(action.durationMs ?? 800, action.transcript)
      case "error":
        return this.error(action.error, action.eventId ?? null)
      case "send":
        return void this.emit(action.event)
      case "raw":
        return void this.conn.sendRaw(action.data, action.binary ?? false)
      case "noise":
        return this.conn.sendNoise(action.kind)
      case "expire":
        this.error(Errors.sessionExpired(), null)
        return this.conn.close(1000, "")
      case "close":
        return this.conn.close(action.code ?? 1000, action.reason ?? "")
      case "terminate":
        return this.conn.terminate()
    }
  }

  onClose(): void {
    for (const r of this.responses.values()) r.cancel("client_cancelled")
  }

  serverType(message: object): string | undefined {
    return Predicate.isObject(message) && Predicate.isString(message.type) ? message.type : undefined
  }

  prepareOutgoing(message: object): object {
    if (!Predicate.isObject(message) || message.event_id !== undefined) return message
    const { type, ...rest } = message
    return type === undefined ? { event_id: makeId("event"), ...rest } : { type, event_id: makeId("event"), ...rest }
  }

  noiseFrame(kind: "unknown" | MalformedKind) {
    switch (kind) {
      case "unknown":
        return {
          binary: false,
          data: JSON.stringify({ type: "mock.unknown_event", event_id: makeId("event"), note: "an event type the client does not know" })
        }
      case "invalid-json":
        return { binary: false, data: `{"type":"response.output_text.delta","event_id":"${makeId("event")}","delta":` }
      case "not-object":
        return { binary: false, data: "[1,2,3]" }
      case "missing-type":
        return { binary: false, data: JSON.stringify({ event_id: makeId("event") }) }
      case "binary-garbage":
        return { binary: true, data: new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0x00, 0xff]) }
    }
  }
}
