/**
 * A durable session's journal: what changed since the last flush, appended to the session store
 * as entries. A flush compares the session's state with what it last wrote, so every change
 * (items added to an agent's context or to the shared history, the floor passing, a task lent or
 * returned, an agent paused or resumed, userdata) is written once, as it stands after the step
 * that made it: a floor change is one synchronous step (rule 1), so any state a flush reads is a
 * whole one.
 *
 * When: the supervisor flushes before it handles each message (a step's changes are durable
 * before the next floor change), and a flusher fiber flushes after any event (words committed
 * by an actor between two floor changes). Without a store there is no journal at all.
 *
 * Entries (`kind`, `data`):
 * - `actor` `{ key, agent, task? }`: an actor appeared (`task`: its caller's key, the call that
 *   lent the floor, the ids of the items it started with);
 * - `context` `{ key, from, items }`: the actor's context from index `from` on is `items`;
 * - `history` `{ from, items }`: the same for the shared history;
 * - `floor` `{ holder, actors }`: the holder's key and each live actor's lifecycle;
 * - `userdata` `{ value }`: the userdata's JSON form by its Schema.
 */
import { Effect, Queue, Semaphore } from "effect"
import type { Claim, JournalEntry, SessionStoreService, StoreError, StoreFenced } from "../../services/SessionStore.ts"
import { ChatContext, type ChatItem } from "../ChatContext.ts"
import type { Actor } from "./actor/Actor.ts"
import type { FloorState } from "./Floor.ts"
import type { Work } from "./Work.ts"

export interface ActorEntry {
  readonly key: number
  readonly agent: string
  readonly task?: { readonly caller: number; readonly callId?: string | undefined; readonly baseline: ReadonlyArray<string> } | undefined
}

export interface FloorEntry {
  readonly holder: number | null
  readonly actors: ReadonlyArray<readonly [number, string]>
}

/** What the journal last wrote of one context. */
interface Written {
  chat: ChatContext | undefined
  ids: Array<string>
}

export interface Journal {
  /** Appends what changed since the last flush; returns once the store has it. */
  readonly flush: Effect.Effect<void>
  /** Something changed (an event was emitted): the flusher runs soon. */
  readonly changed: () => void
  /** The actor restored under `key`, with the context the store already holds. */
  readonly adopt: (actor: Actor, key: number) => void
  /** The shared history, userdata and floor the store already holds. */
  readonly adoptSession: (history: ChatContext, userdata: string | undefined, floor: string | undefined) => void
  /** The process "died" (tests): nothing more is written. */
  readonly halt: () => void
  /** Still writing: not halted, not fenced. */
  readonly writing: () => boolean
  readonly claim: Claim
  /** The flusher, to fork in the session's Scope. */
  readonly flusher: Effect.Effect<never>
}

export interface Config {
  readonly store: SessionStoreService
  readonly claim: Claim
  readonly state: FloorState
  readonly history: () => ChatContext
  /** The userdata's JSON text (undefined: none), or an Error when it no longer encodes. */
  readonly userdata: () => string | undefined | Error
  readonly now: () => number
  /** The session's work count: a change not yet in the store holds a token, so a session is
   * quiescent (rule 10) only once what happened is durable. */
  readonly work: Work
  /** Another writer took the session: this one stops (called once). */
  readonly onFenced: (error: StoreFenced) => void
  /** The store failed: the entries are written again at the next flush. */
  readonly onError: (message: string) => void
}

/** How `chat` differs from what was written: the first index that changed and the items from there. */
const diff = (written: Written, chat: ChatContext): { readonly from: number; readonly items: Array<ChatItem> } | undefined => {
  if (written.chat === chat) return undefined
  const ids = written.ids
  let from = 0
  // Appends share a buffer and never rewrite its prefix: only the new items need looking at (a
  // long session's flush does not compare its whole history).
  if (written.chat !== undefined && written.chat.length === ids.length && chat.length >= ids.length &&
    ChatContext.view(written.chat).buffer === ChatContext.view(chat).buffer) from = ids.length
  const shared = Math.min(ids.length, chat.length)
  while (from < shared && chat.at(from)!.id === ids[from]) from++
  if (from === ids.length && from === chat.length) return undefined
  const items: Array<ChatItem> = []
  for (let i = from; i < chat.length; i++) items.push(chat.at(i)!)
  return { from, items }
}

const apply = (written: Written, chat: ChatContext, from: number, items: ReadonlyArray<ChatItem>) => {
  written.chat = chat
  written.ids.length = from
  for (const item of items) written.ids.push(item.id)
}

export const make = (config: Config): Effect.Effect<Journal> =>
  Effect.gen(function*() {
    const lock = yield* Semaphore.make(1)
    const signal = yield* Queue.unbounded<void>()
    const keys = new Map<Actor, { readonly key: number; readonly written: Written }>()
    const history: Written = { chat: undefined, ids: [] }
    let nextKey = 0
    let floor: string | undefined
    let userdata: string | undefined
    let scheduled = false
    let stopped = false

    /** The entries for what changed, and how to mark them written once the store has them. */
    const collect = (): { entries: Array<Omit<JournalEntry, "seq">>; commit: Array<() => void> } => {
      const at = config.now()
      const entries: Array<Omit<JournalEntry, "seq">> = []
      const commit: Array<() => void> = []
      const pendingKeys = new Map<Actor, number>()
      const keyOf = (actor: Actor): number => {
        const known = keys.get(actor)?.key ?? pendingKeys.get(actor)
        if (known !== undefined) return known
        // A task's caller is journaled before the task.
        const caller = actor.task ? keyOf(actor.task.caller) : undefined
        const key = nextKey + pendingKeys.size
        pendingKeys.set(actor, key)
        const data: ActorEntry = {
          key,
          agent: actor.name,
          ...(actor.task && caller !== undefined
            ? { task: { caller, callId: actor.task.callId, baseline: [...actor.task.baseline] } }
            : {})
        }
        entries.push({ at, kind: "actor", data })
        return key
      }
      const live = [...config.state.live]
      for (const actor of live) keyOf(actor)
      for (const actor of live) {
        const key = keyOf(actor)
        const written = keys.get(actor)?.written ?? { chat: undefined, ids: [] }
        const chat = actor.chat
        const change = diff(written, chat)
        if (change) {
          entries.push({ at, kind: "context", data: { key, ...change } })
          commit.push(() => apply(written, chat, change.from, change.items))
        }
        if (!keys.has(actor)) commit.push(() => void keys.set(actor, { key, written }))
      }
      const shared = config.history()
      const historyChange = diff(history, shared)
      if (historyChange) {
        entries.push({ at, kind: "history", data: historyChange })
        commit.push(() => apply(history, shared, historyChange.from, historyChange.items))
      }
      const holder = config.state.holder
      const floorEntry: FloorEntry = {
        holder: holder && config.state.live.has(holder) ? keyOf(holder) : null,
        actors: live.map((actor) => [keyOf(actor), actor.lifecycle._tag] as const)
      }
      const floorText = JSON.stringify(floorEntry)
      if (floorText !== floor) {
        entries.push({ at, kind: "floor", data: floorEntry })
        commit.push(() => {
          floor = floorText
          // Actors gone from the floor are not written again.
          for (const actor of keys.keys()) if (!config.state.live.has(actor)) keys.delete(actor)
        })
      }
      const encoded = config.userdata()
      if (encoded instanceof Error) {
        config.onError(encoded.message)
      } else if (encoded !== userdata) {
        entries.push({ at, kind: "userdata", data: { value: encoded === undefined ? null : JSON.parse(encoded) } })
        commit.push(() => {
          userdata = encoded
        })
      }
      const added = pendingKeys.size
      if (added > 0) commit.push(() => void (nextKey += added))
      return { entries, commit }
    }

    const write: Effect.Effect<void> = Effect.suspend(() => {
      const token = scheduled
      scheduled = false
      const release = token ? Effect.sync(() => config.work.release()) : Effect.void
      if (stopped) return release
      const { entries, commit } = collect()
      if (entries.length === 0) {
        for (const f of commit) f()
        return release
      }
      return config.store.append(config.claim, entries).pipe(
        Effect.matchEffect({
          onSuccess: () => Effect.sync(() => {
            for (const f of commit) f()
          }),
          onFailure: (error: StoreError | StoreFenced) =>
            Effect.sync(() => {
              if (error._tag === "StoreFenced") {
                stopped = true
                config.onFenced(error)
              } else {
                config.onError(`the session store refused the journal's entries: ${error.message}`)
              }
            })
        }),
        Effect.ensuring(release)
      )
    })

    const flush = lock.withPermit(write)
    return {
      flush,
      changed: () => {
        if (scheduled || stopped) return
        scheduled = true
        config.work.acquire()
        Queue.offerUnsafe(signal, undefined)
      },
      adopt: (actor, key) => {
        keys.set(actor, { key, written: { chat: actor.chat, ids: actor.chat.items.map((item) => item.id) } })
        nextKey = Math.max(nextKey, key + 1)
      },
      adoptSession: (shared, encoded, floorText) => {
        history.chat = shared
        history.ids = shared.items.map((item) => item.id)
        userdata = encoded
        floor = floorText
      },
      halt: () => {
        stopped = true
      },
      writing: () => !stopped,
      claim: config.claim,
      flusher: Effect.forever(Effect.andThen(Queue.take(signal), flush), { disableYield: true })
    }
  })

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
  for (const { kind, data } of entries) {
    switch (kind) {
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
