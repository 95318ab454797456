/**
 * A store's journal entries folded back into the session they describe (what a resume rebuilds
 * from, Resume.ts): the actors with their contexts, the shared history, the last floor entry and
 * the userdata. A batch the store kept only a prefix of (a torn append) is dropped whole.
 */
import type { JournalEntry } from "../../services/SessionStore.ts"
import type { ChatItem } from "../ChatContext.ts"
import type { ActorEntry, FloorEntry } from "./Journal.ts"

/** A store's entries folded into the session they describe. */
export interface Folded {
  readonly actors: Map<number, { readonly entry: ActorEntry; items: Array<ChatItem> }>
  readonly history: Array<ChatItem>
  readonly floor: FloorEntry | undefined
  /** The userdata's JSON form, if any was written. */
  readonly userdata: { readonly value: unknown } | undefined
}

export const fold = (entries: ReadonlyArray<JournalEntry>): Folded => {
  const actors = new Map<number, { readonly entry: ActorEntry; items: Array<ChatItem> }>()
  let history: Array<ChatItem> = []
  let floor: FloorEntry | undefined
  let userdata: { readonly value: unknown } | undefined
  for (let i = 0; i < entries.length; i++) {
    const { kind, data } = entries[i]!
    switch (kind) {
      case "batch": {
        // Not whole (the store kept a prefix of the append, then another began): dropped.
        const end = i + (data as { entries: number }).entries
        let next = i + 1
        while (next < entries.length && next <= end && entries[next]!.kind !== "batch") next++
        if (next <= end) i = next - 1
        break
      }
      case "actor": {
        const entry = data as ActorEntry
        actors.set(entry.key, { entry, items: [] })
        break
      }
      case "context": {
        const { key, from, items } = data as { key: number; from: number; items: Array<ChatItem> }
        const actor = actors.get(key)
        if (actor) actor.items = [...actor.items.slice(0, from), ...items]
        break
      }
      case "history": {
        const { from, items } = data as { from: number; items: Array<ChatItem> }
        history = [...history.slice(0, from), ...items]
        break
      }
      case "floor":
        floor = data as FloorEntry
        break
      case "userdata":
        userdata = data as { value: unknown }
        break
    }
  }
  return { actors, history, floor, userdata }
}
