/**
 * Wire format of the OpenAI Realtime GA API (`gpt-realtime`, docs/protocols.md section 1): lenient
 * schemas for the server events the client acts on, and builders for the client events.
 *
 * Pure module: no IO, no services.
 */
import { Option, Schema } from "effect"
import type { RealtimeTool, RealtimeToolChoice } from "../../services/RealtimeModel.ts"

// =============================================================================
// Server events
// =============================================================================

const opt = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

export const WireContentPart = Schema.Struct({
  type: Schema.String,
  text: opt(Schema.String),
  transcript: opt(Schema.String)
})

/** A conversation item as the server shows it. */
export const WireItem = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  role: opt(Schema.String),
  status: opt(Schema.String),
  content: opt(Schema.Array(WireContentPart)),
  call_id: opt(Schema.String),
  name: opt(Schema.String),
  arguments: opt(Schema.String),
  output: opt(Schema.String)
})
export type WireItem = typeof WireItem.Type

const WireUsage = Schema.Struct({
  input_tokens: opt(Schema.Number),
  output_tokens: opt(Schema.Number)
})

const WireErrorDetail = Schema.Struct({
  type: opt(Schema.String),
  code: opt(Schema.String),
  message: opt(Schema.String),
  param: opt(Schema.String),
  event_id: opt(Schema.String)
})

const WireSession = Schema.Struct({
  id: opt(Schema.String),
  instructions: opt(Schema.String),
  tools: opt(Schema.Array(Schema.Struct({ name: opt(Schema.String) }))),
  tool_choice: opt(Schema.Unknown),
  expires_at: opt(Schema.Number)
})
export type WireSession = typeof WireSession.Type

const event = <T extends string, F extends Schema.Struct.Fields>(type: T, fields: F) =>
  Schema.Struct({ type: Schema.Literal(type), ...fields })

const response = { response_id: Schema.String, item_id: Schema.String }

export const ServerEvent = Schema.Union([
  event("session.created", { session: WireSession }),
  event("session.updated", { session: WireSession }),
  event("error", { error: WireErrorDetail }),
  event("conversation.item.added", { previous_item_id: opt(Schema.String), item: WireItem }),
  event("conversation.item.created", { previous_item_id: opt(Schema.String), item: WireItem }),
  event("conversation.item.done", { previous_item_id: opt(Schema.String), item: WireItem }),
  event("conversation.item.deleted", { item_id: Schema.String }),
  event("conversation.item.truncated", { item_id: Schema.String, audio_end_ms: opt(Schema.Number) }),
  event("conversation.item.input_audio_transcription.delta", { item_id: Schema.String, delta: opt(Schema.String) }),
  event("conversation.item.input_audio_transcription.completed", {
    item_id: Schema.String,
    transcript: opt(Schema.String)
  }),
  event("conversation.item.input_audio_transcription.failed", { item_id: Schema.String, error: opt(WireErrorDetail) }),
  event("input_audio_buffer.speech_started", { audio_start_ms: opt(Schema.Number) }),
  event("input_audio_buffer.speech_stopped", { audio_end_ms: opt(Schema.Number) }),
  event("response.created", { response: Schema.Struct({ id: Schema.String }) }),
  event("response.output_text.delta", { ...response, delta: Schema.String }),
  event("response.output_audio.delta", { ...response, delta: Schema.String }),
  event("response.output_audio_transcript.delta", { ...response, delta: Schema.String }),
  event("response.output_item.done", { response_id: Schema.String, item: WireItem }),
  event("response.done", {
    response: Schema.Struct({
      id: Schema.String,
      status: opt(Schema.String),
      status_details: opt(Schema.Struct({
        type: opt(Schema.String),
        reason: opt(Schema.String),
        error: opt(WireErrorDetail)
      })),
      usage: opt(WireUsage)
    })
  })
])
export type ServerEvent = typeof ServerEvent.Type

const HANDLED = new Set<string>(ServerEvent.members.map((m) => m.fields.type.literal))

/** Server events the client knows and deliberately ignores. */
const IGNORED = new Set([
  "conversation.created",
  "conversation.item.retrieved",
  "conversation.item.input_audio_transcription.segment",
  "input_audio_buffer.committed",
  "input_audio_buffer.cleared",
  "input_audio_buffer.timeout_triggered",
  "input_audio_buffer.dtmf_event_received",
  "rate_limits.updated",
  "response.output_item.added",
  "response.content_part.added",
  "response.content_part.done",
  "response.output_text.done",
  "response.output_audio.done",
  "response.output_audio_transcript.done",
  "response.function_call_arguments.delta",
  "response.function_call_arguments.done",
  "output_audio_buffer.started",
  "output_audio_buffer.stopped",
  "output_audio_buffer.cleared"
])

export type Decoded =
  | { readonly _tag: "Event"; readonly event: ServerEvent }
  | { readonly _tag: "Ignored"; readonly type: string }
  | { readonly _tag: "Unknown"; readonly type: string }
  | { readonly _tag: "Malformed"; readonly detail: string }

const Envelope = Schema.Struct({ type: Schema.String })
const decodeEnvelope = Schema.decodeUnknownOption(Schema.fromJsonString(Envelope))
const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Unknown))
const decodeEvent = Schema.decodeUnknownOption(ServerEvent)

/** Classifies one text frame. Never throws. */
export const decodeServerFrame = (text: string): Decoded => {
  const json = decodeJson(text)
  if (Option.isNone(json)) return { _tag: "Malformed", detail: "not JSON" }
  const envelope = decodeEnvelope(text)
  if (Option.isNone(envelope)) return { _tag: "Malformed", detail: "no string `type`" }
  const type = envelope.value.type
  if (IGNORED.has(type)) return { _tag: "Ignored", type }
  if (!HANDLED.has(type)) return { _tag: "Unknown", type }
  const decoded = decodeEvent(json.value)
  return Option.isSome(decoded)
    ? { _tag: "Event", event: decoded.value }
    : { _tag: "Malformed", detail: `${type} with an unexpected shape` }
}

/** Text of an item: `text` of text parts, `transcript` of audio parts. */
export const itemText = (item: WireItem): string =>
  (item.content ?? []).map((part) => part.text ?? part.transcript ?? "").join("")

// =============================================================================
// Client events
// =============================================================================

export type WireToolChoice = "auto" | "none" | "required" | { readonly type: "function"; readonly name: string }

export const toWireToolChoice = (choice: RealtimeToolChoice): WireToolChoice =>
  typeof choice === "string" ? choice : { type: "function", name: choice.tool }

export const toWireTools = (tools: ReadonlyArray<RealtimeTool>) =>
  tools.map((tool) => ({
    type: "function" as const,
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters
  }))

/** The client item of `conversation.item.create`. */
export type ClientItem =
  | {
    readonly id: string
    readonly type: "message"
    readonly role: "user" | "system" | "assistant"
    readonly content: ReadonlyArray<{ readonly type: "input_text" | "output_text"; readonly text: string }>
  }
  | {
    readonly id: string
    readonly type: "function_call"
    readonly call_id: string
    readonly name: string
    readonly arguments: string
  }
  | { readonly id: string; readonly type: "function_call_output"; readonly call_id: string; readonly output: string }

export const messageItem = (id: string, role: "user" | "system" | "assistant", text: string): ClientItem => ({
  id,
  type: "message",
  role,
  content: [{ type: role === "assistant" ? "output_text" : "input_text", text }]
})

/** A tool output as sent: errors are wrapped as `{"error": ...}` (the API has no error flag). */
export const toolOutputText = (output: string, isError: boolean): string =>
  isError ? JSON.stringify({ error: output }) : output

export const ClientEvents = {
  sessionUpdate: (eventId: string, session: Readonly<Record<string, unknown>>) => ({
    type: "session.update",
    event_id: eventId,
    session: { type: "realtime", ...session }
  }),
  itemCreate: (eventId: string, item: ClientItem, previousItemId?: string) => ({
    type: "conversation.item.create",
    event_id: eventId,
    ...(previousItemId === undefined ? {} : { previous_item_id: previousItemId }),
    item
  }),
  itemDelete: (eventId: string, itemId: string) => ({ type: "conversation.item.delete", event_id: eventId, item_id: itemId }),
  itemTruncate: (eventId: string, itemId: string, audioEndMs: number) => ({
    type: "conversation.item.truncate",
    event_id: eventId,
    item_id: itemId,
    content_index: 0,
    audio_end_ms: audioEndMs
  }),
  responseCreate: (eventId: string, response: Readonly<Record<string, unknown>>) => ({
    type: "response.create",
    event_id: eventId,
    response
  }),
  responseCancel: (eventId: string, responseId?: string) => ({
    type: "response.cancel",
    event_id: eventId,
    ...(responseId === undefined ? {} : { response_id: responseId })
  }),
  audioAppend: (eventId: string, base64: string) => ({
    type: "input_audio_buffer.append",
    event_id: eventId,
    audio: base64
  }),
  audioCommit: (eventId: string) => ({ type: "input_audio_buffer.commit", event_id: eventId }),
  audioClear: (eventId: string) => ({ type: "input_audio_buffer.clear", event_id: eventId })
} as const
