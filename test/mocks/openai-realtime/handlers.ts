/**
 * Client event handlers of the OpenAI Realtime mock (docs/protocols.md 1.3): each answers with the GA
 * acknowledgement, or with an `error` carrying the client's `event_id` and no state change.
 */
import { Predicate } from "effect"
import { durationMs, fromBase64, toBase64 } from "../shared/audio.ts"
import { normalizeClientItem } from "./conversation.ts"
import { Errors } from "./errors.ts"
import { startResponse } from "./respond.ts"
import { applySessionUpdate, encodingOf } from "./session.ts"
import type { RealtimeState } from "./state.ts"
import type { ClientEvent, ContentPart } from "./types.ts"

const MAX_APPEND_BYTES = 15 * 1024 * 1024

export const handleClientEvent = (s: RealtimeState, e: ClientEvent): void => {
  const eventId = Predicate.isString(e.event_id) ? e.event_id : null
  const fail = (error: Parameters<RealtimeState["error"]>[0]) => s.error(error, eventId)
  switch (e.type) {
    case "session.update": {
      const r = applySessionUpdate(s.session, e.session, { assistantAudioPresent: s.assistantAudioPresent })
      if (!r.ok) return fail(r.error)
      s.session = r.value
      // The client event_id is not echoed on success (docs/protocols.md 1.2).
      s.emit({ type: "session.updated", session: s.session })
      return
    }
    case "input_audio_buffer.append": {
      if (!Predicate.isString(e.audio)) return fail(Errors.missingParameter("audio"))
      const bytes = fromBase64(e.audio)
      if (bytes.byteLength > MAX_APPEND_BYTES) return fail(Errors.audioTooLarge())
      return s.input.append(bytes) // no acknowledgement
    }
    case "input_audio_buffer.commit":
      return s.input.commit(eventId)
    case "input_audio_buffer.clear":
      return s.input.clear()
    case "conversation.item.create": {
      const prev = e.previous_item_id
      if (prev !== undefined && prev !== null && !Predicate.isString(prev)) {
        return fail(Errors.invalidValue("previous_item_id", prev))
      }
      const n = normalizeClientItem(e.item, s.conversation, encodingOf(s.session.audio.input.format))
      if (!n.ok) return fail(n.error)
      const r = s.conversation.insert(n.entry, prev)
      if (!r.ok) return fail(r.error)
      s.emit({ type: "conversation.item.added", previous_item_id: r.previousItemId, item: n.entry.item })
      s.emit({ type: "conversation.item.done", previous_item_id: r.previousItemId, item: n.entry.item })
      return
    }
    case "conversation.item.delete": {
      if (!Predicate.isString(e.item_id)) return fail(Errors.missingParameter("item_id"))
      if (!s.conversation.delete(e.item_id)) return fail(Errors.itemNotFound("item_delete_invalid_item_id", e.item_id))
      s.emit({ type: "conversation.item.deleted", item_id: e.item_id })
      return
    }
    case "conversation.item.truncate":
      return truncate(s, e, fail)
    case "conversation.item.retrieve": {
      if (!Predicate.isString(e.item_id)) return fail(Errors.missingParameter("item_id"))
      const entry = s.conversation.get(e.item_id)
      if (entry === undefined) return fail(Errors.itemNotFound("item_retrieve_invalid_item_id", e.item_id))
      const content = entry.item.content?.map((p): ContentPart =>
        (p.type === "input_audio" || p.type === "output_audio") && entry.audio ? { ...p, audio: toBase64(entry.audio) } : p
      )
      s.emit({ type: "conversation.item.retrieved", item: content ? { ...entry.item, content } : entry.item })
      return
    }
    case "response.create":
      return startResponse(s, "response.create", e.response, eventId)
    case "response.cancel": {
      const id = e.response_id
      const target = Predicate.isString(id)
        ? s.responses.get(id)
        : s.defaultResponse ?? s.responses.values().next().value
      if (target === undefined || target.cancelled !== undefined) return fail(Errors.cancelNotActive())
      target.cancel("client_cancelled")
      return
    }
    default:
      return fail(Errors.unknownEvent(e.type))
  }
}

const truncate = (s: RealtimeState, e: ClientEvent, fail: (error: Parameters<RealtimeState["error"]>[0]) => void) => {
  if (!Predicate.isString(e.item_id)) return fail(Errors.missingParameter("item_id"))
  if (!Predicate.isNumber(e.content_index)) return fail(Errors.missingParameter("content_index"))
  if (!Predicate.isNumber(e.audio_end_ms) || e.audio_end_ms < 0) return fail(Errors.missingParameter("audio_end_ms"))
  const entry = s.conversation.get(e.item_id)
  if (entry === undefined) return fail(Errors.itemNotFound("item_truncate_invalid_item_id", e.item_id))
  const part = entry.item.content?.[e.content_index]
  if (entry.item.role !== "assistant" || part?.type !== "output_audio" || !entry.audio || !entry.encoding) {
    return fail(Errors.constraint("item_id", "Only assistant messages with audio content can be truncated."))
  }
  const total = durationMs(entry.encoding, entry.audio.byteLength)
  if (e.audio_end_ms > total) return fail(Errors.audioTooShort(total, e.audio_end_ms))
  // LiveKit: "the API rejects truncating an item when no audio was played" (docs/protocols.md 1.4 F).
  if (e.audio_end_ms === 0) return fail(Errors.constraint("audio_end_ms", "audio_end_ms must be greater than 0."))
  const keep = Math.floor((e.audio_end_ms * entry.audio.byteLength) / Math.max(1, total))
  entry.audio = entry.audio.subarray(0, keep - (keep % (entry.encoding.kind === "pcm16" ? 2 : 1)))
  // Truncation also deletes the server-side transcript (ON-GA L631).
  const content = entry.item.content!.map((p, i) => (i === e.content_index ? { ...p, transcript: "" } : p))
  entry.item = { ...entry.item, content }
  entry.truncated = true
  s.emit({ type: "conversation.item.truncated", item_id: e.item_id, content_index: e.content_index, audio_end_ms: e.audio_end_ms })
}
