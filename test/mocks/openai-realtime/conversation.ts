/**
 * The default conversation: an ordered list of items with `previous_item_id` semantics (docs/protocols.md
 * 1.5), plus the validation of client-created items (1.3).
 */
import { Predicate } from "effect"
import { type AudioEncoding, durationMs, fromBase64 } from "../shared/audio.ts"
import { makeId } from "../shared/ids.ts"
import { Errors } from "./errors.ts"
import type { ContentPart, ErrorSpec, RealtimeItem } from "./types.ts"

export interface Entry {
  item: RealtimeItem
  /** Audio of the item (user input audio, assistant output audio), never serialized but in `retrieve`. */
  audio: Uint8Array | undefined
  encoding: AudioEncoding | undefined
  /** What a scripted `userSpeaks` said (the model "hears" it even without input transcription). */
  spoken?: string | undefined
  /** Set by `conversation.item.truncate`: the server forgot the transcript and the unplayed audio. */
  truncated?: boolean | undefined
}

export type Insert =
  | { readonly ok: true; readonly previousItemId: string | null }
  | { readonly ok: false; readonly error: ErrorSpec }

export class Conversation {
  readonly id = makeId("conv")
  private readonly entries: Array<Entry> = []

  items(): ReadonlyArray<RealtimeItem> {
    return this.entries.map((e) => e.item)
  }

  get(id: string): Entry | undefined {
    return this.entries.find((e) => e.item.id === id)
  }

  previousIdOf(id: string): string | null {
    const i = this.entries.findIndex((e) => e.item.id === id)
    return i > 0 ? this.entries[i - 1]!.item.id : null
  }

  lastId(): string | null {
    return this.entries.at(-1)?.item.id ?? null
  }

  /** `undefined` appends, `"root"` (or null) inserts first, an id inserts after that item. */
  insert(entry: Entry, previousItemId: string | null | undefined): Insert {
    if (this.get(entry.item.id) !== undefined) {
      return { ok: false, error: Errors.constraint("item.id", `Item with id '${entry.item.id}' already exists.`) }
    }
    if (previousItemId === undefined) {
      const prev = this.lastId()
      this.entries.push(entry)
      return { ok: true, previousItemId: prev }
    }
    if (previousItemId === null || previousItemId === "root") {
      this.entries.unshift(entry)
      return { ok: true, previousItemId: null }
    }
    const i = this.entries.findIndex((e) => e.item.id === previousItemId)
    if (i < 0) return { ok: false, error: Errors.itemNotFound("invalid_value", previousItemId, "previous_item_id") }
    this.entries.splice(i + 1, 0, entry)
    return { ok: true, previousItemId }
  }

  delete(id: string): boolean {
    const i = this.entries.findIndex((e) => e.item.id === id)
    if (i < 0) return false
    this.entries.splice(i, 1)
    return true
  }

  hasFunctionCall(callId: string): boolean {
    return this.entries.some((e) => e.item.type === "function_call" && e.item.call_id === callId)
  }
}

/** Text of a message for scripts and usage: input_text / output_text text, audio transcripts. */
export const itemText = (item: RealtimeItem): string => {
  if (item.type === "function_call") return item.arguments ?? ""
  if (item.type === "function_call_output") return item.output ?? ""
  return (item.content ?? [])
    .map((p) => (Predicate.isString(p.text) ? p.text : Predicate.isString(p.transcript) ? p.transcript : ""))
    .join("")
}

export const lastUserText = (items: ReadonlyArray<RealtimeItem>, conversation: Conversation): string | undefined => {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i]!
    if (it.type === "message" && it.role === "user") {
      const text = itemText(it)
      return text.length > 0 ? text : conversation.get(it.id)?.spoken ?? text
    }
  }
  return undefined
}

const ROLE_PARTS: Record<string, ReadonlyArray<string>> = {
  system: ["input_text"],
  user: ["input_text", "input_audio", "input_image"],
  assistant: ["output_text"]
}

type Normalized = { readonly ok: true; readonly entry: Entry } | { readonly ok: false; readonly error: ErrorSpec }

/**
 * Turns the `item` of `conversation.item.create` into the server's view of it. User input audio is
 * kept aside (in the entry) and shown as `{type:"input_audio", transcript}`.
 */
export const normalizeClientItem = (raw: unknown, conversation: Conversation, inputEncoding: AudioEncoding): Normalized => {
  const fail = (error: ErrorSpec): Normalized => ({ ok: false, error })
  if (!Predicate.isObject(raw)) return fail(Errors.missingParameter("item"))
  if (raw.id !== undefined && !Predicate.isString(raw.id)) return fail(Errors.invalidValue("item.id", raw.id))
  const id = Predicate.isString(raw.id) ? raw.id : makeId("item")
  const base = { id, object: "realtime.item" as const }
  switch (raw.type) {
    case "message": {
      const role = raw.role
      if (role !== "user" && role !== "assistant" && role !== "system") {
        return fail(Errors.invalidValue("item.role", role, ["user", "assistant", "system"]))
      }
      if (!Array.isArray(raw.content)) return fail(Errors.missingParameter("item.content"))
      const content: Array<ContentPart> = []
      let audio: Uint8Array | undefined
      for (let i = 0; i < raw.content.length; i++) {
        const part: unknown = raw.content[i]
        const param = `item.content[${i}].type`
        if (!Predicate.isObject(part) || !Predicate.isString(part.type)) return fail(Errors.missingParameter(param))
        if (role === "assistant" && (part.type === "output_audio" || part.type === "audio")) {
          return fail(Errors.constraint(param, "It cannot populate assistant audio messages."))
        }
        if (!ROLE_PARTS[role]!.includes(part.type)) return fail(Errors.invalidValue(param, part.type, ROLE_PARTS[role]))
        if (part.type === "input_audio") {
          if (Predicate.isString(part.audio)) audio = fromBase64(part.audio)
          content.push({ type: "input_audio", transcript: Predicate.isString(part.transcript) ? part.transcript : null })
        } else if (part.type === "input_text" || part.type === "output_text") {
          if (!Predicate.isString(part.text)) return fail(Errors.missingParameter(`item.content[${i}].text`))
          content.push({ type: part.type, text: part.text })
        } else {
          content.push({ ...part, type: part.type })
        }
      }
      const item: RealtimeItem = { ...base, type: "message", status: "completed", role, content }
      return { ok: true, entry: { item, audio, encoding: audio ? inputEncoding : undefined } }
    }
    case "function_call": {
      for (const key of ["call_id", "name", "arguments"] as const) {
        if (!Predicate.isString(raw[key])) return fail(Errors.missingParameter(`item.${key}`))
      }
      const item: RealtimeItem = {
        ...base,
        type: "function_call",
        status: "completed",
        call_id: raw.call_id as string,
        name: raw.name as string,
        arguments: raw.arguments as string
      }
      return { ok: true, entry: { item, audio: undefined, encoding: undefined } }
    }
    case "function_call_output": {
      if (!Predicate.isString(raw.call_id)) return fail(Errors.missingParameter("item.call_id"))
      if (!Predicate.isString(raw.output)) return fail(Errors.missingParameter("item.output"))
      if (!conversation.hasFunctionCall(raw.call_id)) {
        return fail(Errors.constraint("item.call_id", `Tool call ID '${raw.call_id}' not found in conversation.`))
      }
      const item: RealtimeItem = { ...base, type: "function_call_output", call_id: raw.call_id, output: raw.output }
      return { ok: true, entry: { item, audio: undefined, encoding: undefined } }
    }
    default:
      return fail(Errors.invalidValue("item.type", raw.type, ["message", "function_call", "function_call_output"]))
  }
}

export const entryAudioMs = (entry: Entry): number =>
  entry.audio && entry.encoding ? durationMs(entry.encoding, entry.audio.byteLength) : 0
