/**
 * A `/twilio` transfer's record in the session store (issue 34 with issue 35), so that its
 * outcome reaches it wherever Twilio's callbacks land. Twilio posts a transfer's callbacks to
 * `BATON_PUBLIC_URL`, which a fleet's load balancer sends to any node; the transfer runs in the
 * node holding the session (resumed there after a crash, or claimed from another node). So the
 * node that starts a transfer records it (the session, the caller's call, the kind), every node
 * answers a callback from that record and appends the outcome it settles, and the node holding
 * the transfer reads the outcome from there.
 *
 * A record is one more journal in the store, under `twilio-transfer:<transfer id>` (keyed by its
 * session: `twilio-transfer-of:<session id>`), written with the store's own claims: whoever
 * appends claims it first, so concurrent callbacks on two nodes append one after the other (a
 * fenced append is tried again). Entries: `transfer` (the record, first), then `outcome`s; the
 * first `outcome` is the transfer's, later ones are ignored. The record is ended when its
 * transfer returns; a late callback still reads it.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Option, Schedule } from "effect"
import { type SessionStoreService, StoreError } from "../services/SessionStore.ts"
import type * as Transfer from "../src/Transfer.ts"

/**
 * What any node needs to answer a transfer's callbacks.
 *
 * @since 0.1.0
 * @category models
 */
export interface TransferInfo {
  readonly sessionId: string
  readonly callSid: string
  readonly kind: "Cold" | "Warm"
}

/**
 * A transfer as the store has it: its record and its outcome once one node settled it (and
 * whether the person accepted a warm transfer's briefing).
 *
 * @since 0.1.0
 * @category models
 */
export interface TransferRecord {
  readonly info: TransferInfo
  readonly outcome: Option.Option<Transfer.TransferOutcome>
  readonly accepted: boolean
}

/**
 * The records of one store.
 *
 * @since 0.1.0
 * @category models
 */
export interface TransferRecords {
  /** Records transfer `id` before the caller is moved (a callback may come at once, to any node). */
  readonly open: (id: string, info: TransferInfo) => Effect.Effect<void, StoreError>
  readonly read: (id: string) => Effect.Effect<Option.Option<TransferRecord>, StoreError>
  /** Appends an outcome; the record as it stands after (its outcome: the first one appended). */
  readonly settle: (id: string, outcome: Transfer.TransferOutcome, accepted: boolean) => Effect.Effect<TransferRecord, StoreError>
  /** The transfer returned: its record is no longer live (it can still be read). */
  readonly close: (id: string) => Effect.Effect<void, StoreError>
  /** The newest live transfer of a session, if any (its node may have died with it). */
  readonly ofSession: (sessionId: string) => Effect.Effect<Option.Option<{ readonly id: string; readonly record: TransferRecord }>, StoreError>
}

const PREFIX = "twilio-transfer:"
const keyOf = (sessionId: string) => `twilio-transfer-of:${sessionId}`

/** A fenced write tried too often, or a record not found, as the store failing for this record. */
const failed = (e: { readonly message: string }) => Effect.fail(new StoreError({ operation: "append", message: e.message }))

/** Each writer names itself; the store's epochs order them. */
const writer = (owner: string) => `${owner}:transfers`

const fold = (entries: ReadonlyArray<{ readonly kind: string; readonly data: unknown }>): Option.Option<TransferRecord> => {
  const first = entries[0]
  if (first === undefined || first.kind !== "transfer") return Option.none()
  const settled = entries.find((entry) => entry.kind === "outcome")?.data as
    | { readonly outcome: Transfer.TransferOutcome; readonly accepted: boolean }
    | undefined
  return Option.some({
    info: first.data as TransferInfo,
    outcome: Option.fromNullishOr(settled?.outcome),
    accepted: settled?.accepted ?? false
  })
}

/**
 * The transfer records kept in `store`, written as `owner` (this node).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (store: SessionStoreService, owner: string): TransferRecords => {
  const read = (id: string) => Effect.map(store.load(PREFIX + id), Option.flatMap((stored) => fold(stored.entries)))
  /** Claims the record and appends: a claim by another node in between fences the append, which is tried again. */
  const append = (id: string, kind: string, data: unknown) =>
    Effect.gen(function*() {
      const { claim } = yield* store.claim(PREFIX + id, writer(owner))
      yield* store.append(claim, [{ at: Date.now(), kind, data }])
    }).pipe(
      Effect.retry({ while: (e) => e._tag === "StoreFenced", schedule: Schedule.spaced("10 millis"), times: 5 }),
      Effect.catchTags({ StoreFenced: failed, SessionNotFound: failed })
    )
  return {
    open: (id, info) =>
      Effect.gen(function*() {
        const claim = yield* store.create({ id: PREFIX + id, owner: writer(owner), key: keyOf(info.sessionId) })
        yield* store.append(claim, [{ at: Date.now(), kind: "transfer", data: info }]).pipe(Effect.catchTag("StoreFenced", failed))
      }),
    read,
    settle: (id, outcome, accepted) =>
      Effect.andThen(
        append(id, "outcome", { outcome, accepted }),
        Effect.flatMap(read(id), Option.match({
          onNone: () => Effect.die(new Error(`transfer record ${id} vanished after an append`)),
          onSome: Effect.succeed
        }))
      ),
    close: (id) =>
      Effect.gen(function*() {
        const { claim } = yield* store.claim(PREFIX + id, writer(owner))
        yield* store.end(claim)
      }).pipe(Effect.catchTags({ StoreFenced: () => Effect.void, SessionNotFound: () => Effect.void })),
    ofSession: (sessionId) =>
      Effect.gen(function*() {
        const meta = yield* store.findByKey(keyOf(sessionId))
        if (Option.isNone(meta)) return Option.none()
        const id = meta.value.id.slice(PREFIX.length)
        return Option.map(yield* read(id), (record) => ({ id, record }))
      })
  }
}
