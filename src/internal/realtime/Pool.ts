/**
 * The session's realtime connections, leased to one actor at a time (docs/rules.md, rule 7).
 *
 * A lease (Lease.ts, a record with module functions) is the only way to use a connection: its
 * operations fail with reason "revoked" once it is released, and its event queue ends, so an
 * actor that passed the floor can neither send on the connection nor hear from it again (seed
 * 001). Events that arrive while no lease is held are dropped with a debug log (rule 8). Which
 * lease an event is for is decided by the connection's ledger (Ledger.ts, pure).
 *
 * On a handoff, the new holder takes the connection the old one released when it is the same
 * model and every part that differs (instructions, tools, chat context) is mutable for that
 * model; the updates are pipelined (sent without waiting for acknowledgements). An error answer
 * to one of them breaks the connection: the lease is revoked with reason "fallback" and the
 * holder opens a fresh connection seeded with its context. Otherwise the free connections are
 * closed and a fresh one is opened; its configuration is pipelined too (the first response does
 * not wait for it to be accepted) and watched the same way.
 *
 * The user does not stop talking for a handoff. What the server says about the user (speech
 * start and stop, transcripts) between a release and the next lease is kept for the next holder,
 * and the user's transcripts follow it to a fresh connection: a turn said into the gap is heard,
 * and a reply waiting for the user to stop speaking does not wait forever.
 * A connection's own life (opening, routing, watching, breaking) is Connection.ts; every fiber
 * of it lives in its Scope (router, canceller, watchers): it runs with the session's logger,
 * tracer and clock, and ends with the connection.
 */
import { Effect, Exit, Queue, type Scope } from "effect"
import { type RealtimeCapabilities, RealtimeError, type RealtimeModel } from "../../../services/RealtimeModel.ts"
import type { RealtimeConnectionEvent } from "../../Events.ts"
import { contextIds, open, retire, settle, type State, toolsKey } from "./Connection.ts"
import * as Lease from "./Lease.ts"
import type { Desired } from "./Lease.ts"
import * as Ledger from "./Ledger.ts"
import * as Unanswered from "./Unanswered.ts"

export interface Pool {
  readonly model: RealtimeModel["Service"]
  /** The connections and what the pool remembers between holders; written only by this module. */
  readonly state: State
  /** What the user said that no answer of the server has claimed yet (Unanswered.ts). */
  readonly unanswered: Unanswered.Unanswered
}

export interface Config {
  readonly model: RealtimeModel["Service"]
  /** Where connections' Scopes are forked. */
  readonly parent: Scope.Scope
  readonly now: () => number
  /**
   * Told when what a connection was saying about the user ends: it has gone (closed, broken), or
   * it heard the user stop speaking while no one held it.
   */
  readonly ended: (connectionId: string) => void
  /** Told of each connection's moves (for the session's `realtime_connection` events). */
  readonly report: (owner: string, connectionId: string, action: RealtimeConnectionEvent["action"]) => void
}

const isPrefix = (prefix: ReadonlyArray<string>, of: ReadonlyArray<string>) =>
  prefix.length <= of.length && prefix.every((id, i) => of[i] === id)

/** Whether a connection holding `held` can serve `desired` by updates its model allows (rule 7). */
export const reusable = (
  capabilities: RealtimeCapabilities,
  held: { readonly instructions: string; readonly toolsKey: string; readonly contextIds: ReadonlyArray<string> },
  desired: Desired
): boolean =>
  (held.instructions === desired.instructions || capabilities.mutableInstructions) &&
  (held.toolsKey === toolsKey(desired.tools) || capabilities.mutableTools) &&
  (isPrefix(held.contextIds, contextIds(desired.context)) || capabilities.mutableChatContext)

export const make = (config: Config): Effect.Effect<Pool> =>
  Effect.sync(() => ({
    model: config.model,
    state: { config, entries: new Set(), opened: 0, saidIntoClosed: [], fellBack: new Map() },
    unanswered: Unanswered.make()
  }))

/**
 * A lease for `owner`, reusing a free connection when rule 7 allows it. `wanted` says whether
 * the owner still wants one: asked before a connection is opened after waiting for a hung one.
 */
export const acquire = (pool: Pool, owner: string, desired: Desired, wanted?: () => boolean): Effect.Effect<Lease.Lease, RealtimeError> =>
  acquireIn(pool.state, owner, desired, wanted)

/** Revokes `lease`; its connection becomes free for the next holder. */
export const release = (pool: Pool, lease: Lease.Lease): void => releaseIn(pool.state, lease)

/** Open connections and how many were opened in all (for tests and benchmarks). */
export const stats = (pool: Pool): { readonly open: number; readonly opened: number } => ({
  open: pool.state.entries.size,
  opened: pool.state.opened
})

const acquireIn = (state: State, owner: string, desired: Desired, wanted: () => boolean = () => true): Effect.Effect<Lease.Lease, RealtimeError> =>
  Effect.gen(function*() {
    const free = [...state.entries].filter((e) => !e.lease && !e.broken).sort((a, b) => b.releasedAt - a.releasedAt)
    const candidate = free.find((e) => reusable(e.connection.capabilities, e, desired))
    for (const entry of [...free].reverse()) if (entry !== candidate) yield* retire(state, entry)
    // What the old holder asked for ends before the new holder's configuration goes out. A
    // server that does not get there in time is hung on it: not reused (it would take the new
    // holder's requests for the old one's), closed like a connection nobody can use.
    if (candidate) {
      const waits = Ledger.busy(candidate.ledger)
      const settled = yield* settle(candidate)
      if (!settled) {
        yield* Effect.logDebug(`realtime connection ${candidate.connection.id} not reused: its server did not finish the last answer`)
        yield* retire(state, candidate)
      }
      if (waits) {
        // The wait may be long: the floor may have moved on (no connection for no one), or
        // another take may have had the connection first (it is never taken from its holder).
        if (!wanted()) return yield* Effect.fail(new RealtimeError({ reason: "revoked", message: `${owner} no longer wants a connection` }))
        if (settled && (candidate.lease !== undefined || candidate.broken)) return yield* acquireIn(state, owner, desired, wanted)
      }
      if (settled) {
        const lease = yield* Lease.make(state, candidate, owner, { reused: true })
        // The lease is the caller's only once its configuration went out: cut before (a
        // barge-in, a handoff interrupting the reply there) or refused, it is released here,
        // or the connection would keep a lease nobody holds and never be free again.
        yield* Lease.sync(lease, desired).pipe(Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => releaseIn(state, lease)))))
        return lease
      }
    }
    const entry = yield* open(state, desired)
    return yield* Lease.make(state, entry, owner, { reused: false })
  })

const releaseIn = (state: State, lease: Lease.Lease): void => {
  for (const entry of state.entries) {
    if (entry.lease !== lease) continue
    entry.releasedAt = state.config.now()
    Lease.revoke(entry.lease, "released")
    // What the old holder asked for is no one's now: cancelled, and dropped if it comes.
    const running = Ledger.abandonAll(entry.ledger)
    if (running !== undefined) Queue.offerUnsafe(entry.cancels, running)
  }
}
