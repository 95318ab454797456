/**
 * The PostgreSQL backend of `SessionStore`: one database for a fleet, so any node can resume any
 * call (`BATON_STORE=postgres://user:password@host:5432/db`). Built on `@effect/sql-pg` (an
 * optional peer dependency: install it to use this module) and its connection pool, which
 * closes with the Layer's Scope.
 *
 * Tables `baton_sessions` and `baton_entries` (prefixed: the database is often the
 * application's own), created on first use under an advisory lock so that nodes starting
 * together do not race. Fencing is one row lock: an append is one statement (so one round trip
 * and one transaction) whose `UPDATE baton_sessions ... WHERE id = $1 AND epoch = $2` feeds its
 * INSERT, which adds rows only when that updated one; a claim's `epoch = epoch + 1` takes the same row lock, so a claim and an append are
 * ordered, and the loser of the race sees the winner's write.
 *
 * The URL's password stays `Redacted`: error messages name the host, port and database only.
 *
 * @since 0.1.0
 *
 * @packageDocumentation
 */
import { Effect, Layer, Option, Redacted, type Scope } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { importPeer } from "../layers/rtc/RtcNode.ts"
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
  StoreFenced
} from "./SessionStore.ts"

/**
 * How the PostgreSQL store connects.
 *
 * @since 0.1.0
 * @category models
 */
export interface PostgresOptions {
  /** Most connections the pool opens. Default 10. */
  readonly maxConnections?: number
  /** How long a connection attempt may take before the store fails. Default 10 s. */
  readonly connectTimeoutMs?: number
  /** The clock of `createdAt` and `updatedAt`. Default `Date.now`. */
  readonly now?: () => number
}

const schema = [
  `CREATE TABLE IF NOT EXISTS baton_sessions (
    id text PRIMARY KEY,
    n bigint GENERATED ALWAYS AS IDENTITY,
    key text,
    owner text NOT NULL,
    epoch integer NOT NULL,
    status text NOT NULL CHECK (status IN ('live', 'ended')),
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
  )`,
  `CREATE INDEX IF NOT EXISTS baton_sessions_live_by_key ON baton_sessions (key, created_at DESC, n DESC)
    WHERE status = 'live'`,
  `CREATE INDEX IF NOT EXISTS baton_sessions_by_status ON baton_sessions (status, created_at, n)`,
  `CREATE TABLE IF NOT EXISTS baton_entries (
    session_id text NOT NULL,
    seq integer NOT NULL,
    at bigint NOT NULL,
    kind text NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (session_id, seq)
  )`
]

/** Any number the lock of the schema's creation is known by (the bytes of "baton"). */
const schemaLock = 0x6261746f6e

interface SessionRow {
  readonly id: string
  readonly key: string | null
  readonly owner: string
  readonly epoch: number
  readonly status: "live" | "ended"
  readonly created_at: number | bigint | string
  readonly updated_at: number | bigint | string
}

interface EntryRow {
  readonly seq: number
  readonly at: number | bigint | string
  readonly kind: string
  readonly data: string
}

const toMeta = (row: SessionRow): SessionMeta => ({
  id: row.id,
  key: row.key ?? undefined,
  owner: row.owner,
  epoch: Number(row.epoch),
  status: row.status,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at)
})

const toEntry = (row: EntryRow): JournalEntry => ({
  seq: Number(row.seq),
  at: Number(row.at),
  kind: row.kind,
  data: JSON.parse(row.data)
})

const sessionColumns = "id, key, owner, epoch, status, created_at, updated_at"

/** Where the store is, for messages: the URL without its password. */
const describeTarget = (url: Redacted.Redacted<string>): string => {
  try {
    const parsed = new URL(Redacted.value(url))
    return `${parsed.username ? `${decodeURIComponent(parsed.username)}@` : ""}${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`
  } catch {
    return "(an unparsable URL)"
  }
}

const storeError = (operation: StoreError["operation"], what: string) => (cause: SqlError) =>
  new StoreError({ operation, message: `${what}: ${cause.message}`, cause })


/**
 * Builds the store over a `SqlClient` for PostgreSQL, creating its tables if missing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromClient = (
  sql: SqlClient,
  now: () => number = Date.now
): Effect.Effect<SessionStoreService, SqlError> =>
  Effect.gen(function*() {
    yield* sql.withTransaction(
      Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(${schemaLock})`
        for (const statement of schema) yield* sql.unsafe(statement)
      })
    )

    /** The refusal of a writer whose claim no longer holds: fenced, or the session is gone. */
    const refuseUnheld = (claim: Claim, operation: "append" | "end") =>
      Effect.flatMap(
        sql<{ epoch: number }>`SELECT epoch FROM baton_sessions WHERE id = ${claim.id}`,
        (rows): Effect.Effect<never, StoreError | StoreFenced> =>
          rows[0]
            ? Effect.fail(fenced(claim, Number(rows[0].epoch)))
            : Effect.fail(new StoreError({ operation, message: `no session ${claim.id} in the store` }))
      )

    const service: SessionStoreService = {
      create: ({ id, owner, key }) => {
        const at = now()
        return sql`INSERT INTO baton_sessions (id, key, owner, epoch, status, created_at, updated_at)
          VALUES (${id}, ${key ?? null}, ${owner}, 1, 'live', ${at}, ${at})`.pipe(
          Effect.as({ id, owner, epoch: 1, nextSeq: 0 }),
          Effect.mapError((error) =>
            error.reason._tag === "UniqueViolation"
              ? new StoreError({ operation: "create", message: `session ${id} already exists`, cause: error })
              : storeError("create", `could not record session ${id}`)(error)
          )
        )
      },
      // Two statements, not one: the SELECT of the entries must see an append that held the row
      // lock while the UPDATE waited for it, and under READ COMMITTED only a later statement's
      // snapshot does (one statement's join would read the entries as of its start).
      claim: (id, owner) =>
        sql.withTransaction(
          Effect.gen(function*() {
            const rows = yield* sql<SessionRow>`UPDATE baton_sessions SET epoch = epoch + 1, owner = ${owner},
              updated_at = ${now()} WHERE id = ${id} RETURNING ${sql.unsafe(sessionColumns)}`
            const row = rows[0]
            if (!row) return yield* new SessionNotFound({ id, message: `no session ${id} in the store` })
            const entries = yield* sql<EntryRow>`SELECT seq, at, kind, data FROM baton_entries
              WHERE session_id = ${id} ORDER BY seq`
            const meta = toMeta(row)
            return {
              claim: { id, owner, epoch: meta.epoch, nextSeq: entries.length },
              session: { meta, entries: entries.map(toEntry) }
            }
          })
        ).pipe(Effect.mapError((error) =>
          error._tag === "SqlError" ? storeError("claim", `could not claim session ${id}`)(error) : error
        )),
      append: (claim, entries) => {
        const encoded = encodeEntries(claim, entries)
        if (encoded instanceof StoreError) return Effect.fail(encoded)
        // One statement, so one round trip and its own transaction: the UPDATE checks the epoch
        // and takes the session's row lock (a claim in flight makes it wait, then match nothing),
        // and the INSERT adds the rows only for a session it matched.
        const values = sql.csv(entries.map((entry, i) =>
          sql`(${claim.nextSeq + i}::integer, ${entry.at}::bigint, ${entry.kind}::text, ${encoded[i]!}::text)`
        ))
        const held = entries.length === 0
          ? sql`UPDATE baton_sessions SET updated_at = ${now()}
              WHERE id = ${claim.id} AND epoch = ${claim.epoch} RETURNING epoch`
          : sql`WITH held AS (
              UPDATE baton_sessions SET updated_at = ${now()}
              WHERE id = ${claim.id} AND epoch = ${claim.epoch} RETURNING id
            )
            INSERT INTO baton_entries (session_id, seq, at, kind, data)
            SELECT held.id, v.seq, v.at, v.kind, v.data FROM held, (VALUES ${values}) AS v (seq, at, kind, data)
            RETURNING seq`
        return held.pipe(
          Effect.mapError(storeError("append", `could not append to session ${claim.id}`)),
          Effect.flatMap((rows) =>
            rows.length === 0 ? refuseUnheld(claim, "append") : Effect.void
          ),
          // Advanced only once committed: a refused or failed append leaves the claim as it was.
          Effect.tap(() => Effect.sync(() => void (claim.nextSeq += entries.length))),
          Effect.mapError((error) =>
            error._tag === "SqlError" ? storeError("append", `could not append to session ${claim.id}`)(error) : error
          )
        )
      },
      load: (id) =>
        Effect.gen(function*() {
          const rows = yield* sql<SessionRow>`SELECT ${sql.unsafe(sessionColumns)} FROM baton_sessions WHERE id = ${id}`
          const row = rows[0]
          if (!row) return Option.none()
          const entries = yield* sql<EntryRow>`SELECT seq, at, kind, data FROM baton_entries
            WHERE session_id = ${id} ORDER BY seq`
          return Option.some({ meta: toMeta(row), entries: entries.map(toEntry) })
        }).pipe(Effect.mapError(storeError("load", `could not load session ${id}`))),
      findByKey: (key) =>
        sql<SessionRow>`SELECT ${sql.unsafe(sessionColumns)} FROM baton_sessions
          WHERE key = ${key} AND status = 'live' ORDER BY created_at DESC, n DESC LIMIT 1`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toMeta)),
          Effect.mapError(storeError("find", `could not look up key ${key}`))
        ),
      end: (claim) =>
        sql`UPDATE baton_sessions SET status = 'ended', updated_at = ${now()}
          WHERE id = ${claim.id} AND epoch = ${claim.epoch} RETURNING epoch`.pipe(
          Effect.mapError(storeError("end", `could not end session ${claim.id}`)),
          Effect.flatMap((held) => (held.length === 0 ? refuseUnheld(claim, "end") : Effect.void)),
          Effect.mapError((error) =>
            error._tag === "SqlError" ? storeError("end", `could not end session ${claim.id}`)(error) : error
          )
        ),
      list: (options) =>
        (options?.status === undefined
          ? sql<SessionRow>`SELECT ${sql.unsafe(sessionColumns)} FROM baton_sessions ORDER BY created_at, n`
          : sql<SessionRow>`SELECT ${sql.unsafe(sessionColumns)} FROM baton_sessions
              WHERE status = ${options.status} ORDER BY created_at, n`).pipe(
          Effect.map((rows) => rows.map(toMeta)),
          Effect.mapError(storeError("list", "could not list sessions"))
        )
    }
    return service
  })

/**
 * Connects to the database at `url` (a pool, closed with the Scope) and creates the tables if
 * missing. A server that cannot be reached or refuses the login fails with a `StoreError`
 * (operation `open`) naming the host, port and database, never the password.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  url: Redacted.Redacted<string>,
  options: PostgresOptions = {}
): Effect.Effect<SessionStoreService, StoreError, Scope.Scope> => {
  const target = describeTarget(url)
  const opened = Effect.gen(function*() {
    // Loaded here, not at the top: @effect/sql-pg is an optional peer, and a program with another
    // store (or none) imports this module through the package's index without it.
    const { PgClient } = yield* importPeer(() => import("@effect/sql-pg"), "The PostgreSQL session store", [
      "@effect/sql-pg"
    ]).pipe(Effect.mapError((error) => new StoreError({ operation: "open", message: error.message })))
    const client = yield* PgClient.make({
      url,
      maxConnections: options.maxConnections ?? 10,
      connectTimeout: options.connectTimeoutMs ?? 10_000,
      applicationName: "baton"
    })
    return yield* fromClient(client, options.now)
  })
  return opened.pipe(
    Effect.provide(Reactivity.layer),
    Effect.mapError((error) =>
      error._tag === "StoreError" ? error : new StoreError({
        operation: "open",
        message: `cannot open the PostgreSQL session store at ${target}: ${error.message}; ` +
          "check BATON_STORE (postgres://user:password@host:port/database) and that the server is up",
        cause: error
      })
    )
  )
}

/**
 * The PostgreSQL store at `url` as a Layer; the pool closes with the Layer's Scope.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  url: Redacted.Redacted<string>,
  options?: PostgresOptions
): Layer.Layer<SessionStore, StoreError> => Layer.effect(SessionStore, make(url, options))
