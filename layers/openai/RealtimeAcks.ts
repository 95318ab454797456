/**
 * Pending acknowledgements of pipelined realtime requests (seed 001, DESIGN rule 8).
 *
 * A request that the server acknowledges is registered *before* its frame is written, under its
 * client `event_id` (so an `error` naming that id can reject it) and under a key or in an ordered
 * channel (so the server's answer can resolve it). Every entry has a deadline: when it passes, the
 * entry fails with reason `timeout` and is REMOVED, so an acknowledgement that arrives later finds
 * nothing and is dropped with a debug log (the InvalidStateError of seed 001 cannot happen: a
 * Deferred is only ever completed through a live entry). Closing fails every entry with `closed`.
 *
 * The bookkeeping is synchronous (`*Unsafe`), to be called in the same synchronous block as the
 * socket write; the Effect-returning members log and arm timers.
 */
import { Deferred, Duration, Effect, type Scope } from "effect"
import { type Ack, RealtimeError } from "../../services/RealtimeModel.ts"

export interface PendingAck {
  /** For logs: what was asked (`session.update`, `conversation.item.create msg_1`). */
  readonly label: string
  readonly eventId: string
  readonly deferred: Deferred.Deferred<void, RealtimeError>
  /** Called (synchronously) when the server rejects the request. */
  readonly onReject?: (() => void) | undefined
}

interface Entry extends PendingAck {
  readonly key?: string | undefined
  readonly channel?: string | undefined
  readonly accept?: ((payload: unknown) => boolean) | undefined
}

export interface AckTracker {
  /** Registers an entry resolved by `resolveKeyUnsafe(key)`. Keys may repeat (first in, first out). */
  readonly registerKeyUnsafe: (
    label: string,
    eventId: string,
    key: string,
    onReject?: () => void
  ) => PendingAck
  /** Registers an entry of an ordered channel: the oldest entry whose `accept` takes the payload. */
  readonly registerOrderedUnsafe: (
    label: string,
    eventId: string,
    channel: string,
    accept: (payload: unknown) => boolean
  ) => PendingAck
  /** Forgets entries whose frame could not be written (no timeout, no log). */
  readonly unregisterUnsafe: (entries: ReadonlyArray<PendingAck>) => void
  /** Starts the deadline of these entries (one timer for the batch). */
  readonly arm: (entries: ReadonlyArray<PendingAck>) => Effect.Effect<void>
  /**
   * Succeeds the oldest entry of `key`. `"late"` when the key's entry already timed out (the ack
   * is dropped, with a debug log), `"unsolicited"` when the client never asked (e.g. an item the
   * server created itself).
   */
  readonly resolveKey: (key: string, what: string) => Effect.Effect<Resolution>
  /** Succeeds the oldest entry of `channel` that accepts `payload` (same results as `resolveKey`). */
  readonly resolveOrdered: (channel: string, payload: unknown, what: string) => Effect.Effect<Resolution>
  /** The pending entry of `key`, if any. */
  readonly pendingUnsafe: (key: string) => PendingAck | undefined
  /** Succeeds every entry of `channel`, and every keyed entry whose key satisfies `keys`. */
  readonly resolveAll: (channel: string | undefined, keys?: (key: string) => boolean) => Effect.Effect<void>
  /** Fails the entry registered under `eventId` with reason `rejected`; `false` when none. */
  readonly reject: (eventId: string, message: string) => Effect.Effect<boolean>
  /** Fails every pending entry (reason `closed` typically) and forgets them. */
  readonly failAll: (error: RealtimeError) => Effect.Effect<void>
  readonly pendingCount: () => number
}

export type Resolution = "resolved" | "late" | "unsolicited"

/** An `Ack` that succeeds when all entries succeed, failing with the first failure (in order). */
export const ackOf = (entries: ReadonlyArray<PendingAck>): Ack => ({
  await: Effect.forEach(entries, (entry) => Deferred.await(entry.deferred), { discard: true })
})

/** An `Ack` for a request the protocol never acknowledges: it succeeded once written. */
export const writtenAck: Ack = { await: Effect.void }

/** The tracker; timers run in `scope` (they die with the connection). */
export const makeAckTracker = (options: {
  readonly timeout: Duration.Input
  readonly scope: Scope.Scope
}): AckTracker => {
  const timeout = Duration.fromInputUnsafe(options.timeout)
  const byEvent = new Map<string, Entry>()
  const byKey = new Map<string, Array<Entry>>()
  const channels = new Map<string, Array<Entry>>()
  /** Keys and channels of entries that timed out: what a late ack can still name. */
  const expiredKeys = new Set<string>()
  const expiredInChannel = new Map<string, number>()

  const forget = (entry: Entry) => {
    byEvent.delete(entry.eventId)
    if (entry.key !== undefined) {
      const list = byKey.get(entry.key)?.filter((e) => e !== entry) ?? []
      if (list.length === 0) byKey.delete(entry.key)
      else byKey.set(entry.key, list)
    }
    if (entry.channel !== undefined) {
      const list = channels.get(entry.channel)?.filter((e) => e !== entry) ?? []
      channels.set(entry.channel, list)
    }
  }

  const add = (entry: Entry): PendingAck => {
    byEvent.set(entry.eventId, entry)
    if (entry.key !== undefined) byKey.set(entry.key, [...(byKey.get(entry.key) ?? []), entry])
    if (entry.channel !== undefined) channels.set(entry.channel, [...(channels.get(entry.channel) ?? []), entry])
    return entry
  }

  const late = (what: string) =>
    Effect.logDebug(`realtime: late acknowledgement dropped (${what}): its request already timed out`).pipe(
      Effect.as<Resolution>("late")
    )

  const isPending = (entry: PendingAck) => byEvent.get(entry.eventId) === entry

  const settle = (entry: Entry, result: Effect.Effect<void, RealtimeError>) => {
    forget(entry)
    Deferred.doneUnsafe(entry.deferred, result)
  }

  const expire = (entries: ReadonlyArray<PendingAck>) =>
    Effect.gen(function*() {
      for (const entry of entries) {
        if (!isPending(entry)) continue
        const e = entry as Entry
        if (e.key !== undefined) expiredKeys.add(e.key)
        if (e.channel !== undefined) expiredInChannel.set(e.channel, (expiredInChannel.get(e.channel) ?? 0) + 1)
        settle(
          entry as Entry,
          Effect.fail(
            new RealtimeError({
              reason: "timeout",
              message: `${entry.label}: no acknowledgement within ${Duration.format(timeout)}`
            })
          )
        )
        yield* Effect.logDebug(`realtime: ${entry.label} timed out; its acknowledgement will be dropped if it comes`)
      }
    })

  return {
    registerKeyUnsafe: (label, eventId, key, onReject) =>
      add({ label, eventId, key, deferred: Deferred.makeUnsafe<void, RealtimeError>(), onReject }),
    registerOrderedUnsafe: (label, eventId, channel, accept) =>
      add({ label, eventId, channel, accept, deferred: Deferred.makeUnsafe<void, RealtimeError>() }),
    unregisterUnsafe: (entries) => {
      for (const entry of entries) if (isPending(entry)) forget(entry as Entry)
    },
    arm: (entries) =>
      entries.length === 0
        ? Effect.void
        : Effect.sleep(timeout).pipe(Effect.andThen(expire(entries)), Effect.forkIn(options.scope), Effect.asVoid),
    resolveKey: (key, what) =>
      Effect.suspend(() => {
        const entry = byKey.get(key)?.[0]
        if (entry !== undefined) {
          settle(entry, Effect.void)
          return Effect.succeed<Resolution>("resolved")
        }
        if (!expiredKeys.delete(key)) return Effect.succeed<Resolution>("unsolicited")
        return late(what)
      }),
    resolveOrdered: (channel, payload, what) =>
      Effect.suspend(() => {
        const entry = channels.get(channel)?.find((e) => e.accept?.(payload) ?? true)
        if (entry !== undefined) {
          settle(entry, Effect.void)
          return Effect.succeed<Resolution>("resolved")
        }
        const expired = expiredInChannel.get(channel) ?? 0
        if (expired === 0) return Effect.succeed<Resolution>("unsolicited")
        expiredInChannel.set(channel, expired - 1)
        return late(what)
      }),
    pendingUnsafe: (key) => byKey.get(key)?.[0],
    resolveAll: (channel, keys) =>
      Effect.sync(() => {
        for (const entry of [...byEvent.values()]) {
          const byChannel = channel !== undefined && entry.channel === channel
          const byKeyMatch = keys !== undefined && entry.key !== undefined && keys(entry.key)
          if (byChannel || byKeyMatch) settle(entry, Effect.void)
        }
      }),
    reject: (eventId, message) =>
      Effect.suspend(() => {
        const entry = byEvent.get(eventId)
        if (entry === undefined) return Effect.succeed(false)
        // state first: completing the Deferred may resume a waiting fiber right away
        entry.onReject?.()
        settle(entry, Effect.fail(new RealtimeError({ reason: "rejected", message: `${entry.label}: ${message}` })))
        return Effect.logDebug(`realtime: ${entry.label} rejected: ${message}`).pipe(Effect.as(true))
      }),
    failAll: (error) =>
      Effect.sync(() => {
        for (const entry of [...byEvent.values()]) settle(entry, Effect.fail(error))
      }),
    pendingCount: () => byEvent.size
  }
}
