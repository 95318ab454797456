/**
 * The Gemini Live conversation as the client knows it, and what `updateChatContext` may do with
 * it. Gemini's history is append-only (`clientContent` adds turns; nothing removes one,
 * docs/protocols.md 2.7), so:
 *
 * - a context item already in the history is left alone: matched by id (the ids of items the
 *   client sent, or the ids of this connection's events: `itemId` of a model turn, of a user
 *   transcript, of a function call), by call id (function calls and outputs), or, for a message
 *   the server produced, by role and text;
 * - missing items after the last matched one are appended, in order;
 * - missing items *before* it cannot be inserted: they are taken to be server turns recorded
 *   under other ids and skipped (debug log);
 * - an item the client sent earlier and the context no longer has would need a deletion: the
 *   update fails with reason `unsupported`.
 *
 * The history also re-seeds a new session when a reconnection could not resume the old one.
 */
import type { ChatContext, ChatItem } from "../../src/ChatContext.ts"
import { type Content, contentOf } from "./GeminiWire.ts"

export interface HistoryEntry {
  readonly id: string
  /** Who put it there: the client (`clientContent`, `toolResponse`) or the model / user audio. */
  readonly origin: "client" | "server"
  readonly kind: "message" | "call" | "output"
  readonly role: "user" | "model" | "system"
  readonly text: string
  readonly callId?: string | undefined
  readonly content: Content
}

export interface AppendPlan {
  readonly append: ReadonlyArray<ChatItem>
  /** Context items skipped because they would have to be inserted before known items. */
  readonly skipped: ReadonlyArray<string>
  /** Client items the context lacks (a deletion would be needed). */
  readonly missing: ReadonlyArray<string>
}

const roleOf = (item: ChatItem): HistoryEntry["role"] =>
  item._tag === "Message"
    ? item.role === "assistant" ? "model" : item.role === "user" ? "user" : "system"
    : item._tag === "FunctionCall"
    ? "model"
    : "user"

/** The history entry for a chat item the client sends. */
export const entryOf = (item: ChatItem): HistoryEntry | undefined => {
  const content = contentOf(item)
  if (content === undefined) return undefined
  return {
    id: item.id,
    origin: "client",
    kind: item._tag === "FunctionCall" ? "call" : item._tag === "FunctionCallOutput" ? "output" : "message",
    role: roleOf(item),
    text: item._tag === "Message" ? item.text : "",
    callId: item._tag === "Message" || item._tag === "AgentHandoff" ? undefined : item.callId,
    content
  }
}

export class GeminiHistory {
  private entries: Array<HistoryEntry> = []

  list(): ReadonlyArray<HistoryEntry> {
    return this.entries
  }

  push(entry: HistoryEntry): void {
    this.entries.push(entry)
  }

  has(id: string): boolean {
    return this.entries.some((e) => e.id === id)
  }

  plan(context: ChatContext): AppendPlan {
    const matched = new Set<number>()
    const find = (item: ChatItem): number => {
      const free = (pred: (e: HistoryEntry) => boolean) => this.entries.findIndex((e, i) => !matched.has(i) && pred(e))
      const byId = free((e) => e.id === item.id)
      if (byId >= 0) return byId
      switch (item._tag) {
        case "FunctionCall":
          return free((e) => e.kind === "call" && e.callId === item.callId)
        case "FunctionCallOutput":
          return free((e) => e.kind === "output" && e.callId === item.callId)
        case "Message":
          return free((e) => e.origin === "server" && e.kind === "message" && e.role === roleOf(item) && e.text.trim() === item.text.trim())
        case "AgentHandoff":
          return -1
      }
    }
    const wanted = context.items.filter((item) => item._tag !== "AgentHandoff" && !(item._tag === "Message" && item.text === ""))
    const found = wanted.map((item) => {
      const index = find(item)
      if (index >= 0) matched.add(index)
      return index
    })
    const last = found.reduce((acc, index, i) => (index >= 0 ? i : acc), -1)
    return {
      append: wanted.filter((_, i) => i > last && found[i]! < 0),
      skipped: wanted.filter((_, i) => i < last && found[i]! < 0).map((item) => item.id),
      missing: this.entries.flatMap((e, i) => (e.origin === "client" && !matched.has(i) ? [e.id] : []))
    }
  }
}
