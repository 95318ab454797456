/**
 * What the OpenAI Realtime client does with each server event: resolve or reject pending
 * acknowledgements, keep the conversation mirror, and turn the rest into baton `RealtimeEvent`s.
 *
 * Acknowledgements (docs/protocols.md 1.3): `session.updated` answers a `session.update` (the server
 * does not echo the event id on success, so it is matched to the oldest pending update whose
 * fields it shows); `conversation.item.added` (item id) answers `conversation.item.create`;
 * `conversation.item.deleted` (item id) answers `conversation.item.delete`; an `error` whose
 * `error.event_id` names a pending request rejects it.
 */
import { Deferred, Effect, Latch } from "effect"
import type { RealtimeEvent } from "../../services/RealtimeModel.ts"
import type { AckTracker } from "./RealtimeAcks.ts"
import { heldFromWire, type HeldItems } from "./RealtimeItems.ts"
import type { ServerEvent, WireSession } from "./RealtimeWire.ts"

/** `error` codes after which the connection is unusable (docs/protocols.md 1.7). */
export const FATAL_ERROR_CODES = new Set([
  "invalid_api_key",
  "insufficient_quota",
  "account_deactivated",
  "billing_hard_limit_reached",
  "session_expired"
])

/** How one socket ended, as seen by its reader. */
export type Outcome =
  | { readonly _tag: "Expired"; readonly message: string }
  | { readonly _tag: "Closed"; readonly code: number; readonly reason: string }

/** One WebSocket of a connection (a reconnect opens another). */
export interface Live {
  readonly socketId: number
  /** `session.created` arrived. */
  readonly created: Deferred.Deferred<void>
  /** Set once, by the reader, when the socket is done. */
  readonly ended: Deferred.Deferred<Outcome>
}

export interface HandlerContext {
  readonly held: HeldItems
  readonly acks: AckTracker
  /** Open while operations may write; closed from a session expiry until the reconnect is done. */
  readonly ready: Latch.Latch
  readonly activeResponses: Set<string>
  readonly emit: (event: RealtimeEvent) => Effect.Effect<void>
}

/** What a `session.update` asked for, to recognize its `session.updated`. */
export interface SessionPatch {
  readonly instructions?: string | undefined
  readonly toolNames?: ReadonlyArray<string> | undefined
  readonly toolChoice?: unknown
}

export const sessionMatches = (patch: SessionPatch) => (payload: unknown): boolean => {
  const session = payload as WireSession
  if (patch.instructions !== undefined && session.instructions !== patch.instructions) return false
  if (patch.toolNames !== undefined) {
    const names = (session.tools ?? []).map((t) => t.name ?? "")
    if (names.join("\u0000") !== patch.toolNames.join("\u0000")) return false
  }
  if (patch.toolChoice !== undefined && JSON.stringify(session.tool_choice) !== JSON.stringify(patch.toolChoice)) {
    return false
  }
  return true
}

export const handshakeChannel = (socketId: number) => `handshake:${socketId}`
export const SESSION_CHANNEL = "session"
export const itemKey = (id: string) => `item:${id}`
export const deleteKey = (id: string) => `delete:${id}`

export const makeHandler = (ctx: HandlerContext) => {
  /** Running input transcripts (deltas accumulate until `completed`). */
  const partial = new Map<string, string>()

  /** Handles one decoded event; `false` stops reading this socket. */
  const handle = (live: Live, event: ServerEvent): Effect.Effect<boolean> =>
    Effect.gen(function*() {
      switch (event.type) {
        case "session.created":
          yield* Deferred.succeed(live.created, undefined)
          return true
        case "session.updated": {
          const handshake = yield* ctx.acks.resolveOrdered(handshakeChannel(live.socketId), event.session, "session.updated")
          if (handshake !== "resolved") yield* ctx.acks.resolveOrdered(SESSION_CHANNEL, event.session, "session.updated")
          return true
        }
        case "error": {
          const { code, event_id: eventId } = event.error
          const message = event.error.message ?? code ?? "unknown error"
          if (code === "session_expired") {
            yield* Latch.close(ctx.ready)
            yield* Deferred.succeed(live.ended, { _tag: "Expired", message })
            return false
          }
          if (eventId !== undefined && eventId !== null && (yield* ctx.acks.reject(eventId, message))) return true
          if (code === "response_cancel_not_active") {
            yield* Effect.logDebug(`realtime: ${message} (a cancel raced the end of the response)`)
            return true
          }
          if (code === "conversation_already_has_active_response") {
            // A server-VAD response started as the client asked for one (docs/protocols.md 5.5): it
            // answers the same conversation, and responses are matched to requests in order,
            // so the request is served by it. Nothing is lost: not an error for the agent.
            yield* Effect.logDebug(`realtime: ${message} (the server's own response serves the request)`)
            return true
          }
          yield* ctx.emit({
            _tag: "Error",
            message,
            code: code ?? undefined,
            fatal: code !== undefined && code !== null && FATAL_ERROR_CODES.has(code)
          })
          return true
        }
        case "conversation.item.added":
        case "conversation.item.created": {
          ctx.held.put(heldFromWire(event.item), event.previous_item_id ?? null)
          yield* ctx.acks.resolveKey(itemKey(event.item.id), `conversation.item.added ${event.item.id}`)
          return true
        }
        case "conversation.item.done":
        case "response.output_item.done": {
          const item = heldFromWire(event.item)
          const known = ctx.held.get(item.id)
          const merged = item.text === "" && known !== undefined ? { ...item, text: known.text } : item
          if (event.type === "conversation.item.done" || known !== undefined) {
            ctx.held.update(merged, event.type === "conversation.item.done" ? event.previous_item_id ?? null : undefined)
          }
          if (
            event.type === "response.output_item.done" && event.item.type === "function_call" &&
            (event.item.status ?? "completed") === "completed"
          ) {
            yield* ctx.emit({
              _tag: "FunctionCall",
              responseId: event.response_id,
              itemId: event.item.id,
              callId: event.item.call_id ?? event.item.id,
              name: event.item.name ?? "",
              arguments: event.item.arguments ?? ""
            })
          }
          return true
        }
        case "conversation.item.deleted":
          ctx.held.remove(event.item_id)
          yield* ctx.acks.resolveKey(deleteKey(event.item_id), `conversation.item.deleted ${event.item_id}`)
          return true
        case "conversation.item.truncated":
          // the server drops the transcript of a truncated item (docs/protocols.md 1.4 F)
          ctx.held.setText(event.item_id, "")
          return true
        case "conversation.item.input_audio_transcription.delta": {
          const text = (partial.get(event.item_id) ?? "") + (event.delta ?? "")
          partial.set(event.item_id, text)
          yield* ctx.emit({ _tag: "InputTranscript", itemId: event.item_id, text, final: false })
          return true
        }
        case "conversation.item.input_audio_transcription.completed": {
          partial.delete(event.item_id)
          const text = event.transcript ?? ""
          ctx.held.setText(event.item_id, text)
          yield* ctx.emit({ _tag: "InputTranscript", itemId: event.item_id, text, final: true, followedBy: ctx.held.after(event.item_id) })
          return true
        }
        case "conversation.item.input_audio_transcription.failed":
          partial.delete(event.item_id)
          // The turn's transcript, without words: whoever waits for them stops waiting.
          yield* ctx.emit({
            _tag: "InputTranscript",
            itemId: event.item_id,
            text: "",
            final: true,
            failed: { message: event.error?.message ?? "input transcription failed", code: event.error?.code ?? undefined }
          })
          return true
        case "input_audio_buffer.speech_started":
          yield* ctx.emit({ _tag: "SpeechStarted", audioStartMs: event.audio_start_ms ?? undefined })
          return true
        case "input_audio_buffer.speech_stopped":
          yield* ctx.emit({ _tag: "SpeechStopped", audioEndMs: event.audio_end_ms ?? undefined })
          return true
        case "response.created":
          ctx.activeResponses.add(event.response.id)
          yield* ctx.emit({ _tag: "ResponseStarted", responseId: event.response.id })
          return true
        case "response.output_text.delta":
          yield* ctx.emit({ _tag: "TextDelta", responseId: event.response_id, itemId: event.item_id, delta: event.delta })
          return true
        case "response.output_audio.delta":
          yield* ctx.emit({
            _tag: "AudioDelta",
            responseId: event.response_id,
            itemId: event.item_id,
            pcm: new Uint8Array(Buffer.from(event.delta, "base64")),
            sampleRate: 24_000
          })
          return true
        case "response.output_audio_transcript.delta":
          yield* ctx.emit({ _tag: "TranscriptDelta", responseId: event.response_id, itemId: event.item_id, delta: event.delta })
          return true
        case "response.done": {
          const r = event.response
          ctx.activeResponses.delete(r.id)
          const status = r.status === "completed" || r.status === "cancelled" || r.status === "incomplete" ? r.status : "failed"
          if (status === "cancelled" && r.status_details?.reason === "turn_detected") {
            yield* ctx.emit({ _tag: "Interrupted", responseId: r.id })
          }
          const error = r.status_details?.error
          yield* ctx.emit({
            _tag: "ResponseDone",
            responseId: r.id,
            status,
            usage: r.usage ? { inputTokens: r.usage.input_tokens ?? 0, outputTokens: r.usage.output_tokens ?? 0 } : undefined,
            error: error ? error.message ?? error.code ?? error.type ?? "failed" : undefined,
            errorCode: error ? error.code ?? error.type ?? undefined : undefined
          })
          return true
        }
      }
    })

  return handle
}
