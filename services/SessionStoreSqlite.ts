/**
 * The SQLite backend of `SessionStore`: one file on one machine, no server, so a process's
 * restarts and deploys lose no session (`BATON_STORE=sqlite:./baton.db`). Built on Node's own
 * `node:sqlite` (`DatabaseSync`): a call is a few microseconds of synchronous work on the event
 * loop, with no driver to install.
 *
 * Two tables: `sessions` (one row per session, its epoch and status) and `entries` (the journal,
 * keyed by `(session_id, seq)`). An append is one `BEGIN IMMEDIATE` transaction that checks the
 * claim's epoch and inserts; a claim bumps the epoch in one `UPDATE`. Several processes may open
 * the same file: SQLite's write lock orders them, and the epoch fences the one claimed over.
 *
 * @since 0.1.0
 *
 * @packageDocumentation
 */
import { Effect, Layer, Option, type Scope } from "effect"
import { createRequire } from "node:module"
import type { DatabaseSync, StatementSync } from "node:sqlite"
import {
  type Claim,
  type JournalEntry,
  SessionNotFound,
  type SessionMeta,
  encodeEntries,
  fenced,
  SessionStore,
  type SessionStoreService,
  StoreError,
  StoreFenced,
  type StoredSession
} from "./SessionStore.ts"

/**
 * How the SQLite store is opened.
 *
 * @since 0.1.0
 * @category models
 */
export interface SqliteOptions {
  /**
   * When a commit reaches the disk. `"NORMAL"` (the default): in WAL mode a commit is written to
   * the WAL without an fsync, so a process that crashes, restarts or is redeployed loses nothing,
   * and only a power loss or kernel crash can lose the last commits (the file stays consistent).
   * `DatabaseSync` runs on the event loop, so an fsync per append would stall every session of
   * the process (audio included) for the disk's flush time; a fleet that must survive a machine's
   * loss wants PostgreSQL anyway. `"FULL"`: an fsync per commit, for a single machine that must
   * keep every acknowledged entry through a power loss (see bench/README.md for its cost).
   */
  readonly synchronous?: "NORMAL" | "FULL"
  /**
   * How long a writer waits for another process's write lock before failing. Default 5000 ms.
   * The wait blocks the event loop (node:sqlite is synchronous); another writer holds the lock
   * for one append, microseconds, so in practice the wait is as short.
   */
  readonly busyTimeoutMs?: number
  /** The clock of `at`-less timestamps (`createdAt`, `updatedAt`). Default `Date.now`. */
  readonly now?: () => number
}

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  key TEXT,
  owner TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('live', 'ended')),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_key ON sessions (key, status, created_at);
CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (status);
CREATE TABLE IF NOT EXISTS entries (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at INTEGER NOT NULL,
  kind TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
`

/**
 * `node:sqlite`, loaded on first use (a program without a SQLite store never loads it). Node 22
 * prints "ExperimentalWarning: SQLite is an experimental feature" when the module loads; that
 * one warning is dropped (the require is synchronous, so no other warning can be emitted while
 * `emitWarning` is swapped), and every other warning goes through as before.
 */
const loadSqlite = (() => {
  let module: typeof import("node:sqlite") | undefined
  return (): typeof import("node:sqlite") => {
    if (module) return module
    const emitWarning = process.emitWarning
    process.emitWarning = function(this: typeof process, warning: string | Error, ...rest: Array<any>) {
      const text = typeof warning === "string" ? warning : warning.message
      if (/SQLite is an experimental feature/.test(text)) return
      return (emitWarning as (...args: Array<any>) => void).call(this, warning, ...rest)
    } as typeof process.emitWarning
    try {
      module = createRequire(import.meta.url)("node:sqlite") as typeof import("node:sqlite")
    } finally {
      process.emitWarning = emitWarning
    }
    return module
  }
})()

interface SessionRow {
  readonly id: string
  readonly key: string | null
  readonly owner: string
  readonly epoch: number
  readonly status: "live" | "ended"
  readonly created_at: number
  readonly updated_at: number
}

interface EntryRow {
  readonly seq: number
  readonly at: number
  readonly kind: string
  readonly data: string
}

const toMeta = (row: SessionRow): SessionMeta => ({
  id: row.id,
  key: row.key ?? undefined,
  owner: row.owner,
  epoch: row.epoch,
  status: row.status,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

const toEntry = (row: EntryRow): JournalEntry => ({ seq: row.seq, at: row.at, kind: row.kind, data: JSON.parse(row.data) })

const describe = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/** A store error whose message says what failed and, from SQLite's own words, why. */
const storeError = (operation: StoreError["operation"], what: string) => (cause: unknown) =>
  new StoreError({ operation, message: `${what}: ${describe(cause)}`, cause })


/** The statements the store runs, prepared once per connection. */
const prepare = (db: DatabaseSync) => {
  const statement = (sql: string): StatementSync => db.prepare(sql)
  return {
    insertSession: statement(
      "INSERT INTO sessions (id, key, owner, epoch, status, created_at, updated_at) VALUES (?, ?, ?, 1, 'live', ?, ?)"
    ),
    bumpEpoch: statement(
      "UPDATE sessions SET epoch = epoch + 1, owner = ?, updated_at = ? WHERE id = ? RETURNING *"
    ),
    touchIfHeld: statement("UPDATE sessions SET updated_at = ? WHERE id = ? AND epoch = ?"),
    endIfHeld: statement("UPDATE sessions SET status = 'ended', updated_at = ? WHERE id = ? AND epoch = ?"),
    epochOf: statement("SELECT epoch FROM sessions WHERE id = ?"),
    session: statement("SELECT * FROM sessions WHERE id = ?"),
    entries: statement("SELECT seq, at, kind, data FROM entries WHERE session_id = ? ORDER BY seq"),
    insertEntry: statement("INSERT INTO entries (session_id, seq, at, kind, data) VALUES (?, ?, ?, ?, ?)"),
    byKey: statement(
      "SELECT * FROM sessions WHERE key = ? AND status = 'live' ORDER BY created_at DESC, rowid DESC LIMIT 1"
    ),
    all: statement("SELECT * FROM sessions ORDER BY created_at, rowid"),
    byStatus: statement("SELECT * FROM sessions WHERE status = ? ORDER BY created_at, rowid")
  }
}

/** Runs `body` in one transaction that takes the write lock at once (no upgrade deadlock). */
const transaction = <A>(db: DatabaseSync, body: () => A): A => {
  db.exec("BEGIN IMMEDIATE")
  try {
    const result = body()
    db.exec("COMMIT")
    return result
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK")
    throw error
  }
}

/** Thrown inside a transaction to roll it back and fail with a typed error. */
class Refused {
  readonly error: StoreError | StoreFenced
  constructor(error: StoreError | StoreFenced) {
    this.error = error
  }
}

const openDatabase = (path: string, options: SqliteOptions): DatabaseSync => {
  const { DatabaseSync } = loadSqlite()
  const db = new DatabaseSync(path, { timeout: options.busyTimeoutMs ?? 5000 })
  try {
    db.exec("PRAGMA journal_mode = WAL")
    db.exec(`PRAGMA synchronous = ${options.synchronous === "FULL" ? "FULL" : "NORMAL"}`)
    db.exec(schema)
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

/**
 * Builds the store over an open database (its tables created if missing).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromDatabase = (db: DatabaseSync, now: () => number = Date.now): SessionStoreService => {
  const sql = prepare(db)
  const loadSession = (id: string): StoredSession | undefined => {
    const row = sql.session.get(id) as SessionRow | undefined
    if (!row) return undefined
    return { meta: toMeta(row), entries: (sql.entries.all(id) as unknown as Array<EntryRow>).map(toEntry) }
  }
  const refuseUnheld = (claim: Claim, operation: "append" | "end"): never => {
    const current = sql.epochOf.get(claim.id) as { epoch: number } | undefined
    throw new Refused(
      current
        ? fenced(claim, current.epoch)
        : new StoreError({ operation, message: `no session ${claim.id} in the store` })
    )
  }
  const attempt = <A>(operation: StoreError["operation"], what: string, body: () => A) =>
    Effect.try({ try: body, catch: storeError(operation, what) })
  /** As `attempt`, for a writer's operation that a later claim refuses. */
  const attemptHeld = <A>(operation: "append" | "end", what: string, body: () => A) =>
    Effect.try({
      try: body,
      catch: (error) => (error instanceof Refused ? error.error : storeError(operation, what)(error))
    })

  return {
    create: ({ id, owner, key }) =>
      Effect.try({
        try: () => {
          const at = now()
          sql.insertSession.run(id, key ?? null, owner, at, at)
          return { id, owner, epoch: 1, nextSeq: 0 }
        },
        catch: (error) =>
          /UNIQUE|PRIMARY KEY/.test(describe(error))
            ? new StoreError({ operation: "create", message: `session ${id} already exists`, cause: error })
            : storeError("create", `could not record session ${id}`)(error)
      }),
    claim: (id, owner) =>
      Effect.flatMap(
        attempt("claim", `could not claim session ${id}`, () =>
          transaction(db, () => {
            const row = sql.bumpEpoch.get(owner, now(), id) as SessionRow | undefined
            if (!row) return undefined
            const entries = (sql.entries.all(id) as unknown as Array<EntryRow>).map(toEntry)
            return { meta: toMeta(row), entries }
          })),
        (session): Effect.Effect<{ claim: Claim; session: StoredSession }, SessionNotFound> =>
          session
            ? Effect.succeed({
              claim: { id, owner, epoch: session.meta.epoch, nextSeq: session.entries.length },
              session
            })
            : Effect.fail(new SessionNotFound({ id, message: `no session ${id} in the store` }))
      ),
    append: (claim, entries) =>
      attemptHeld("append", `could not append to session ${claim.id}`, () => {
        const encoded = encodeEntries(claim, entries)
        if (encoded instanceof StoreError) throw new Refused(encoded)
        transaction(db, () => {
          if (sql.touchIfHeld.run(now(), claim.id, claim.epoch).changes === 0) refuseUnheld(claim, "append")
          for (const [i, entry] of entries.entries()) {
            sql.insertEntry.run(claim.id, claim.nextSeq + i, entry.at, entry.kind, encoded[i]!)
          }
        })
        // Advanced only once committed: a refused or failed append leaves the claim as it was.
        claim.nextSeq += entries.length
      }),
    load: (id) => attempt("load", `could not load session ${id}`, () => Option.fromNullishOr(loadSession(id))),
    findByKey: (key) =>
      attempt("find", `could not look up key ${key}`, () =>
        Option.map(Option.fromNullishOr(sql.byKey.get(key) as SessionRow | undefined), toMeta)),
    end: (claim) =>
      attemptHeld("end", `could not end session ${claim.id}`, () => {
        if (sql.endIfHeld.run(now(), claim.id, claim.epoch).changes === 0) refuseUnheld(claim, "end")
      }),
    list: (options) =>
      attempt("list", "could not list sessions", () =>
        ((options?.status === undefined ? sql.all.all() : sql.byStatus.all(options.status)) as unknown as Array<
          SessionRow
        >).map(toMeta))
  }
}

/**
 * Opens (or creates) the store at `path`, closed with the Scope. A path that cannot be opened
 * fails with a `StoreError` (operation `open`) that names it and what to check.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  path: string,
  options: SqliteOptions = {}
): Effect.Effect<SessionStoreService, StoreError, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.try({
        try: () => openDatabase(path, options),
        catch: (error) =>
          new StoreError({
            operation: "open",
            message: `cannot open the SQLite session store at ${path}: ${describe(error)}; ` +
              "check that its folder exists and is writable (BATON_STORE=sqlite:<path>)",
            cause: error
          })
      }),
      (db) => Effect.sync(() => db.isOpen && db.close())
    ),
    (db) => fromDatabase(db, options.now)
  )

/**
 * The SQLite store at `path` as a Layer; the database closes with the Layer's Scope.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (path: string, options?: SqliteOptions): Layer.Layer<SessionStore, StoreError> =>
  Layer.effect(SessionStore, make(path, options))
