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
 * - `floor` `{ holder, actors, exiting?, activating? }`: the holder's key, each live actor's lifecycle and, when
 *   there are some, the key of each actor that passed the floor once for each of its onExits not
 *   started yet (an agent handed the floor back and forth faster than its onExit runs owes several),
 *   and the keys of actors with an `onRestore` whose onEnter (onResume) has started and not ended;
 * - `userdata` `{ value }`: the userdata's JSON form by its Schema;
 * - `batch` `{ entries }`: the next `entries` entries are one append. It leads every append of
 *   more than one entry, and a writer's first append and its first after a failed one. A store
 *   appends atomically, but one that tore an append (kept a prefix of it) must not leave a
 *   journal that says half a step (an actor without its context, a history without its floor):
 *   `fold` drops a batch that is not whole, so a resume sees a prefix of whole appends.
 */
import { Effect, Queue, Semaphore } from "effect"
import type { Claim, JournalEntry, SessionStoreService, StoreError, StoreFenced } from "../../services/SessionStore.ts"
import { ChatContext, type ChatItem } from "../ChatContext.ts"
import type { Actor } from "./actor/Actor.ts"
import type { FloorState } from "./Floor.ts"
import * as Work from "./Work.ts"

export interface ActorEntry {
  readonly key: number
  readonly agent: string
  readonly task?: { readonly caller: number; readonly callId?: string | undefined; readonly baseline: ReadonlyArray<string> } | undefined
}

export interface FloorEntry {
  readonly holder: number | null
  readonly actors: ReadonlyArray<readonly [number, string]>
  /** Actors that passed the floor, a key once per onExit not started (only when there are some). */
  readonly exiting?: ReadonlyArray<number> | undefined
  /** Actors with an onRestore whose activation's hook started and had not ended (only when there are some). */
  readonly activating?: ReadonlyArray<number> | undefined
}

/** What the journal last wrote of one context. */
interface Written {
  chat: ChatContext | undefined
  ids: Array<string>
}

/** The one mutable part: written by the functions of this module only. */
interface State {
  /** Each journaled live actor's key and what was last written of its context. */
  readonly keys: Map<Actor, { readonly key: number; readonly written: Written }>
  /** What was last written of the shared history. */
  readonly history: Written
  /** The key the next new actor gets. */
  nextKey: number
  /** The floor entry last written, as JSON text. */
  floor: string | undefined
  /** The userdata last written, as JSON text. */
  userdata: string | undefined
  /** A flush is due (it holds a work token until it has run). */
  scheduled: boolean
  /** Halted or fenced: nothing more is written. */
  stopped: boolean
  /** The next append is led by a `batch` entry even if it has one entry (see the header). */
  mark: boolean
  /**
   * The onExits not started of each actor that passed the floor (each pass queues one in its hook
   * lane, behind its earlier hooks): written in the floor entry, so a resume that hands it the
   * floor again runs each of them, once, before its onResume.
   */
  readonly exits: Map<Actor, number>
}

/**
 * A record and functions over it (docs/patterns.md): `Journal.make(config)` once per durable
 * session, then `Journal.flush(journal)`, `Journal.changed(journal)` and the like.
 */
export interface Journal {
  readonly config: Config
  /** One flush at a time: a flush reads and then marks what it wrote. */
  readonly lock: Semaphore.Semaphore
  /** Wakes the flusher. */
  readonly signal: Queue.Queue<void>
  readonly state: State
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
  readonly work: Work.Work
  /**
   * The floor as journaled last stays as it is from now on: the session is closing here but its
   * closing does not end it (`endOnClose: false`: a call moving to another node, a line cut),
   * so another process resumes it as it was before, not as closing. Its words are still written.
   */
  readonly floorFrozen: () => boolean
  /**
   * Nothing is written now: the holder's batch decided to pass the floor and the session has not
   * answered yet. Its outputs (a `handoff` output among them) and the floor change are appended
   * together once it has, so a resume never finds a handoff decided and not applied (the
   * agent would hold the floor again after saying it passed it). What ends it is an event.
   */
  readonly held: () => boolean
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
  Effect.map(Effect.all([Semaphore.make(1), Queue.unbounded<void>()]), ([lock, signal]) => ({
    config,
    lock,
    signal,
    state: {
      keys: new Map(),
      history: { chat: undefined, ids: [] },
      nextKey: 0,
      floor: undefined,
      userdata: undefined,
      scheduled: false,
      stopped: false,
      mark: true,
      exits: new Map()
    }
  }))

/** The journals of live durable sessions in this process, by session id (Durable.ts writes it). */
export const sessions = new Map<string, Journal>()

/** Whether session `id` of this process keeps a journal (a session without a store has none). */
export const journaled = (id: string): boolean => sessions.has(id)

/**
 * How an actor's lifecycle is written. An actor activated whose onEnter (onResume) has not
 * started is written as it was before (Starting, Paused): a process that dies now leaves a
 * journal whose resume runs that hook, which did not run here.
 */
const journaledTag = (actor: Actor): string => {
  const tag = actor.lifecycle._tag
  if (tag !== "Active" || actor.inner.activation === undefined) return tag
  return actor.inner.activation === "enter" ? "Starting" : "Paused"
}

/**
 * The activation's hook of `actor` starts: durable from here on, before it runs (it must not
 * run again after a resume, nor be skipped by one).
 */
export const activated = (actor: Actor): Effect.Effect<void> =>
  Effect.suspend(() => {
    actor.inner.activation = undefined
    // Written in the same append: a process dying while it runs leaves an onRestore owed.
    if (actor.agent.onRestore) actor.inner.restorable = "running"
    const journal = sessions.get(actor.core.id)
    return journal ? flush(journal) : Effect.void
  })

/**
 * The activation's hook of `actor` ended: no onRestore is owed for it any more (written with the
 * next flush; a process dying before that runs onRestore after the hook had ended).
 */
export const activationEnded = (actor: Actor): Effect.Effect<void> =>
  Effect.sync(() => {
    if (actor.inner.restorable !== "running") return
    actor.inner.restorable = undefined
    const journal = sessions.get(actor.core.id)
    if (journal) changed(journal)
  })

/**
 * The onRestore of `actor` starts: durable from here on, before it runs (a later resume does
 * not run it again).
 */
export const restoring = (actor: Actor): Effect.Effect<void> =>
  Effect.suspend(() => {
    actor.inner.restorable = undefined
    const journal = sessions.get(actor.core.id)
    return journal ? flush(journal) : Effect.void
  })

/**
 * `actor` passed the floor and its onExit is queued (Handlers' Deactivate; a resume for the onExits
 * the journal says had not started): the journal lists it as exiting until that onExit starts.
 * Nothing without a journal.
 */
export const exitQueued = (actor: Actor): void => {
  const journal = sessions.get(actor.core.id)
  if (journal) journal.state.exits.set(actor, (journal.state.exits.get(actor) ?? 0) + 1)
}

/** Whether `actor` has an onExit queued that has not started (Hooks marks its start: `exited`). */
export const exitPending = (actor: Actor): boolean => (sessions.get(actor.core.id)?.state.exits.get(actor) ?? 0) > 0

/**
 * An onExit of `actor` starts: durable from here on, before it runs (a resume that hands it the
 * floor again must neither run it again nor skip it).
 */
export const exited = (actor: Actor): Effect.Effect<void> =>
  Effect.suspend(() => {
    const journal = sessions.get(actor.core.id)
    if (!journal) return Effect.void
    const left = (journal.state.exits.get(actor) ?? 0) - 1
    if (left > 0) journal.state.exits.set(actor, left)
    else journal.state.exits.delete(actor)
    return flush(journal)
  })

/** The entries for what changed, and how to mark them written once the store has them. */
const collect = (journal: Journal): { entries: Array<Omit<JournalEntry, "seq">>; commit: Array<() => void> } => {
  const { config, state } = journal
  const keys = state.keys
  const at = config.now()
  const entries: Array<Omit<JournalEntry, "seq">> = []
  const commit: Array<() => void> = []
  const pendingKeys = new Map<Actor, number>()
  const keyOf = (actor: Actor): number => {
    const known = keys.get(actor)?.key ?? pendingKeys.get(actor)
    if (known !== undefined) return known
    // A task's caller is journaled before the task.
    const caller = actor.task ? keyOf(actor.task.caller) : undefined
    const key = state.nextKey + pendingKeys.size
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
  const historyChange = diff(state.history, shared)
  if (historyChange) {
    entries.push({ at, kind: "history", data: historyChange })
    commit.push(() => apply(state.history, shared, historyChange.from, historyChange.items))
  }
  const holder = config.state.holder
  let floorEntry: FloorEntry = {
    holder: holder && config.state.live.has(holder) ? keyOf(holder) : null,
    actors: live.map((actor) => [keyOf(actor), journaledTag(actor)] as const)
  }
  const exiting = live.flatMap((actor) => Array.from({ length: state.exits.get(actor) ?? 0 }, () => keyOf(actor)))
  if (exiting.length > 0) floorEntry = { ...floorEntry, exiting }
  const activating = live.filter((actor) => actor.inner.restorable !== undefined).map(keyOf)
  if (activating.length > 0) floorEntry = { ...floorEntry, activating }
  const floorText = JSON.stringify(floorEntry)
  if (floorText !== state.floor && !config.floorFrozen()) {
    entries.push({ at, kind: "floor", data: floorEntry })
    commit.push(() => {
      state.floor = floorText
      // Actors gone from the floor are not written again.
      for (const actor of keys.keys()) if (!config.state.live.has(actor)) keys.delete(actor)
      for (const actor of state.exits.keys()) if (!config.state.live.has(actor)) state.exits.delete(actor)
    })
  }
  const encoded = config.userdata()
  if (encoded instanceof Error) {
    config.onError(encoded.message)
  } else if (encoded !== state.userdata) {
    entries.push({ at, kind: "userdata", data: { value: encoded === undefined ? null : JSON.parse(encoded) } })
    commit.push(() => {
      state.userdata = encoded
    })
  }
  const added = pendingKeys.size
  if (added > 0) commit.push(() => void (state.nextKey += added))
  return { entries, commit }
}

const write = (journal: Journal): Effect.Effect<void> =>
  Effect.suspend(() => {
    const { config, state } = journal
    const token = state.scheduled
    state.scheduled = false
    const release = token ? Effect.sync(() => Work.release(config.work)) : Effect.void
    if (state.stopped || config.held()) return release
    const { entries, commit } = collect(journal)
    if (entries.length === 0) {
      for (const f of commit) f()
      return release
    }
    const batch = entries.length > 1 || state.mark
      ? [{ at: entries[0]!.at, kind: "batch", data: { entries: entries.length } }, ...entries]
      : entries
    return config.store.append(config.claim, batch).pipe(
      Effect.matchEffect({
        onSuccess: () =>
          Effect.sync(() => {
            state.mark = false
            for (const f of commit) f()
          }),
        onFailure: (error: StoreError | StoreFenced) =>
          Effect.sync(() => {
            state.mark = true
            if (error._tag === "StoreFenced") {
              state.stopped = true
              config.onFenced(error)
            } else {
              config.onError(`the session store refused the journal's entries: ${error.message}`)
            }
          })
      }),
      Effect.ensuring(release)
    )
  })

/** Appends what changed since the last flush; returns once the store has it. */
export const flush = (journal: Journal): Effect.Effect<void> => journal.lock.withPermit(write(journal))

/** Something changed (an event was emitted): the flusher runs soon. */
export const changed = (journal: Journal): void => {
  const state = journal.state
  if (state.scheduled || state.stopped) return
  state.scheduled = true
  Work.acquire(journal.config.work)
  Queue.offerUnsafe(journal.signal, undefined)
}

/** The actor restored under `key`, with the context the store already holds. */
export const adopt = (journal: Journal, actor: Actor, key: number): void => {
  journal.state.keys.set(actor, { key, written: { chat: actor.chat, ids: actor.chat.items.map((item) => item.id) } })
  journal.state.nextKey = Math.max(journal.state.nextKey, key + 1)
}

/** The shared history, userdata and floor the store already holds. */
export const adoptSession = (journal: Journal, shared: ChatContext, userdata: string | undefined, floor: string | undefined): void => {
  const state = journal.state
  state.history.chat = shared
  state.history.ids = shared.items.map((item) => item.id)
  state.userdata = userdata
  state.floor = floor
}

/** The process "died" (tests): nothing more is written. */
export const halt = (journal: Journal): void => {
  journal.state.stopped = true
}

/** Still writing: not halted, not fenced. */
export const writing = (journal: Journal): boolean => !journal.state.stopped

/** The flusher, to fork in the session's Scope. */
export const flusher = (journal: Journal): Effect.Effect<never> =>
  Effect.forever(Effect.andThen(Queue.take(journal.signal), flush(journal)), { disableYield: true })

export { type Folded, fold } from "./JournalFold.ts"
