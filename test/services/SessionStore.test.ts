/**
 * The SessionStore contract, run against each backend: memory, SQLite (a file in a temp folder)
 * and PostgreSQL (a private cluster on 127.0.0.1, started for this file; without PostgreSQL
 * installed the file fails with the install line). Each test works on sessions of its own
 * (ids with a fresh prefix), so the backends' tables can be shared by the tests of one file.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option, Redacted, type Scope } from "effect"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import {
  type JournalEntry,
  makeMemory,
  type SessionStoreService,
  StoreError,
  StoreFenced
} from "../../services/SessionStore.ts"
import * as SessionStorePostgres from "../../services/SessionStorePostgres.ts"
import * as SessionStoreSqlite from "../../services/SessionStoreSqlite.ts"
import { type PostgresCluster, startPostgres } from "../setup/postgres.ts"

let folder: string
let postgres: PostgresCluster | undefined
beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "baton-store-"))
  postgres = await startPostgres({ fast: true })
}, 60_000)
afterAll(() => {
  postgres?.stop()
  rmSync(folder, { recursive: true, force: true })
})

interface Backend {
  readonly name: string
  /** Whether two `open`s reach the same data (a file, a database), as two processes would. */
  readonly durable: boolean
  /** A store over this backend's data (the same data on every call in one test). */
  readonly open: (target: string) => Effect.Effect<SessionStoreService, StoreError, Scope.Scope>
}

const memoryStores = new Map<string, SessionStoreService>()
const backends: ReadonlyArray<Backend> = [
  {
    name: "memory",
    durable: false,
    open: (target) =>
      Effect.sync(() => {
        const found = memoryStores.get(target) ?? makeMemory()
        memoryStores.set(target, found)
        return found
      })
  },
  { name: "sqlite", durable: true, open: (target) => SessionStoreSqlite.make(join(folder, `${target}.db`)) },
  {
    name: "postgres",
    durable: true,
    open: () => SessionStorePostgres.make(Redacted.make(postgres!.url), { maxConnections: 4 })
  }
]

let counter = 0
/** A fresh prefix: this test's session ids and its SQLite file. */
const fresh = () => `t${process.pid}-${Date.now().toString(36)}-${counter++}`

const turn = (n: number): ReadonlyArray<Omit<JournalEntry, "seq">> => [
  { at: 1000 + n, kind: "user_item", data: { role: "user", text: `turn ${n}: café ☕ "quoted"\n` } },
  { at: 1001 + n, kind: "agent_item", data: { role: "assistant", text: `answer ${n}`, interrupted: false } },
  { at: 1002 + n, kind: "tool_call", data: { callId: `c${n}`, name: "lookup", args: { ids: [1, 2.5, -3], deep: { a: null } } } },
  { at: 1003 + n, kind: "tool_output", data: { callId: `c${n}`, output: [true, false, "", 0] } }
]

describe.each(backends)("SessionStore on $name", ({ durable, open }) => {
  it.live("create, append and load give back the same JSON values in order, with their meta", () =>
    Effect.gen(function*() {
      const id = fresh()
      const store = yield* open(id)
      const claim = yield* store.create({ id, owner: "node-a", key: "room-1" })
      assert.deepStrictEqual({ ...claim }, { id, owner: "node-a", epoch: 1, nextSeq: 0 })
      yield* store.append(claim, turn(0))
      yield* store.append(claim, [{ at: 5, kind: "note", data: undefined }])
      const loaded = Option.getOrThrow(yield* store.load(id))
      assert.deepStrictEqual(
        loaded.entries,
        [...turn(0), { at: 5, kind: "note", data: null }].map((entry, seq) => ({ ...entry, seq }))
      )
      assert.strictEqual(loaded.meta.id, id)
      assert.strictEqual(loaded.meta.key, "room-1")
      assert.strictEqual(loaded.meta.owner, "node-a")
      assert.strictEqual(loaded.meta.epoch, 1)
      assert.strictEqual(loaded.meta.status, "live")
      assert.isTrue(loaded.meta.updatedAt >= loaded.meta.createdAt)
      assert.isTrue(Option.isNone(yield* store.load(`${id}-missing`)))
    }))

  it.live("create refuses an id that is already recorded", () =>
    Effect.gen(function*() {
      const id = fresh()
      const store = yield* open(id)
      yield* store.create({ id, owner: "a" })
      const error = yield* Effect.flip(store.create({ id, owner: "b" }))
      assert.instanceOf(error, StoreError)
      assert.strictEqual(error.operation, "create")
      assert.include(error.message, "already exists")
    }))

  it.live("seq counts from 0 without gaps across appends and claims", () =>
    Effect.gen(function*() {
      const id = fresh()
      const store = yield* open(id)
      const first = yield* store.create({ id, owner: "a" })
      yield* store.append(first, turn(0).slice(0, 2))
      yield* store.append(first, [])
      yield* store.append(first, turn(1).slice(0, 3))
      assert.strictEqual(first.nextSeq, 5)
      const { claim, session } = yield* store.claim(id, "b")
      assert.strictEqual(claim.nextSeq, 5)
      assert.strictEqual(session.entries.length, 5)
      yield* store.append(claim, turn(2))
      const loaded = Option.getOrThrow(yield* store.load(id))
      assert.deepStrictEqual(loaded.entries.map((e) => e.seq), [0, 1, 2, 3, 4, 5, 6, 7, 8])
    }))

  it.live("a second claim fences the first writer: its append and end are refused and store nothing", () =>
    Effect.gen(function*() {
      const id = fresh()
      const store = yield* open(id)
      const first = yield* store.create({ id, owner: "a", key: id })
      yield* store.append(first, turn(0))
      const { claim: second, session } = yield* store.claim(id, "b")
      assert.strictEqual(second.epoch, 2)
      assert.strictEqual(session.meta.owner, "b")
      assert.strictEqual(session.meta.epoch, 2)

      const refused = yield* Effect.flip(store.append(first, turn(1)))
      assert.instanceOf(refused, StoreFenced)
      assert.deepStrictEqual([refused.id, refused.epoch, (refused as StoreFenced).current], [id, 1, 2])
      assert.strictEqual(first.nextSeq, 4)
      const ended = yield* Effect.flip(store.end(first))
      assert.instanceOf(ended, StoreFenced)

      const loaded = Option.getOrThrow(yield* store.load(id))
      assert.strictEqual(loaded.entries.length, 4)
      assert.strictEqual(loaded.meta.status, "live")
      yield* store.append(second, turn(1))
      assert.strictEqual(Option.getOrThrow(yield* store.load(id)).entries.length, 8)
    }))

  it.live("claiming a session that is not in the store is SessionNotFound", () =>
    Effect.gen(function*() {
      const store = yield* open(fresh())
      const error = yield* Effect.flip(store.claim(fresh(), "a"))
      assert.strictEqual(error._tag, "SessionNotFound")
    }))

  it.live("findByKey gives the newest live session of a key, never an ended one", () =>
    Effect.gen(function*() {
      const prefix = fresh()
      const store = yield* open(prefix)
      const key = `${prefix}-room`
      const older = yield* store.create({ id: `${prefix}-1`, owner: "a", key })
      yield* Effect.sleep("5 millis")
      const newer = yield* store.create({ id: `${prefix}-2`, owner: "a", key })
      yield* store.create({ id: `${prefix}-3`, owner: "a", key: `${key}-other` })
      assert.strictEqual(Option.getOrThrow(yield* store.findByKey(key)).id, newer.id)
      yield* store.end(newer)
      assert.strictEqual(Option.getOrThrow(yield* store.findByKey(key)).id, older.id)
      yield* store.end(older)
      assert.isTrue(Option.isNone(yield* store.findByKey(key)))
      assert.isTrue(Option.isNone(yield* store.findByKey(`${prefix}-nobody`)))
    }))

  it.live("end marks the session ended, and list filters sessions by status", () =>
    Effect.gen(function*() {
      const prefix = fresh()
      const store = yield* open(prefix)
      const a = yield* store.create({ id: `${prefix}-a`, owner: "n" })
      yield* store.create({ id: `${prefix}-b`, owner: "n" })
      yield* store.end(a)
      assert.strictEqual(Option.getOrThrow(yield* store.load(a.id)).meta.status, "ended")
      const mine = (metas: ReadonlyArray<{ readonly id: string }>) =>
        metas.map((m) => m.id).filter((id) => id.startsWith(prefix)).sort()
      assert.deepStrictEqual(mine(yield* store.list()), [`${prefix}-a`, `${prefix}-b`])
      assert.deepStrictEqual(mine(yield* store.list({ status: "ended" })), [`${prefix}-a`])
      assert.deepStrictEqual(mine(yield* store.list({ status: "live" })), [`${prefix}-b`])
    }))

  it.live("an append with an entry that has no JSON form fails as a whole: nothing stored, nextSeq kept", () =>
    Effect.gen(function*() {
      const id = fresh()
      const store = yield* open(id)
      const claim = yield* store.create({ id, owner: "a" })
      yield* store.append(claim, turn(0).slice(0, 1))
      const error = yield* Effect.flip(
        store.append(claim, [{ at: 1, kind: "ok", data: 1 }, { at: 2, kind: "bad", data: { n: 1n } }])
      )
      assert.instanceOf(error, StoreError)
      assert.include(error.message, "entry 1 (bad)")
      assert.strictEqual(claim.nextSeq, 1)
      assert.strictEqual(Option.getOrThrow(yield* store.load(id)).entries.length, 1)
      yield* store.append(claim, [{ at: 3, kind: "after", data: "x" }])
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load(id)).entries.map((e) => [e.seq, e.kind]), [
        [0, "user_item"],
        [1, "after"]
      ])
    }))

  it.live.skipIf(!durable)("an append the database refuses part-way (a second entry without a kind) stores none of it", () =>
    Effect.gen(function*() {
      const id = fresh()
      const store = yield* open(id)
      const claim = yield* store.create({ id, owner: "a" })
      const error = yield* Effect.flip(
        store.append(claim, [{ at: 1, kind: "ok", data: 1 }, { at: 2, kind: null as unknown as string, data: 2 }])
      )
      assert.instanceOf(error, StoreError)
      assert.strictEqual((error as StoreError).operation, "append")
      assert.strictEqual(claim.nextSeq, 0)
      assert.strictEqual(Option.getOrThrow(yield* store.load(id)).entries.length, 0)
      yield* store.append(claim, [{ at: 3, kind: "after", data: "x" }])
      assert.deepStrictEqual(Option.getOrThrow(yield* store.load(id)).entries.map((e) => e.seq), [0])
    }))

  it.live("a claim racing a writer's appends: every append that succeeded is in what the claim returned, the rest are fenced", () =>
    Effect.gen(function*() {
      const id = fresh()
      const writerStore = yield* open(id)
      const claimerStore = yield* open(id)
      const writer = yield* writerStore.create({ id, owner: "a" })
      const appended = yield* Effect.forkChild(
        Effect.gen(function*() {
          let n = 0
          while (true) {
            const exit = yield* Effect.exit(writerStore.append(writer, [{ at: n, kind: "tick", data: n }]))
            if (Exit.isFailure(exit)) return { n, exit }
            n++
            yield* Effect.yieldNow
          }
        })
      )
      yield* Effect.sleep("20 millis")
      const { session } = yield* claimerStore.claim(id, "b")
      const { n, exit } = yield* Fiber.join(appended)
      assert.strictEqual(session.entries.length, n)
      assert.isTrue(n > 0, "the writer appended before the claim")
      assert.isTrue(Exit.isFailure(exit) && exit.cause.reasons.some((r) => r._tag === "Fail" && r.error._tag === "StoreFenced"))
      assert.strictEqual(Option.getOrThrow(yield* claimerStore.load(id)).entries.length, n)
    }))

  it.live.skipIf(!durable)("two store instances on one database (two processes): the second's claim fences the first's writer", () =>
    Effect.gen(function*() {
      const id = fresh()
      const processA = yield* open(id)
      const processB = yield* open(id)
      const claimA = yield* processA.create({ id, owner: "process-a", key: id })
      yield* processA.append(claimA, turn(0))
      const { claim: claimB, session } = yield* processB.claim(id, "process-b")
      assert.deepStrictEqual(session.entries.map((e) => e.kind), turn(0).map((e) => e.kind))
      assert.strictEqual(claimB.epoch, 2)
      const refused = yield* Effect.flip(processA.append(claimA, turn(1)))
      assert.strictEqual(refused._tag, "StoreFenced")
      yield* processB.append(claimB, turn(1))
      const seenByA = Option.getOrThrow(yield* processA.load(id))
      assert.strictEqual(seenByA.meta.owner, "process-b")
      assert.deepStrictEqual(seenByA.entries.map((e) => e.seq), [0, 1, 2, 3, 4, 5, 6, 7])
      assert.strictEqual(Option.getOrThrow(yield* processA.findByKey(id)).epoch, 2)
    }))
})

/** Claims `id` from another Node process (a second node of the fleet), returning its epoch. */
const claimFromAnotherProcess = (store: string, id: string): number => {
  const script = `
    import { Effect, Redacted } from "effect"
    import * as Sqlite from ${JSON.stringify(new URL("../../services/SessionStoreSqlite.ts", import.meta.url).href)}
    import * as Postgres from ${JSON.stringify(new URL("../../services/SessionStorePostgres.ts", import.meta.url).href)}
    const store = process.env.STORE
    const open = store.startsWith("postgres") ? Postgres.make(Redacted.make(store)) : Sqlite.make(store)
    const { claim } = await Effect.runPromise(Effect.scoped(Effect.flatMap(open, (s) => s.claim(process.env.ID, "process-b"))))
    console.log(claim.epoch)`
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: new URL("../..", import.meta.url).pathname,
    env: { ...process.env, STORE: store, ID: id },
    encoding: "utf8"
  })
  assert.strictEqual(run.status, 0, run.stderr)
  return Number(run.stdout.trim())
}

describe.each([
  { name: "sqlite", store: () => join(folder, "processes.db") },
  { name: "postgres", store: () => postgres!.url }
])("SessionStore on $name, two processes", ({ name, store }) => {
  it.live("a claim from another process fences this one's writer, whose entries the other got", () =>
    Effect.gen(function*() {
      const id = fresh()
      const here = yield* (name === "sqlite"
        ? SessionStoreSqlite.make(store())
        : SessionStorePostgres.make(Redacted.make(store())))
      const claim = yield* here.create({ id, owner: "process-a" })
      yield* here.append(claim, turn(0))
      assert.strictEqual(claimFromAnotherProcess(store(), id), 2)
      const refused = yield* Effect.flip(here.append(claim, turn(1)))
      assert.strictEqual(refused._tag, "StoreFenced")
      const loaded = Option.getOrThrow(yield* here.load(id))
      assert.deepStrictEqual([loaded.meta.owner, loaded.meta.epoch, loaded.entries.length], ["process-b", 2, 4])
    }))
})

describe("SessionStore on sqlite", () => {
  it.live("reopening the file finds every session, entry, epoch and status", () =>
    Effect.gen(function*() {
      const path = join(folder, `${fresh()}.db`)
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStoreSqlite.make(path)
        const a = yield* store.create({ id: "a", owner: "n1", key: "room" })
        yield* store.append(a, turn(0))
        const b = yield* store.create({ id: "b", owner: "n1" })
        yield* store.append(b, turn(1))
        yield* store.end(b)
        yield* store.claim("a", "n2")
      }))
      const reopened = yield* SessionStoreSqlite.make(path)
      const a = Option.getOrThrow(yield* reopened.load("a"))
      assert.deepStrictEqual(a.entries, turn(0).map((e, seq) => ({ ...e, seq })))
      assert.deepStrictEqual([a.meta.owner, a.meta.epoch, a.meta.status, a.meta.key], ["n2", 2, "live", "room"])
      const b = Option.getOrThrow(yield* reopened.load("b"))
      assert.deepStrictEqual(b.entries, turn(1).map((e, seq) => ({ ...e, seq })))
      assert.strictEqual(b.meta.status, "ended")
      const { claim } = yield* reopened.claim("a", "n3")
      assert.deepStrictEqual([claim.epoch, claim.nextSeq], [3, 4])
    }))

  it.live("a path that cannot be opened fails with StoreError open, naming the path and what to check", () =>
    Effect.gen(function*() {
      const path = join(folder, "no-such-folder", "baton.db")
      const error = yield* Effect.flip(SessionStoreSqlite.make(path))
      assert.strictEqual(error.operation, "open")
      assert.include(error.message, path)
      assert.include(error.message, "writable")
    }))

  it("loading the store prints no ExperimentalWarning (node:sqlite on Node 22/24)", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-sqlite-warn-"))
    try {
      const script = `
        import { Effect } from "effect"
        import * as S from ${JSON.stringify(new URL("../../services/SessionStoreSqlite.ts", import.meta.url).href)}
        await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
          const store = yield* S.make(${JSON.stringify(join(dir, "w.db"))})
          yield* store.create({ id: "x", owner: "o" })
        })))
        process.emitWarning("another warning still shows")
        console.log("opened")`
      const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
        cwd: new URL("../..", import.meta.url).pathname,
        encoding: "utf8"
      })
      assert.strictEqual(run.stdout.trim(), "opened", run.stderr)
      assert.notInclude(run.stderr, "ExperimentalWarning")
      assert.notInclude(run.stderr, "SQLite")
      assert.include(run.stderr, "another warning still shows")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("SessionStore on postgres", () => {
  it.live("a refused login names the host and database, never the password", () =>
    Effect.gen(function*() {
      const cluster = postgres!
      const wrong = cluster.url.replace(cluster.password, `${cluster.password}-wrong`)
      const error = yield* Effect.flip(SessionStorePostgres.make(Redacted.make(wrong), { connectTimeoutMs: 5000 }))
      assert.strictEqual(error.operation, "open")
      assert.include(error.message, `127.0.0.1:${cluster.port}/baton`)
      const everything = `${error.message} ${String(error.cause)} ${JSON.stringify(error)}`
      assert.notInclude(everything, cluster.password)
    }))
})
