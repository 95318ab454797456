/**
 * A lease on a realtime connection of the pool (Pool.ts), as a record, and its operations
 * (docs/rules.md, rules 7 and 8).
 *
 * A lease is the only way to use a connection: every operation fails with reason "revoked" once
 * it is revoked, and its event queue ends, so an actor that passed the floor can neither send on
 * the connection nor hear from it again (seed 001). Which lease an event is for is the
 * connection's ledger (Ledger.ts, pure); revoking is Connection.ts's (a broken or closed
 * connection revokes its lease), re-exported here.
 */
import { type Cause, Effect, Queue } from "effect"
import {
  type Ack,
  type RealtimeCapabilities,
  type RealtimeConnection,
  RealtimeError,
  type RealtimeTool,
  type RealtimeToolChoice
} from "../../../services/RealtimeModel.ts"
import type { ChatContext } from "../../ChatContext.ts"
import { breakConnection, contextIds, type Entry, settle as settleEntry, type State, toolsKey, watch } from "./Connection.ts"
import * as Ledger from "./Ledger.ts"
import type { LeaseEvent, Ticket } from "./Ledger.ts"

export type { LeaseEvent, Ticket } from "./Ledger.ts"
export { revoke } from "./Connection.ts"

/** What an actor wants the server to hold before it asks for a response. */
export interface Desired {
  readonly instructions: string
  readonly tools: ReadonlyArray<RealtimeTool>
  readonly context: ChatContext
}

/** Why a lease ended: the floor moved on (`released`), an update failed (`fallback`), the
 * connection was closed by baton (`closed`), or it dropped under it: its events ended with an
 * error (a lost socket, a server that hung up) (`dropped`). */
export type RevokeReason = "released" | "fallback" | "closed" | "dropped"

export interface Lease {
  readonly connectionId: string
  readonly owner: string
  /** The connection came from the previous holder (no new connection was opened). */
  readonly reused: boolean
  readonly capabilities: RealtimeCapabilities
  /** What the connection says to the holder; ends when the lease is revoked. */
  readonly events: Queue.Queue<LeaseEvent, Cause.Done>
  readonly state: { revoked: RevokeReason | undefined }
  /** The pool's state and the connection's entry, which the operations act on. */
  readonly pool: State
  readonly entry: Entry
}

/**
 * A lease on `entry` for `owner`, now its connection's current one: what was heard between
 * holders comes first on its queue (before anything newer).
 */
export const make = (pool: State, entry: Entry, owner: string, { reused }: { readonly reused: boolean }): Effect.Effect<Lease> =>
  Effect.map(Queue.unbounded<LeaseEvent, Cause.Done>(), (events) => {
    const { report } = pool.config
    const connection = entry.connection
    Queue.offerAllUnsafe(events, [...pool.saidIntoClosed.splice(0), ...entry.heldForNext.splice(0)])
    const lease: Lease = {
      connectionId: connection.id,
      owner,
      reused,
      capabilities: connection.capabilities,
      events,
      state: { revoked: undefined },
      pool,
      entry
    }
    entry.lease = lease
    const broken = pool.fellBack.get(owner)
    if (broken !== undefined) report(owner, broken, "fell_back")
    pool.fellBack.delete(owner)
    report(owner, connection.id, reused ? "reused" : "opened")
    return lease
  })

/** Why `lease` ended, or undefined while it holds its connection. */
export const revoked = (lease: Lease): RevokeReason | undefined => lease.state.revoked

/** A ticket for one response; `abandoned` may be set at any time, even before it is asked for. */
export const ticket = (lease: Lease): Ticket => ({ owner: lease, abandoned: false })

const guard = <A>(lease: Lease, op: () => Effect.Effect<A, RealtimeError>): Effect.Effect<A, RealtimeError> =>
  Effect.suspend(() => {
    const reason = lease.state.revoked
    return reason
      ? Effect.fail(new RealtimeError({ reason: "revoked", message: `the lease was revoked (${reason})` }))
      : op()
  })

/** Waits (a bounded time) until the server has no response running (cancelling a cut one). */
export const settle = (lease: Lease): Effect.Effect<void> =>
  Effect.suspend(() => (lease.state.revoked ? Effect.void : Effect.asVoid(settleEntry(lease.entry))))

/** Sends what differs from `desired`, without waiting for acknowledgements (they are watched). */
export const sync = (lease: Lease, desired: Desired): Effect.Effect<void, RealtimeError> =>
  guard(lease, () => syncEntry(lease.pool, lease.entry, desired))

const syncEntry = (state: State, entry: Entry, desired: Desired): Effect.Effect<void, RealtimeError> =>
  Effect.gen(function*() {
    const conn = entry.connection
    const acks: Array<Ack> = []
    const key = toolsKey(desired.tools)
    const changes: { instructions?: string; tools?: ReadonlyArray<RealtimeTool> } = {}
    if (entry.instructions !== desired.instructions) changes.instructions = desired.instructions
    if (entry.toolsKey !== key) changes.tools = desired.tools
    if (changes.instructions !== undefined || changes.tools !== undefined) {
      if (entry.lease) state.config.report(entry.lease.owner, conn.id, "updated")
      acks.push(yield* conn.updateSession(changes))
      entry.instructions = desired.instructions
      entry.toolsKey = key
    }
    // Always asked: the provider diffs against what the server holds, which may include
    // items baton never heard of (a response cut before it said anything).
    acks.push(yield* conn.updateChatContext(desired.context))
    entry.contextIds = contextIds(desired.context)
    if (acks.length > 0) yield* watch(state, entry, acks)
  }).pipe(
    // A change the model cannot make on this connection (e.g. deleting an item it made
    // that baton never heard of): a fresh connection, as rule 7 says.
    Effect.catchIf((error) => error.reason === "unsupported", (error) =>
      breakConnection(state, entry, "fallback", error.message).pipe(
        Effect.andThen(Effect.fail(new RealtimeError({ reason: "revoked", message: `the lease was revoked (fallback: ${error.message})` })))
      ))
  )

/**
 * Asks for a response on behalf of `ticket` (see `ticket`): an abandoned ticket's response is
 * cancelled when it starts and reaches no one. One response at a time: a cut one is cancelled
 * and waited for first.
 */
export const createResponse = (
  lease: Lease,
  options: { readonly instructions?: string; readonly toolChoice?: RealtimeToolChoice },
  ticket: Ticket
): Effect.Effect<void, RealtimeError> =>
  guard(lease, () =>
    Effect.gen(function*() {
      const { entry } = lease
      yield* settleEntry(entry)
      if (ticket.abandoned) return
      Ledger.asked(entry.ledger, ticket)
      yield* entry.connection.createResponse(options).pipe(
        Effect.tapError(() => Effect.sync(() => Ledger.withdrawn(entry.ledger, ticket)))
      )
    }))

/**
 * Cancels response `responseId` if the server is still generating it (one that has ended is
 * left alone: the cancel must not cut the next answer); with no id, the one in progress or,
 * not started yet, the next.
 */
export const cancelResponse = (lease: Lease, responseId?: string): Effect.Effect<void, RealtimeError> =>
  guard(lease, () => {
    const cut = Ledger.cut(lease.entry.ledger, responseId)
    return cut.send ? lease.entry.connection.cancelResponse(cut.id) : Effect.void
  })

export const sendToolOutput = (
  lease: Lease,
  output: Parameters<RealtimeConnection["sendToolOutput"]>[0]
): Effect.Effect<void, RealtimeError> => guard(lease, () => lease.entry.connection.sendToolOutput(output))

export const truncate = (lease: Lease, itemId: string, audioEndMs: number): Effect.Effect<void, RealtimeError> =>
  guard(lease, () => lease.entry.connection.truncate(itemId, audioEndMs))

export const pushAudio = (lease: Lease, pcm: Uint8Array): Effect.Effect<void, RealtimeError> =>
  guard(lease, () => lease.entry.connection.pushAudio(pcm))

export const commitAudio = (lease: Lease): Effect.Effect<void, RealtimeError> =>
  guard(lease, () => lease.entry.connection.commitAudio)

export const clearAudio = (lease: Lease): Effect.Effect<void, RealtimeError> =>
  guard(lease, () => lease.entry.connection.clearAudio)

/**
 * Gives the connection up: the server did not answer a request in time, so what it holds and
 * is doing are unknown (a response it may still be stuck on would make every later request
 * wait). It is closed, and the holder's next request opens a fresh one, re-seeded (a fallback,
 * reported with it). A lease not revoked is its connection's current one: breaking the
 * connection ends it.
 */
export const giveUp = (lease: Lease, why: string): Effect.Effect<void> =>
  Effect.suspend(() => (lease.state.revoked ? Effect.void : breakConnection(lease.pool, lease.entry, "fallback", why)))
