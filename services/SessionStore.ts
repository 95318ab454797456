/**
 * Where a session's journal lives, so a call outlives its connection, its process and its
 * machine. One writer per session at a time: a process `create`s or `claim`s a session and gets
 * a `Claim` with an epoch; every append carries it, and a claim by another process (a resume
 * after a crash or a deploy) moves the epoch on, so the old writer's appends are refused
 * (`StoreFenced`) instead of interleaving with the new one's.
 *
 * Backends: `memory` (here, for tests), SQLite and PostgreSQL (their own modules). Entries are
 * JSON values the journal defines; a store keeps them in order and never rewrites one.
 *
 * @since 0.1.0
 *
 * @packageDocumentation
 */
import { Context, Data, Effect, Layer, Option } from "effect"

/**
 * One committed change of a session. `seq` counts from 0 per session without gaps; `kind` and
 * `data` are the journal's (`data` must survive `JSON.stringify`).
 *
 * @since 0.1.0
 * @category models
 */
export interface JournalEntry {
  readonly seq: number
  readonly at: number
  readonly kind: string
  readonly data: unknown
}

/**
 * What a store knows of a session besides its entries. `key`: how a transport finds the session
 * again without its id (a LiveKit room and agent name). `epoch`: bumped by every claim.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionMeta {
  readonly id: string
  readonly key: string | undefined
  readonly owner: string
  readonly epoch: number
  readonly status: "live" | "ended"
  readonly createdAt: number
  readonly updatedAt: number
}

/**
 * The right to append to one session, held by one writer. `nextSeq`: the `seq` its next entry
 * gets.
 *
 * @since 0.1.0
 * @category models
 */
export interface Claim {
  readonly id: string
  readonly owner: string
  readonly epoch: number
  nextSeq: number
}

/**
 * A session as stored: its meta and every entry in order.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredSession {
  readonly meta: SessionMeta
  readonly entries: ReadonlyArray<JournalEntry>
}

/**
 * The store failed (I/O, a broken connection, a constraint). `reason` says which operation.
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreError extends Data.TaggedError("StoreError")<{
  readonly operation: "create" | "claim" | "append" | "load" | "find" | "end" | "list" | "open"
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * Another writer claimed the session after this one: its appends are refused, and it must stop
 * writing (the session now lives elsewhere).
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreFenced extends Data.TaggedError("StoreFenced")<{
  readonly id: string
  readonly epoch: number
  readonly current: number
  readonly message: string
}> {}

/**
 * No session with this id in the store.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionNotFound extends Data.TaggedError("SessionNotFound")<{
  readonly id: string
  readonly message: string
}> {}

/**
 * The operations every backend implements.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionStoreService {
  /** Records a new session (epoch 1, no entries) and claims it for `owner`. Fails if the id exists. */
  readonly create: (options: {
    readonly id: string
    readonly owner: string
    readonly key?: string | undefined
  }) => Effect.Effect<Claim, StoreError>
  /** Takes the session over for `owner` (epoch + 1), returning the claim and the entries so far. */
  readonly claim: (id: string, owner: string) => Effect.Effect<
    { readonly claim: Claim; readonly session: StoredSession },
    StoreError | SessionNotFound
  >
  /**
   * Appends entries atomically, numbered from `claim.nextSeq` (which it advances); refused with
   * `StoreFenced` when another claim came after this one.
   */
  readonly append: (claim: Claim, entries: ReadonlyArray<Omit<JournalEntry, "seq">>) => Effect.Effect<
    void,
    StoreError | StoreFenced
  >
  readonly load: (id: string) => Effect.Effect<Option.Option<StoredSession>, StoreError>
  /** The live session recorded under `key`, if any (the newest when several). */
  readonly findByKey: (key: string) => Effect.Effect<Option.Option<SessionMeta>, StoreError>
  /** Marks the session ended (it is no longer resumable); refused when fenced. */
  readonly end: (claim: Claim) => Effect.Effect<void, StoreError | StoreFenced>
  readonly list: (options?: { readonly status?: "live" | "ended" }) => Effect.Effect<
    ReadonlyArray<SessionMeta>,
    StoreError
  >
}

/**
 * The session store service: provide a backend's `layer` to make sessions durable.
 *
 * @since 0.1.0
 * @category services
 */
export class SessionStore extends Context.Service<SessionStore, SessionStoreService>()("baton/SessionStore") {}

/**
 * The refusal of `claim`'s write once another writer's claim moved the epoch to `current`: the
 * same error from every backend.
 *
 * @since 0.1.0
 * @category errors
 */
export const fenced = (claim: Claim, current: number): StoreFenced =>
  new StoreFenced({
    id: claim.id,
    epoch: claim.epoch,
    current,
    message: `session ${claim.id} was claimed by another writer (epoch ${current}, this one holds ${claim.epoch})`
  })

/**
 * Each entry's `data` as JSON text (`null` for `undefined`), or the `StoreError` of the first
 * that has no JSON form (a `bigint`, a cycle): every backend encodes the whole append before it
 * stores any of it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeEntries = (
  claim: Claim,
  entries: ReadonlyArray<Omit<JournalEntry, "seq">>
): Array<string> | StoreError => {
  const encoded: Array<string> = []
  for (const [i, entry] of entries.entries()) {
    try {
      const text: string | undefined = JSON.stringify(entry.data ?? null)
      if (text === undefined) throw new Error(`a ${typeof entry.data} is not JSON`)
      encoded.push(text)
    } catch (cause) {
      return new StoreError({
        operation: "append",
        message: `entry ${i} (${entry.kind}) of session ${claim.id} has no JSON form: ` +
          `${cause instanceof Error ? cause.message : String(cause)}; nothing of this append was stored`,
        cause
      })
    }
  }
  return encoded
}

/**
 * A store in this process's memory: for tests and for one process that needs resume across
 * reconnects only (nothing survives the process).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (now: () => number = Date.now): SessionStoreService => {
  const sessions = new Map<string, { meta: SessionMeta; entries: Array<JournalEntry> }>()
  const get = (id: string) => sessions.get(id)
  return {
    create: ({ id, owner, key }) =>
      Effect.suspend(() => {
        if (sessions.has(id)) {
          return Effect.fail(new StoreError({ operation: "create", message: `session ${id} already exists` }))
        }
        const at = now()
        sessions.set(id, {
          meta: { id, key, owner, epoch: 1, status: "live", createdAt: at, updatedAt: at },
          entries: []
        })
        return Effect.succeed({ id, owner, epoch: 1, nextSeq: 0 })
      }),
    claim: (id, owner) =>
      Effect.suspend(() => {
        const found = get(id)
        if (!found) return Effect.fail(new SessionNotFound({ id, message: `no session ${id} in the store` }))
        found.meta = { ...found.meta, owner, epoch: found.meta.epoch + 1, updatedAt: now() }
        const claim: Claim = { id, owner, epoch: found.meta.epoch, nextSeq: found.entries.length }
        return Effect.succeed({ claim, session: { meta: found.meta, entries: found.entries.slice() } })
      }),
    append: (claim, entries) =>
      Effect.suspend((): Effect.Effect<void, StoreError | StoreFenced> => {
        const found = get(claim.id)
        if (!found) return Effect.fail(new StoreError({ operation: "append", message: `no session ${claim.id}` }))
        if (found.meta.epoch !== claim.epoch) return Effect.fail(fenced(claim, found.meta.epoch))
        // A JSON round trip, as the durable backends do: what comes back is what was stored. All
        // entries are encoded before any is kept, so one that cannot be fails the whole append.
        const encoded = encodeEntries(claim, entries)
        if (encoded instanceof StoreError) return Effect.fail(encoded)
        for (const [i, entry] of entries.entries()) {
          found.entries.push({ ...entry, seq: claim.nextSeq + i, data: JSON.parse(encoded[i]!) })
        }
        claim.nextSeq += entries.length
        found.meta = { ...found.meta, updatedAt: now() }
        return Effect.void
      }),
    load: (id) =>
      Effect.sync(() => {
        const found = get(id)
        return found ? Option.some({ meta: found.meta, entries: found.entries.slice() }) : Option.none()
      }),
    findByKey: (key) =>
      Effect.sync(() => {
        let best: SessionMeta | undefined
        for (const { meta } of sessions.values()) {
          if (meta.key === key && meta.status === "live" && (!best || meta.createdAt >= best.createdAt)) best = meta
        }
        return Option.fromNullishOr(best)
      }),
    end: (claim) =>
      Effect.suspend((): Effect.Effect<void, StoreError | StoreFenced> => {
        const found = get(claim.id)
        if (!found) return Effect.fail(new StoreError({ operation: "end", message: `no session ${claim.id}` }))
        if (found.meta.epoch !== claim.epoch) return Effect.fail(fenced(claim, found.meta.epoch))
        found.meta = { ...found.meta, status: "ended", updatedAt: now() }
        return Effect.void
      }),
    list: (options) =>
      Effect.sync(() =>
        [...sessions.values()].map((s) => s.meta).filter((m) => options?.status === undefined || m.status === options.status)
      )
  }
}

/**
 * A fresh in-memory store.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<SessionStore> = Layer.sync(SessionStore, () => makeMemory())
