/**
 * What journaling a session costs, per backend of `SessionStore`: memory, SQLite (a file in a
 * temp folder, `synchronous=NORMAL` as the store opens it and `FULL` for comparison) and
 * PostgreSQL (a private cluster on 127.0.0.1 with fsync on, as test/setup/postgres.ts starts it,
 * and one with fsync off to show what a commit costs without the disk; skipped with a message
 * when PostgreSQL is not installed).
 *
 * A typical text turn appends 4 entries (the user's item, the agent's item, a tool call and its
 * output): measured as one append of 4 and as 4 appends of 1 (a journal that flushes each change
 * on its own), in µs per turn, and the bytes each turn adds on disk. Then resume: one session
 * claimed (with its entries) or loaded among 1,000 in the store, p50 / p99 (target: p99 under
 * 100 ms). Prints Markdown tables on stdout.
 *   npm run bench:journal            (TURNS=400 per row after WARMUP=40; SESSIONS=1000)
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { Effect, Redacted, type Scope } from "effect"
import { type JournalEntry, makeMemory, type SessionStoreService, type StoreError } from "../services/SessionStore.ts"
import * as SessionStorePostgres from "../services/SessionStorePostgres.ts"
import * as SessionStoreSqlite from "../services/SessionStoreSqlite.ts"
import { type PostgresCluster, startPostgres } from "../test/setup/postgres.ts"
import { envInt, log, quantile } from "./baton/stats.ts"

const TURNS = envInt("TURNS", 400)
const WARMUP = envInt("WARMUP", 40)
const SESSIONS = envInt("SESSIONS", 1000)
const TURNS_PER_SESSION = envInt("TURNS_PER_SESSION", 10)
const RESUMES = envInt("RESUMES", 300)

/** One text turn with a tool call, shaped like the journal's items (about 700 bytes of JSON). */
const turn = (n: number): ReadonlyArray<Omit<JournalEntry, "seq">> => {
  const at = 1_790_000_000_000 + n * 4000
  return [
    {
      at,
      kind: "item",
      data: {
        agent: "front",
        item: { _tag: "Message", id: `item_u${n}`, role: "user", content: [{ type: "text", text: `Hi, I'd like to book a table for ${n % 8 + 2} people tomorrow at seven, by the window if you can.` }] }
      }
    },
    {
      at: at + 900,
      kind: "item",
      data: {
        agent: "front",
        item: { _tag: "FunctionCall", id: `item_c${n}`, callId: `call_${n}`, name: "book_table", arguments: JSON.stringify({ people: n % 8 + 2, time: "19:00", date: "tomorrow", note: "window" }) }
      }
    },
    {
      at: at + 950,
      kind: "item",
      data: {
        agent: "front",
        item: { _tag: "FunctionCallOutput", id: `item_o${n}`, callId: `call_${n}`, name: "book_table", output: JSON.stringify({ ok: true, reference: `R-${100000 + n}`, table: 12 }), isError: false }
      }
    },
    {
      at: at + 1800,
      kind: "item",
      data: {
        agent: "front",
        item: { _tag: "Message", id: `item_a${n}`, role: "assistant", interrupted: false, content: [{ type: "text", text: `Done: a table for ${n % 8 + 2} tomorrow at seven by the window, reference R-${100000 + n}. Anything else?` }] }
      }
    }
  ]
}
const payloadBytes = turn(0).reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e.data)) + e.kind.length + 16, 0)

interface Backend {
  readonly name: string
  readonly open: Effect.Effect<SessionStoreService, StoreError, Scope.Scope>
  /** Bytes on disk now (after a checkpoint where that applies), or undefined for memory. */
  readonly bytes: () => number | undefined
}

const micro = (ms: number | null) => (ms === null ? "n/a" : `${Math.round(ms * 1000).toLocaleString("en-US")} µs`)
const milli = (ms: number | null) => (ms === null ? "n/a" : `${ms.toFixed(2)} ms`)

const timeTurns = (store: SessionStoreService, split: boolean) =>
  Effect.gen(function*() {
    const claim = yield* store.create({ id: `bench-${split ? "split" : "one"}-${Date.now()}`, owner: "bench" })
    const times: Array<number> = []
    for (let n = 0; n < WARMUP + TURNS; n++) {
      const entries = turn(n)
      const started = performance.now()
      if (split) for (const entry of entries) yield* store.append(claim, [entry])
      else yield* store.append(claim, entries)
      if (n >= WARMUP) times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    return { p50: quantile(times, 0.5), p99: quantile(times, 0.99) }
  })

const perTurn = (backend: Backend) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* backend.open
    const before = backend.bytes()
    const one = yield* timeTurns(store, false)
    const after = backend.bytes()
    const split = yield* timeTurns(store, true)
    const bytes = before === undefined || after === undefined ? undefined : (after - before) / (WARMUP + TURNS)
    log(`${backend.name}: one append ${micro(one.p50)}, four ${micro(split.p50)}, ${bytes?.toFixed(0)} B/turn`)
    return { name: backend.name, one, split, bytes }
  }))

const resume = (backend: Backend) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* backend.open
    const ids = Array.from({ length: SESSIONS }, (_, s) => `resume-${s}`)
    const filled = performance.now()
    // Filled one append per session, 8 sessions at a time (PostgreSQL commits each with an fsync).
    const entries = Array.from({ length: TURNS_PER_SESSION }, (_, t) => turn(t)).flat()
    yield* Effect.forEach(ids, (id, s) =>
      Effect.flatMap(store.create({ id, owner: "node-a", key: `room-${s}` }), (claim) => store.append(claim, entries)), {
      concurrency: 8,
      discard: true
    })
    log(`${backend.name}: ${SESSIONS} sessions of ${TURNS_PER_SESSION} turns stored in ${((performance.now() - filled) / 1000).toFixed(1)} s`)
    const claims: Array<number> = []
    const loads: Array<number> = []
    for (let i = 0; i < RESUMES; i++) {
      const id = ids[(i * 7919) % ids.length]!
      let started = performance.now()
      yield* store.load(id)
      loads.push(performance.now() - started)
      started = performance.now()
      const found = yield* store.findByKey(`room-${id.slice("resume-".length)}`)
      if (found._tag === "None") return yield* Effect.die(new Error(`no live session for ${id}`))
      yield* store.claim(found.value.id, `node-${i}`)
      claims.push(performance.now() - started)
    }
    claims.sort((a, b) => a - b)
    loads.sort((a, b) => a - b)
    return {
      name: backend.name,
      claim: { p50: quantile(claims, 0.5), p99: quantile(claims, 0.99) },
      load: { p50: quantile(loads, 0.5), p99: quantile(loads, 0.99) }
    }
  }))

const fileBytes = (path: string) => () => {
  let total = 0
  for (const suffix of ["", "-wal"]) {
    try {
      total += statSync(path + suffix).size
    } catch {
      // no WAL yet
    }
  }
  return total
}

/** SQLite's bytes once the WAL is folded into the file (what the journal keeps for good). */
const sqliteBytes = (path: string) => () => {
  const { DatabaseSync } = process.getBuiltinModule("node:sqlite")
  const db = new DatabaseSync(path)
  try {
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
  } finally {
    db.close()
  }
  return fileBytes(path)()
}

const psql = (cluster: PostgresCluster, query: string) =>
  execFileSync("psql", [cluster.url, "-Atc", query], { encoding: "utf8" }).trim()

const cpu = (() => {
  try {
    return readFileSync("/proc/cpuinfo", "utf8").match(/^model name\s*:\s*(.+)$/m)?.[1]?.trim() ?? os.cpus()[0]?.model
  } catch {
    return os.cpus()[0]?.model
  }
})()

const main = Effect.gen(function*() {
  const folder = mkdtempSync(join(os.tmpdir(), "baton-bench-journal-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(folder, { recursive: true, force: true })))
  const started = yield* Effect.result(Effect.tryPromise(() => startPostgres()))
  const cluster: PostgresCluster | undefined = started._tag === "Success" ? started.success : undefined
  const skipped = started._tag === "Failure" ? String((started.failure.cause as Error)?.message ?? started.failure) : undefined
  yield* Effect.addFinalizer(() => Effect.sync(() => cluster?.stop()))
  // A second cluster with fsync off: what is left of a commit without the disk (round trips, CPU).
  const noFsync = cluster ? yield* Effect.tryPromise(() => startPostgres({ fast: true })) : undefined
  yield* Effect.addFinalizer(() => Effect.sync(() => noFsync?.stop()))
  if (skipped) log(`PostgreSQL skipped: ${skipped}`)

  const sqlite = (name: string, file: string, synchronous: "NORMAL" | "FULL"): Backend => ({
    name,
    open: SessionStoreSqlite.make(join(folder, file), { synchronous }),
    bytes: sqliteBytes(join(folder, file))
  })
  /** WAL bytes per turn of each PostgreSQL backend (its WAL position before and after). */
  const wal = new Map<string, Array<number>>()
  const postgres = (name: string, c: PostgresCluster): Backend => ({
    name,
    open: SessionStorePostgres.make(Redacted.make(c.url)),
    bytes: () => {
      const [size, lsn] = psql(
        c,
        "SELECT pg_total_relation_size('baton_entries') + pg_total_relation_size('baton_sessions'), pg_current_wal_lsn() - '0/0'"
      ).split("|")
      wal.set(name, [...(wal.get(name) ?? []), Number(lsn)])
      return Number(size)
    }
  })
  const memory = makeMemory()
  const backends: Array<Backend> = [
    { name: "memory", open: Effect.succeed(memory), bytes: () => undefined },
    sqlite("SQLite, synchronous=NORMAL (default)", "normal.db", "NORMAL"),
    sqlite("SQLite, synchronous=FULL", "full.db", "FULL"),
    ...(cluster ? [postgres("PostgreSQL 127.0.0.1 (fsync on)", cluster)] : []),
    ...(noFsync ? [postgres("PostgreSQL 127.0.0.1 (fsync off: round trips only)", noFsync)] : [])
  ]

  const turns = []
  for (const backend of backends) turns.push(yield* perTurn(backend))
  const walPerTurn = (name: string) => {
    const at = wal.get(name)
    return at && at.length === 2 ? (at[1]! - at[0]!) / (WARMUP + TURNS) : undefined
  }

  const resumeBackends = [
    { ...backends[0]!, open: Effect.sync(() => makeMemory()) },
    sqlite("SQLite, synchronous=NORMAL (default)", "resume.db", "NORMAL"),
    ...backends.slice(3, 4)
  ]
  const resumes = []
  for (const backend of resumeBackends) resumes.push(yield* resume(backend))

  const lines = [
    `Machine: ${cpu}, ${os.cpus().length} cores, ${process.platform}-${process.arch}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, load average ${os.loadavg()[0]!.toFixed(1)} at the end.`,
    "",
    `### Journal cost per turn (${TURNS} turns after ${WARMUP} warm-up; a turn = 4 entries, ${payloadBytes} bytes of JSON and kinds)`,
    "",
    "| backend | one append of 4, p50 | p99 | four appends of 1, p50 | p99 | bytes on disk per turn |",
    "|---|---:|---:|---:|---:|---:|",
    ...turns.map((t) =>
      `| ${t.name} | ${micro(t.one.p50)} | ${micro(t.one.p99)} | ${micro(t.split.p50)} | ${micro(t.split.p99)} | ${
        t.bytes === undefined ? "n/a" : `${Math.round(t.bytes).toLocaleString("en-US")} B`
      }${walPerTurn(t.name) === undefined ? "" : ` (+ ${Math.round(walPerTurn(t.name)!).toLocaleString("en-US")} B of WAL)`} |`
    ),
    "",
    `### Resume: one session among ${SESSIONS.toLocaleString("en-US")} (${TURNS_PER_SESSION} turns, ${TURNS_PER_SESSION * 4} entries each), ${RESUMES} resumes`,
    "",
    "| backend | findByKey + claim (entries included), p50 | p99 | load, p50 | p99 |",
    "|---|---:|---:|---:|---:|",
    ...resumes.map((r) => `| ${r.name} | ${milli(r.claim.p50)} | ${milli(r.claim.p99)} | ${milli(r.load.p50)} | ${milli(r.load.p99)} |`),
    "",
    `Target: resume p99 under 100 ms with ${SESSIONS.toLocaleString("en-US")} sessions: ${
      resumes.every((r) => (r.claim.p99 ?? Infinity) < 100) ? "met" : "NOT met"
    } on every backend measured.${skipped ? ` PostgreSQL skipped: ${skipped}` : ""}`
  ]
  console.log(lines.join("\n"))
})

Effect.runPromise(Effect.scoped(main)).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
