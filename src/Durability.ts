/**
 * Sessions that outlive their process: the options that make a session durable (a
 * `SessionStore` it journals to, a `Schema` for its userdata) and the typed errors of starting
 * and resuming one. What is journaled, when, and what a program sees after a resume:
 * docs/durability.md.
 *
 * @since 0.1.0
 *
 * @packageDocumentation
 */
import { Data, Exit, Schema } from "effect"
import type { SessionStoreService } from "../services/SessionStore.ts"

/**
 * How a session is journaled. `store`: where (a backend's service). `id`: the session's id in
 * the store (default: a fresh one). `key`: how a transport finds it again without its id.
 * `owner`: who writes (default: this process, `process.pid`-based). `userdataSchema`: required
 * when the session has userdata, which must encode with it (checked at start). `endOnClose`: a
 * session closed by the program is marked ended and is no longer resumable (default true).
 *
 * @since 0.1.0
 * @category models
 */
export interface DurableOptions<U> {
  readonly store: SessionStoreService
  readonly id?: string | undefined
  readonly key?: string | undefined
  readonly owner?: string | undefined
  readonly userdataSchema?: Schema.Codec<U, unknown> | undefined
  readonly endOnClose?: boolean | undefined
}

/**
 * The options `AgentSession.start` takes on top of its own: with a `store` (type `S`), the session
 * is durable and its start may fail with `UserdataRefused` or `StoreError`.
 *
 * @since 0.1.0
 * @category models
 */
export type StoreOptions<U, S extends SessionStoreService | undefined> = Partial<Omit<DurableOptions<U>, "store">> & {
  /** Makes the session durable: journaled to this store, resumable with `resume` (docs/durability.md). */
  readonly store?: S
}

/**
 * An agent the journal names is not among the agents given to `resume` (agents are found again
 * by name).
 *
 * @since 0.1.0
 * @category errors
 */
export class AgentNotFound extends Data.TaggedError("AgentNotFound")<{
  readonly id: string
  readonly agent: string
  readonly message: string
}> {}

/**
 * A durable session's userdata has no `Schema` (`no_schema`), does not encode with it
 * (`not_encodable`), or what the journal holds does not decode with it (`not_decodable`).
 *
 * @since 0.1.0
 * @category errors
 */
export class UserdataRefused extends Data.TaggedError("UserdataRefused")<{
  readonly reason: "no_schema" | "not_encodable" | "not_decodable"
  readonly message: string
}> {}

/**
 * The session cannot be resumed: the program ended it (`ended`), or its journal never recorded
 * its start (`not_started`).
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionNotResumable extends Data.TaggedError("SessionNotResumable")<{
  readonly id: string
  readonly reason: "ended" | "not_started"
  readonly message: string
}> {}

/**
 * The JSON form of `value` by `schema`, or why not.
 *
 * @since 0.1.0
 * @category utils
 */
export const encodeUserdata = <U>(schema: Schema.Codec<U, any>, value: unknown): { readonly json: unknown } | UserdataRefused => {
  const exit = Schema.encodeUnknownExit(Schema.toCodecJson(schema as Schema.Codec<U, any, never, never>))(value)
  return Exit.isSuccess(exit)
    ? { json: exit.value }
    : new UserdataRefused({ reason: "not_encodable", message: `the session's userdata does not encode with its Schema: ${String(exit.cause)}` })
}

/**
 * The userdata `json` holds, by `schema`, or why not.
 *
 * @since 0.1.0
 * @category utils
 */
export const decodeUserdata = <U>(schema: Schema.Codec<U, any>, json: unknown): { readonly value: U } | UserdataRefused => {
  const exit = Schema.decodeUnknownExit(Schema.toCodecJson(schema as Schema.Codec<U, any, never, never>))(json)
  return Exit.isSuccess(exit)
    ? { value: exit.value as U }
    : new UserdataRefused({ reason: "not_decodable", message: `the journal's userdata does not decode with the Schema given: ${String(exit.cause)}` })
}
