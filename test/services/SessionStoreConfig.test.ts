/**
 * SessionStoreConfig: `BATON_STORE` names the backend (`memory`, `sqlite:<path>`,
 * `postgres://` / `postgresql://`); anything else is a clear error that does not echo a URL's
 * password; unset means memory.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SessionStore } from "../../services/SessionStore.ts"
import * as SessionStoreConfig from "../../services/SessionStoreConfig.ts"
import * as SessionStoreSqlite from "../../services/SessionStoreSqlite.ts"

describe("SessionStoreConfig", () => {
  it.effect("parse reads memory, sqlite:<path> and postgres URLs, keeping the URL redacted", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* SessionStoreConfig.parse("memory"), { _tag: "Memory" })
      assert.deepStrictEqual(yield* SessionStoreConfig.parse("sqlite:./baton.db"), { _tag: "Sqlite", path: "./baton.db" })
      assert.deepStrictEqual(yield* SessionStoreConfig.parse("sqlite:///var/lib/baton.db"), {
        _tag: "Sqlite",
        path: "/var/lib/baton.db"
      })
      for (const url of ["postgres://u:secret@db:5432/app", "postgresql://u:secret@db/app"]) {
        const location = yield* SessionStoreConfig.parse(url)
        assert.strictEqual(location._tag, "Postgres")
        if (location._tag !== "Postgres") return
        assert.strictEqual(Redacted.value(location.url), url)
        assert.notInclude(String(location.url), "secret")
      }
    }))

  it.effect("anything else is a StoreError that says what is expected and does not echo a URL", () =>
    Effect.gen(function*() {
      for (const value of ["", "redis://u:secret@host/0", "sqlite:", "./baton.db", "mysql://root:secret@db/x"]) {
        const error = yield* Effect.flip(SessionStoreConfig.parse(value))
        assert.strictEqual(error.operation, "open")
        assert.include(error.message, "sqlite:<path>")
        assert.notInclude(error.message, "secret")
      }
    }))

  it.live("fromUrl builds a working store from sqlite:<path>, and layerConfig defaults to memory", () =>
    Effect.gen(function*() {
      const folder = mkdtempSync(join(tmpdir(), "baton-store-config-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(folder, { recursive: true, force: true })))
      const path = join(folder, "baton.db")
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create({ id: "s", owner: "o" })
      }).pipe(Effect.provide(SessionStoreConfig.fromUrl(`sqlite:${path}`)))
      // The layer closed its database; the file kept the session.
      const reopened = yield* SessionStoreSqlite.make(path)
      assert.isTrue(Option.isSome(yield* reopened.load("s")))

      const memory = yield* Effect.gen(function*() {
        const store = yield* SessionStore
        yield* store.create({ id: "m", owner: "o" })
        return yield* store.list()
      }).pipe(
        Effect.provide(
          SessionStoreConfig.layerConfig.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({}))))
        )
      )
      assert.deepStrictEqual(memory.map((m) => m.id), ["m"])
      const refused = yield* Effect.flip(
        Effect.provide(Effect.asVoid(SessionStore), SessionStoreConfig.fromUrl("ftp://x"))
      )
      assert.strictEqual(refused._tag, "StoreError")
    }))
})
