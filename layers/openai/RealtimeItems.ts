/**
 * The OpenAI Realtime conversation as the client knows it, and the diff that makes it equal to a
 * baton `ChatContext` (docs/protocols.md 1.5, 1.6).
 *
 * - `HeldItems` mirrors the server's ordered item list. It is *projected*: an item the client
 *   creates or deletes is applied when the request is written (pipelining: a second diff must not
 *   re-create what the first is creating), then confirmed or corrected by the server's
 *   `conversation.item.added` / `.deleted` events, and removed again if the create is rejected.
 *   It keeps each item's text (transcripts included), which is what a reconnect re-creates.
 * - `IdMap` maps baton item ids to provider item ids: baton ids (`msg_1a`) are used as they are
 *   when they fit the provider's limits (32 characters of `[A-Za-z0-9_-]`), else hashed to
 *   `bt_<hash>`; an item the server created keeps its own id and the baton id becomes an alias.
 * - `diffChatContext` computes deletes and creates: server items matched to the context by id
 *   (function calls and outputs also by `call_id`) and in the same relative order are kept; every
 *   other server item is deleted; every missing context item is created after its predecessor
 *   (`previous_item_id`, `"root"` for the first), in context order. Content of a kept item is not
 *   compared (an item is identified by its id).
 */
import type { ChatContext, ChatItem } from "../../src/ChatContext.ts"
import { type ClientItem, itemText, messageItem, toolOutputText, type WireItem } from "./RealtimeWire.ts"

export interface HeldItem {
  readonly id: string
  readonly kind: "message" | "function_call" | "function_call_output" | "other"
  readonly role?: string | undefined
  readonly callId?: string | undefined
  readonly name?: string | undefined
  readonly arguments?: string | undefined
  readonly output?: string | undefined
  /** Text of a message (text parts, or transcripts of audio parts). */
  readonly text: string
}

const kindOf = (type: string): HeldItem["kind"] =>
  type === "message" || type === "function_call" || type === "function_call_output" ? type : "other"

export const heldFromWire = (item: WireItem): HeldItem => ({
  id: item.id,
  kind: kindOf(item.type),
  role: item.role ?? undefined,
  callId: item.call_id ?? undefined,
  name: item.name ?? undefined,
  arguments: item.arguments ?? undefined,
  output: item.output ?? undefined,
  text: itemText(item)
})

export const heldFromClient = (item: ClientItem): HeldItem => {
  switch (item.type) {
    case "message":
      return { id: item.id, kind: "message", role: item.role, text: item.content.map((c) => c.text).join("") }
    case "function_call":
      return { id: item.id, kind: "function_call", callId: item.call_id, name: item.name, arguments: item.arguments, text: "" }
    case "function_call_output":
      return { id: item.id, kind: "function_call_output", callId: item.call_id, output: item.output, text: "" }
  }
}

/** The client item that re-creates a held item as text (`undefined` when there is nothing to say). */
export const clientFromHeld = (held: HeldItem): ClientItem | undefined => {
  switch (held.kind) {
    case "message": {
      if (held.text === "") return undefined
      const role = held.role === "assistant" ? "assistant" : held.role === "system" ? "system" : "user"
      return messageItem(held.id, role, held.text)
    }
    case "function_call":
      return held.callId === undefined || held.name === undefined
        ? undefined
        : { id: held.id, type: "function_call", call_id: held.callId, name: held.name, arguments: held.arguments ?? "" }
    case "function_call_output":
      return held.callId === undefined
        ? undefined
        : { id: held.id, type: "function_call_output", call_id: held.callId, output: held.output ?? "" }
    case "other":
      return undefined
  }
}

export class HeldItems {
  private items: Array<HeldItem> = []

  list(): ReadonlyArray<HeldItem> {
    return this.items
  }

  get(id: string): HeldItem | undefined {
    return this.items.find((item) => item.id === id)
  }

  /** The ids of the items after `id`, in order (none when `id` is not held). */
  after(id: string): ReadonlyArray<string> {
    const index = this.items.findIndex((item) => item.id === id)
    return index < 0 ? [] : this.items.slice(index + 1).map((item) => item.id)
  }

  /** Places `item` after `previousId` (`null`/`"root"`: first; `undefined` or unknown: last), replacing any same-id item. */
  put(item: HeldItem, previousId: string | null | undefined): void {
    this.items = this.items.filter((i) => i.id !== item.id)
    if (previousId === null || previousId === "root") {
      this.items.unshift(item)
      return
    }
    const index = previousId === undefined ? -1 : this.items.findIndex((i) => i.id === previousId)
    if (index < 0) this.items.push(item)
    else this.items.splice(index + 1, 0, item)
  }

  /** Updates an item in place (inserting it after `previousId` when unknown). */
  update(item: HeldItem, previousId: string | null | undefined): void {
    const index = this.items.findIndex((i) => i.id === item.id)
    if (index < 0) this.put(item, previousId)
    else this.items[index] = item
  }

  setText(id: string, text: string): void {
    const index = this.items.findIndex((i) => i.id === id)
    if (index >= 0) this.items[index] = { ...this.items[index]!, text }
  }

  remove(id: string): void {
    this.items = this.items.filter((i) => i.id !== id)
  }

  clear(): void {
    this.items = []
  }
}

const PROVIDER_ID = /^[A-Za-z0-9_-]{1,32}$/

/** FNV-1a (64 bit) of a string, as 16 hex digits. */
const hash = (text: string): string => {
  let h = 0xcbf29ce484222325n
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte)
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn
  }
  return h.toString(16).padStart(16, "0")
}

export class IdMap {
  private readonly aliases = new Map<string, string>()

  /** The provider id of a baton id (its alias, or the id itself when valid, or a hash). */
  toProvider(batonId: string): string {
    return this.aliases.get(batonId) ?? (PROVIDER_ID.test(batonId) ? batonId : `bt_${hash(batonId)}`)
  }

  alias(batonId: string, providerId: string): void {
    if (batonId !== providerId) this.aliases.set(batonId, providerId)
  }
}

export interface DiffPlan {
  /** Provider ids to delete, in server order. */
  readonly deletes: ReadonlyArray<string>
  /** Items to create, in context order, each after `previousItemId`. */
  readonly creates: ReadonlyArray<{ readonly item: ClientItem; readonly previousItemId: string; readonly batonId: string }>
  /** Baton ids matched to server items with other ids. */
  readonly aliases: ReadonlyArray<readonly [string, string]>
}

/** The client item for a baton chat item (`undefined` for items the provider does not hold). */
export const clientFromChat = (item: ChatItem, id: string): ClientItem | undefined => {
  switch (item._tag) {
    case "Message":
      return messageItem(id, item.role === "assistant" ? "assistant" : item.role === "user" ? "user" : "system", item.text)
    case "FunctionCall":
      return { id, type: "function_call", call_id: item.callId, name: item.name, arguments: item.arguments }
    case "FunctionCallOutput":
      return { id, type: "function_call_output", call_id: item.callId, output: toolOutputText(item.output, item.isError) }
    case "AgentHandoff":
      return undefined
  }
}

/** Indices (into `seq`) of a longest strictly increasing subsequence. */
const longestIncreasing = (seq: ReadonlyArray<number>): Set<number> => {
  const tails: Array<number> = []
  const prev: Array<number> = new Array(seq.length).fill(-1)
  for (let i = 0; i < seq.length; i++) {
    let lo = 0
    let hi = tails.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (seq[tails[mid]!]! < seq[i]!) lo = mid + 1
      else hi = mid
    }
    if (lo > 0) prev[i] = tails[lo - 1]!
    tails[lo] = i
  }
  const out = new Set<number>()
  for (let k = tails.length > 0 ? tails[tails.length - 1]! : -1; k >= 0; k = prev[k]!) out.add(k)
  return out
}

export const diffChatContext = (held: ReadonlyArray<HeldItem>, context: ChatContext, ids: IdMap): DiffPlan => {
  const calls = new Set(context.items.flatMap((i) => (i._tag === "FunctionCall" ? [i.callId] : [])))
  const byId = new Map(held.map((h, index) => [h.id, index]))
  const taken = new Set<number>()
  const match = (item: ChatItem): number | undefined => {
    const direct = byId.get(ids.toProvider(item.id))
    if (direct !== undefined && !taken.has(direct)) return direct
    if (item._tag !== "FunctionCall" && item._tag !== "FunctionCallOutput") return undefined
    const kind = item._tag === "FunctionCall" ? "function_call" : "function_call_output"
    const index = held.findIndex((h, i) => !taken.has(i) && h.kind === kind && h.callId === item.callId)
    return index < 0 ? undefined : index
  }
  // the items the provider can hold, each with its matched server item
  const wanted: Array<{ item: ChatItem; heldIndex: number | undefined }> = []
  for (const item of context.items) {
    if (item._tag === "AgentHandoff") continue
    if (item._tag === "FunctionCallOutput" && !calls.has(item.callId)) continue
    const heldIndex = match(item)
    if (heldIndex === undefined && item._tag === "Message" && item.text === "") continue
    if (heldIndex !== undefined) taken.add(heldIndex)
    wanted.push({ item, heldIndex })
  }
  // kept: matched items whose server order agrees with the context order (longest such run)
  const matched = wanted.flatMap((w, wantedIndex) => (w.heldIndex === undefined ? [] : [{ wantedIndex, heldIndex: w.heldIndex }]))
  matched.sort((a, b) => a.heldIndex - b.heldIndex)
  const lis = longestIncreasing(matched.map((m) => m.wantedIndex))
  const keptWanted = new Set(matched.filter((_, k) => lis.has(k)).map((m) => m.wantedIndex))
  const keptHeld = new Set(matched.filter((_, k) => lis.has(k)).map((m) => m.heldIndex))
  const deletes = held.flatMap((h, index) => (keptHeld.has(index) ? [] : [h.id]))
  const creates: Array<DiffPlan["creates"][number]> = []
  const aliases: Array<readonly [string, string]> = []
  let previous = "root"
  wanted.forEach((w, wantedIndex) => {
    const pid = w.heldIndex !== undefined ? held[w.heldIndex]!.id : ids.toProvider(w.item.id)
    if (pid !== ids.toProvider(w.item.id)) aliases.push([w.item.id, pid])
    if (!keptWanted.has(wantedIndex)) {
      const item = clientFromChat(w.item, pid)
      if (item === undefined) return
      creates.push({ item, previousItemId: previous, batonId: w.item.id })
    }
    previous = pid
  })
  return { deletes, creates, aliases }
}
