/**
 * Which `SessionStore` backend a deployment uses, from one string (`BATON_STORE`): `memory`,
 * `sqlite:<path>` or a `postgres://` / `postgresql://` URL. The URL is taken `Redacted`, so its
 * password is never printed by the store, its errors or its logs.
 *
 * @since 0.1.0
 *
 * @packageDocumentation
 */
import { Config, Effect, Layer, Redacted } from "effect"
import { layerMemory, SessionStore, StoreError } from "./SessionStore.ts"
import * as SessionStorePostgres from "./SessionStorePostgres.ts"
import * as SessionStoreSqlite from "./SessionStoreSqlite.ts"

/**
 * A parsed `BATON_STORE`.
 *
 * @since 0.1.0
 * @category models
 */
export type StoreLocation =
  | { readonly _tag: "Memory" }
  | { readonly _tag: "Sqlite"; readonly path: string }
  | { readonly _tag: "Postgres"; readonly url: Redacted.Redacted<string> }

const expected = "expected `memory`, `sqlite:<path>` (e.g. sqlite:./baton.db) or postgres://user:password@host:5432/db"

/**
 * Reads a `BATON_STORE` value; anything else is a `StoreError` (operation `open`) that says what
 * is expected. The value is not echoed back when it looks like a URL (it may hold a password).
 *
 * @since 0.1.0
 * @category parsing
 */
export const parse = (value: string): Effect.Effect<StoreLocation, StoreError> => {
  const text = value.trim()
  if (text === "memory") return Effect.succeed({ _tag: "Memory" })
  if (text.startsWith("sqlite:")) {
    const path = text.slice("sqlite:".length).replace(/^\/\/(?=\/)/, "")
    return path === ""
      ? Effect.fail(new StoreError({ operation: "open", message: `BATON_STORE=sqlite: has no path; ${expected}` }))
      : Effect.succeed({ _tag: "Sqlite", path })
  }
  if (/^postgres(ql)?:\/\//.test(text)) return Effect.succeed({ _tag: "Postgres", url: Redacted.make(text) })
  const shown = text.includes("://") ? `${text.slice(0, text.indexOf("://"))}://…` : JSON.stringify(text)
  return Effect.fail(new StoreError({ operation: "open", message: `BATON_STORE=${shown} is not a store; ${expected}` }))
}

/**
 * The Layer of the store `value` names (`memory`, `sqlite:<path>`, `postgres://...`).
 *
 * @since 0.1.0
 * @category layers
 */
export const fromUrl = (value: string): Layer.Layer<SessionStore, StoreError> =>
  Layer.unwrap(Effect.map(parse(value), layerFor))

/**
 * The Layer of a parsed location.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFor = (location: StoreLocation): Layer.Layer<SessionStore, StoreError> => {
  switch (location._tag) {
    case "Memory":
      return layerMemory
    case "Sqlite":
      return SessionStoreSqlite.layer(location.path)
    case "Postgres":
      return SessionStorePostgres.layer(location.url)
  }
}

/**
 * The store `BATON_STORE` names, `memory` when it is unset.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<SessionStore, StoreError | Config.ConfigError> = Layer.unwrap(
  Effect.gen(function*() {
    const value = yield* Config.Redacted("BATON_STORE").pipe(Config.withDefault(Redacted.make("memory")))
    return fromUrl(Redacted.value(value))
  })
)
