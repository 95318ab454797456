/**
 * One connection of the realtime pool (Pool.ts): opened and configured (pipelined), its router
 * (each server event to the current lease, or kept for the next holder), the watch on its
 * acknowledgements, and its end: broken (a refused update, a server that stopped answering or
 * dropped the socket: the holder falls back to a fresh one) or retired (nobody can use it).
 */
import { Cause, Deferred, Effect, Exit, Option, Queue, Scope, Stream } from "effect"
import type { Ack, RealtimeConnection, RealtimeError, RealtimeEvent, RealtimeTool } from "../../../services/RealtimeModel.ts"
import type { ChatContext } from "../../ChatContext.ts"
import * as Diagnostics from "../../Diagnostics.ts"
import type { Desired, Lease, RevokeReason } from "./Lease.ts"
import * as Ledger from "./Ledger.ts"
import type { Config } from "./Pool.ts"

export interface State {
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

export interface Entry {
  readonly connection: RealtimeConnection
  readonly scope: Scope.Closeable
  lease: Lease | undefined
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

export const toolsKey = (tools: ReadonlyArray<RealtimeTool>) =>
  JSON.stringify([...tools].sort((a, b) => a.name.localeCompare(b.name)))

export const contextIds = (context: ChatContext) =>
  context.items.filter((item) => item._tag !== "AgentHandoff").map((item) => item.id)

/** Events about the user, not about a response: they matter to whoever holds the floor next. */
const aboutTheUser = (event: RealtimeEvent): boolean =>
  event._tag === "SpeechStarted" || event._tag === "SpeechStopped" || event._tag === "InputTranscript"

/**
 * A free connection nobody will use closes in the background (opening a new one does not wait);
 * what the user said into it is not lost with it (its speech start and stop end with it).
 */
export const retire = (state: State, entry: Entry) =>
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

/**
 * Ends `lease`, once: its connection is no longer its holder's (a fallback is told with the
 * fresh connection that follows it: it may break while the session is quiescent, an update's
 * error answer coming late), and what was queued for it, not for it any more, is dropped.
 */
export const revoke = (lease: Lease, reason: RevokeReason): void => {
  if (lease.state.revoked) return
  lease.state.revoked = reason
  const { entry, owner, pool } = lease
  if (reason === "fallback") pool.fellBack.set(owner, entry.connection.id)
  else if (reason === "closed" || reason === "dropped") pool.config.report(owner, entry.connection.id, reason)
  if (entry.lease === lease) entry.lease = undefined
  while (Queue.sizeUnsafe(lease.events) > 0) Queue.takeUnsafe(lease.events)
  Queue.endUnsafe(lease.events)
}

/** Waits (a bounded time) until the server is done with its current response: whether it was. */
export const settle = (entry: Entry): Effect.Effect<boolean> =>
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

/**
 * Breaks `entry`, once: its lease ends with `reason` (`fallback`: an update was refused or the
 * server stopped answering; `dropped`: its events ended with an error), so the holder's next
 * request opens a fresh connection, re-seeded; its Scope closes from outside it (the fibers that
 * find it broken live there).
 */
export const breakConnection = (state: State, entry: Entry, reason: "fallback" | "dropped", why: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (entry.broken) return Effect.void
    entry.broken = true
    if (entry.lease) revoke(entry.lease, reason)
    state.entries.delete(entry)
    return Effect.logDebug(`realtime connection ${entry.connection.id} broken (${reason}): ${why}`).pipe(
      Effect.andThen(Scope.close(entry.scope, Exit.void).pipe(Effect.forkIn(state.config.parent))),
      Effect.asVoid
    )
  })

/** Watches acknowledgements; a failed one breaks the connection if it is still ours. */
export const watch = (state: State, entry: Entry, acks: ReadonlyArray<Ack>) =>
  Effect.forEach(
    acks,
    // No answer in time: the state is unknown but not wrong; the connection is kept and a
    // late answer is dropped by the provider. An error answer breaks it.
    (ack) => ack.await.pipe(Effect.catchIf((e) => e.reason === "timeout", (e) => Effect.logDebug(`realtime: ${e.message}`))),
    { concurrency: "unbounded", discard: true }
  ).pipe(
    Effect.catch((error) =>
      breakConnection(state, entry, "fallback", error.message).pipe(
        Effect.andThen(Effect.logWarning(`realtime update failed (${error.message}): falling back to a new connection`))
      )
    ),
    Diagnostics.startIn(entry.scope)
  )

/** Opens a connection configured for `desired`, with its router and canceller in its own Scope. */
export const open = (state: State, desired: Desired): Effect.Effect<Entry, RealtimeError> =>
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
    if (connection.configured) yield* watch(state, entry, [connection.configured])
    const gone = Effect.sync(() => {
      entry.broken = true
      if (entry.lease) revoke(entry.lease, "closed")
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
        Cause.hasInterruptsOnly(cause) ? Effect.void : breakConnection(state, entry, "dropped", Cause.pretty(cause))
      ),
      Effect.ensuring(gone),
      Diagnostics.forkIn(scope)
    )
    return entry
  })

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
        if (lease) return Queue.offer(lease.events, verdict.deliver).pipe(Effect.asVoid)
        if (aboutTheUser(event)) {
          entry.heldForNext.push(event)
          if (event._tag === "SpeechStopped") state.config.ended(entry.connection.id)
          return Effect.void
        }
        return Effect.logDebug(`realtime event ${event._tag} arrived with no holder: dropped`)
      })
    )
  )
