/**
 * The session's realtime connections, leased to one actor at a time (docs/rules.md, rule 7).
 *
 * A lease is the only way to use a connection: its operations fail with reason "revoked" once
 * it is released, and its event queue ends, so an actor that passed the floor can neither send
 * on the connection nor hear from it again (seed 001). Events that arrive while no lease is
 * held are dropped with a debug log (rule 8). Which lease an event is for is decided by the
 * connection's ledger (Lease.ts, pure); this module does the effects.
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
 * Every fiber here lives in a connection's Scope (router, canceller, watchers): it runs with the
 * session's logger, tracer and clock, and ends with the connection.
 */
import { Cause, Deferred, Effect, Exit, Option, Queue, Scope, Stream } from "effect"
import { type Ack, type RealtimeCapabilities, type RealtimeConnection, RealtimeError, type RealtimeEvent, type RealtimeModel, type RealtimeTool } from "../../../services/RealtimeModel.ts"
import type { ChatContext } from "../../ChatContext.ts"
import type { RealtimeConnectionEvent } from "../../Events.ts"
import * as Diagnostics from "../../Diagnostics.ts"
import * as Ledger from "./Lease.ts"
import type { Desired, Lease, LeaseEvent, RevokeReason, Ticket } from "./Lease.ts"
import * as Unanswered from "./Unanswered.ts"

export interface Pool {
  readonly model: RealtimeModel["Service"]
  /**
   * A lease for `owner`, reusing a free connection when rule 7 allows it. `wanted` says whether
   * the owner still wants one: asked before a connection is opened after waiting for a hung one.
   */
  readonly acquire: (owner: string, desired: Desired, wanted?: () => boolean) => Effect.Effect<Lease, RealtimeError>
  /** Revokes `lease`; its connection becomes free for the next holder. */
  readonly release: (lease: Lease) => void
  /** Open connections and how many were opened in all (for tests and benchmarks). */
  readonly stats: () => { readonly open: number; readonly opened: number }
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

interface State {
  readonly config: Config
  readonly entries: Set<Entry>
  opened: number
  /**
   * The user's transcripts heard by connections that closed before anyone held them again: the
   * next lease gets them (kept here, so a failed connect does not lose them).
   */
  readonly saidIntoClosed: Array<RealtimeEvent>
  /** Owners whose lease fell back, and the connection that broke (reported with the next one). */
  readonly fellBack: Map<string, string>
}

type HeldLease = Lease & {
  readonly queue: Queue.Queue<LeaseEvent, Cause.Done>
  readonly revoke: (reason: RevokeReason) => void
}

interface Entry {
  readonly connection: RealtimeConnection
  readonly scope: Scope.Closeable
  lease: HeldLease | undefined
  /** What the server holds, as far as this side has sent it. */
  instructions: string
  toolsKey: string
  contextIds: ReadonlyArray<string>
  broken: boolean
  /** When it was released, to prefer the most recent free connection. */
  releasedAt: number
  readonly ledger: Ledger.Ledger
  /** Waiting for the server to be done with every response asked for. */
  readonly idle: Array<Deferred.Deferred<void>>
  /** What the server said about the user while no lease held the connection: the next holder's. */
  readonly heldForNext: Array<RealtimeEvent>
  /** Responses to cancel, sent in order by the connection's own fiber (an id, or the current one). */
  readonly cancels: Queue.Queue<string | undefined>
}

const toolsKey = (tools: ReadonlyArray<RealtimeTool>) =>
  JSON.stringify([...tools].sort((a, b) => a.name.localeCompare(b.name)))

const contextIds = (context: ChatContext) =>
  context.items.filter((item) => item._tag !== "AgentHandoff").map((item) => item.id)

/** Events about the user, not about a response: they matter to whoever holds the floor next. */
const aboutTheUser = (event: RealtimeEvent): boolean =>
  event._tag === "SpeechStarted" || event._tag === "SpeechStopped" || event._tag === "InputTranscript"

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
  Effect.sync(() => {
    const state: State = { config, entries: new Set(), opened: 0, saidIntoClosed: [], fellBack: new Map() }
    return {
      model: config.model,
      acquire: (owner, desired, wanted) => acquire(state, owner, desired, wanted),
      release: (lease) => release(state, lease),
      stats: () => ({ open: state.entries.size, opened: state.opened }),
      unanswered: Unanswered.make()
    }
  })

const acquire = (state: State, owner: string, desired: Desired, wanted: () => boolean = () => true): Effect.Effect<Lease, RealtimeError> =>
  Effect.gen(function*() {
    const free = [...state.entries].filter((e) => !e.lease && !e.broken).sort((a, b) => b.releasedAt - a.releasedAt)
    const candidate = free.find((e) => reusable(e.connection.capabilities, e, desired))
    for (const entry of [...free].reverse()) if (entry !== candidate) yield* retire(state, entry)
    // What the old holder asked for ends before the new holder's configuration goes out. A
    // server that does not get there in time is hung on it: not reused (it would take the new
    // holder's requests for the old one's), closed like a connection nobody can use.
    if (candidate && (yield* settle(candidate))) {
      const lease = yield* makeLease(state, candidate, owner, true)
      yield* lease.sync(desired)
      return lease
    }
    if (candidate) {
      yield* Effect.logDebug(`realtime connection ${candidate.connection.id} not reused: its server did not finish the last answer`)
      yield* retire(state, candidate)
      // The wait was long (the floor may have moved on meanwhile): no connection for no one.
      if (!wanted()) return yield* Effect.fail(new RealtimeError({ reason: "revoked", message: `${owner} no longer wants a connection` }))
    }
    const entry = yield* open(state, desired)
    return yield* makeLease(state, entry, owner, false)
  })

const release = (state: State, lease: Lease): void => {
  for (const entry of state.entries) {
    if (entry.lease !== lease) continue
    entry.releasedAt = state.config.now()
    entry.lease.revoke("released")
    // What the old holder asked for is no one's now: cancelled, and dropped if it comes.
    const running = Ledger.abandonAll(entry.ledger)
    if (running !== undefined) Queue.offerUnsafe(entry.cancels, running)
  }
}

/**
 * A free connection nobody will use closes in the background (opening a new one does not wait);
 * what the user said into it is not lost with it (its speech start and stop end with it).
 */
const retire = (state: State, entry: Entry) =>
  Effect.suspend(() => {
    for (const event of entry.heldForNext.splice(0)) {
      if (event._tag === "InputTranscript" && event.final) state.saidIntoClosed.push(event)
    }
    return closeEntry(state, entry).pipe(Effect.forkIn(state.config.parent), Effect.asVoid)
  })

const closeEntry = (state: State, entry: Entry) => {
  entry.broken = true
  state.entries.delete(entry)
  return Scope.close(entry.scope, Exit.void)
}

/** Breaks `entry` (its lease falls back) and closes it from outside its Scope. */
const breakEntry = (state: State, entry: Entry, why: string): Effect.Effect<never, RealtimeError> =>
  Effect.sync(() => {
    entry.broken = true
    entry.lease?.revoke("fallback")
  }).pipe(
    Effect.andThen(Scope.close(entry.scope, Exit.void).pipe(Effect.forkIn(state.config.parent))),
    Effect.andThen(Effect.fail(new RealtimeError({ reason: "revoked", message: `the lease was revoked (fallback: ${why})` })))
  )

/** Watches acknowledgements; a failed one breaks the connection if it is still ours. */
const watch = (entry: Entry, acks: ReadonlyArray<Ack>) =>
  Effect.forEach(
    acks,
    // No answer in time: the state is unknown but not wrong; the connection is kept and a
    // late answer is dropped by the provider. An error answer breaks it.
    (ack) => ack.await.pipe(Effect.catchIf((e) => e.reason === "timeout", (e) => Effect.logDebug(`realtime: ${e.message}`))),
    { concurrency: "unbounded", discard: true }
  ).pipe(
    Effect.catch((error) =>
      Effect.sync(() => {
        if (entry.broken) return
        entry.broken = true
        entry.lease?.revoke("fallback")
      }).pipe(
        // Closed from outside: this fiber lives in that Scope.
        Effect.andThen(Scope.close(entry.scope, Exit.void).pipe(Effect.forkDetach)),
        Effect.andThen(Effect.logWarning(`realtime update failed (${error.message}): falling back to a new connection`))
      )
    ),
    Diagnostics.startIn(entry.scope)
  )

/** Sends what differs from `desired` (pipelined: the acknowledgements are watched, not awaited). */
const sync = (state: State, entry: Entry, desired: Desired): Effect.Effect<void, RealtimeError> =>
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
    if (acks.length > 0) yield* watch(entry, acks)
  }).pipe(
    // A change the model cannot make on this connection (e.g. deleting an item it made
    // that baton never heard of): a fresh connection, as rule 7 says.
    Effect.catchIf((error) => error.reason === "unsupported", (error) => breakEntry(state, entry, error.message))
  )

/** Waits (a bounded time) until the server is done with its current response: whether it was. */
const settle = (entry: Entry): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    if (!Ledger.busy(entry.ledger)) return Effect.succeed(true)
    const waiter = Deferred.makeUnsafe<void>()
    entry.idle.push(waiter)
    const active = entry.ledger.active
    return (active ? entry.connection.cancelResponse(active.id).pipe(Effect.ignore) : Effect.void).pipe(
      Effect.andThen(Deferred.await(waiter)),
      Effect.timeoutOption("3 seconds"),
      Effect.map(Option.isSome)
    )
  })

const revokedError = (reason: RevokeReason) =>
  Effect.fail(new RealtimeError({ reason: "revoked", message: `the lease was revoked (${reason})` }))

/** A lease on `entry` for `owner`: what it was told between holders comes first on its queue. */
const makeLease = (state: State, entry: Entry, owner: string, reused: boolean): Effect.Effect<Lease> =>
  Effect.map(Queue.unbounded<LeaseEvent, Cause.Done>(), (events) => leaseOn(state, entry, owner, reused, events))

const leaseOn = (
  state: State,
  entry: Entry,
  owner: string,
  reused: boolean,
  events: Queue.Queue<LeaseEvent, Cause.Done>
): Lease => {
  const { report } = state.config
  const connection = entry.connection
  // Heard between holders: the new holder hears it before anything newer.
  Queue.offerAllUnsafe(events, [...state.saidIntoClosed.splice(0), ...entry.heldForNext.splice(0)])
  let revokedReason: RevokeReason | undefined
  const guard = <A>(op: () => Effect.Effect<A, RealtimeError>) =>
    Effect.suspend(() => (revokedReason ? revokedError(revokedReason) : op()))
  const lease: HeldLease = {
    connectionId: connection.id,
    owner,
    reused,
    capabilities: connection.capabilities,
    events,
    queue: events,
    revoked: () => revokedReason,
    revoke: (reason) => {
      if (revokedReason) return
      revokedReason = reason
      // A fallback is told with the fresh connection that follows it (it may break while the
      // session is quiescent: an update's error answer comes late).
      if (reason === "fallback") state.fellBack.set(owner, connection.id)
      else if (reason === "closed" || reason === "dropped") report(owner, connection.id, reason)
      if (entry.lease === lease) entry.lease = undefined
      // What was queued for the old holder is not for it any more.
      while (Queue.sizeUnsafe(events) > 0) Queue.takeUnsafe(events)
      Queue.endUnsafe(events)
    },
    sync: (desired) => guard(() => sync(state, entry, desired)),
    settle: Effect.suspend(() => (revokedReason ? Effect.void : Effect.asVoid(settle(entry)))),
    ticket: () => ({ owner: lease, abandoned: false }),
    createResponse: (options, ticket: Ticket) =>
      guard(() =>
        // One response at a time: a cut one is cancelled and waited for first.
        Effect.gen(function*() {
          yield* settle(entry)
          if (ticket.abandoned) return
          Ledger.asked(entry.ledger, ticket)
          yield* connection.createResponse(options).pipe(
            Effect.tapError(() => Effect.sync(() => Ledger.withdrawn(entry.ledger, ticket)))
          )
        })
      ),
    cancelResponse: (responseId) =>
      guard(() =>
        Effect.suspend(() => {
          const cut = Ledger.cut(entry.ledger, responseId)
          return cut.send ? connection.cancelResponse(cut.id) : Effect.void
        })
      ),
    sendToolOutput: (output) => guard(() => connection.sendToolOutput(output)),
    truncate: (itemId, audioEndMs) => guard(() => connection.truncate(itemId, audioEndMs)),
    pushAudio: (pcm) => guard(() => connection.pushAudio(pcm)),
    commitAudio: guard(() => connection.commitAudio),
    clearAudio: guard(() => connection.clearAudio),
    giveUp: (why) =>
      Effect.suspend(() => {
        if (revokedReason || entry.broken) return Effect.void
        entry.broken = true
        lease.revoke("fallback")
        state.entries.delete(entry)
        return Effect.logDebug(`realtime connection ${connection.id} given up (${why})`).pipe(
          Effect.andThen(Scope.close(entry.scope, Exit.void).pipe(Effect.forkIn(state.config.parent)))
        )
      })
  }
  entry.lease = lease
  const broken = state.fellBack.get(owner)
  if (broken !== undefined) report(owner, broken, "fell_back")
  state.fellBack.delete(owner)
  report(owner, connection.id, reused ? "reused" : "opened")
  return lease
}

/** Opens a connection configured for `desired`, with its router and canceller in its own Scope. */
const open = (state: State, desired: Desired): Effect.Effect<Entry, RealtimeError> =>
  Effect.gen(function*() {
    const { model, parent, ended } = state.config
    const scope = yield* Scope.fork(parent)
    const cancels = yield* Queue.unbounded<string | undefined>()
    // Pipelined: the configuration is watched like a reused connection's updates (an error
    // answer falls back), so the first response need not wait a round trip for it.
    const connection = yield* model.connect({
      instructions: desired.instructions,
      tools: desired.tools,
      chatContext: desired.context,
      pipelined: true
    }).pipe(
      Scope.provide(scope),
      Effect.onError(() => Scope.close(scope, Exit.void))
    )
    state.opened++
    const entry: Entry = {
      connection,
      scope,
      lease: undefined,
      instructions: desired.instructions,
      toolsKey: toolsKey(desired.tools),
      contextIds: contextIds(desired.context),
      broken: false,
      releasedAt: 0,
      ledger: Ledger.ledger(),
      idle: [],
      heldForNext: [],
      cancels
    }
    state.entries.add(entry)
    if (connection.configured) yield* watch(entry, [connection.configured])
    const gone = Effect.sync(() => {
      entry.broken = true
      entry.lease?.revoke("closed")
      ended(connection.id)
    })
    yield* Scope.addFinalizer(scope, Effect.andThen(Effect.sync(() => state.entries.delete(entry)), gone))
    // Cancels asked for from plain code (a release, a stale start) go out from here, in order.
    yield* Stream.fromQueue(entry.cancels).pipe(
      Stream.runForEach((id) => connection.cancelResponse(id).pipe(Effect.ignore)),
      Diagnostics.forkIn(scope)
    )
    yield* route(state, entry).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.void : dropped(state, entry, cause)
      ),
      Effect.ensuring(gone),
      Diagnostics.forkIn(scope)
    )
    return entry
  })

/**
 * The connection's events ended with an error (a lost socket, a server that hung up): its lease
 * ends `dropped` (the holder's next request opens a new connection, re-seeded) and its Scope is
 * closed, from outside it: this runs on the router, which lives there.
 */
const dropped = (state: State, entry: Entry, cause: Cause.Cause<unknown>) =>
  Effect.sync(() => {
    entry.broken = true
    entry.lease?.revoke("dropped")
    state.entries.delete(entry)
  }).pipe(
    Effect.andThen(Effect.logDebug(`realtime connection ${entry.connection.id} dropped: ${Cause.pretty(cause)}`)),
    Effect.andThen(Scope.close(entry.scope, Exit.void).pipe(Effect.forkIn(state.config.parent)))
  )

/** The router: each event to the current lease, or kept for the next holder, or nowhere. */
const route = (state: State, entry: Entry) =>
  entry.connection.events.pipe(
    Stream.runForEach((event) =>
      Effect.suspend(() => {
        const verdict = Ledger.track(entry.ledger, event, entry.lease)
        if (verdict.cancel !== undefined) Queue.offerUnsafe(entry.cancels, verdict.cancel)
        if (verdict.idle) for (const waiter of entry.idle.splice(0)) Deferred.doneUnsafe(waiter, Effect.void)
        if (!verdict.deliver) return Effect.logDebug(`realtime ${event._tag} of a stale response: dropped`)
        const lease = entry.lease
        if (lease) return Queue.offer(lease.queue, verdict.deliver).pipe(Effect.asVoid)
        if (aboutTheUser(event)) {
          entry.heldForNext.push(event)
          if (event._tag === "SpeechStopped") state.config.ended(entry.connection.id)
          return Effect.void
        }
        return Effect.logDebug(`realtime event ${event._tag} arrived with no holder: dropped`)
      })
    )
  )
