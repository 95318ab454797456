/**
 * The session's realtime connections, leased to one actor at a time (docs/rules.md, rule 7).
 *
 * A lease is the only way to use a connection: its operations fail with reason "revoked" once
 * it is released, and its event queue ends, so an actor that passed the floor can neither send
 * on the connection nor hear from it again (seed 001). Events that arrive while no lease is
 * held are dropped with a debug log (rule 8).
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
 */
import { Cause, Deferred, Effect, Exit, Queue, Scope, Stream } from "effect"
import type {
  Ack,
  RealtimeCapabilities,
  RealtimeConnection,
  RealtimeEvent,
  RealtimeModel,
  RealtimeTool,
  RealtimeToolChoice
} from "../../services/RealtimeModel.ts"
import { RealtimeError } from "../../services/RealtimeModel.ts"
import type { ChatContext } from "../ChatContext.ts"
import type { RealtimeConnectionEvent } from "../Events.ts"
import * as Diagnostics from "../Diagnostics.ts"

/** What an actor wants the server to hold before it asks for a response. */
export interface Desired {
  readonly instructions: string
  readonly tools: ReadonlyArray<RealtimeTool>
  readonly context: ChatContext
}

export type RevokeReason = "released" | "fallback" | "closed"

export interface Ticket {
  readonly owner: object
  abandoned: boolean
}

/** An event as the lease delivers it: a response's start names the ticket that asked for it
 * (none when the server started it by itself). */
export type LeaseEvent = RealtimeEvent & { readonly ticket?: Ticket | undefined }

export interface Lease {
  readonly connectionId: string
  readonly owner: string
  /** The connection came from the previous holder (no new connection was opened). */
  readonly reused: boolean
  readonly capabilities: RealtimeCapabilities
  readonly events: Queue.Dequeue<LeaseEvent, Cause.Done>
  readonly revoked: () => RevokeReason | undefined
  /** Waits (a bounded time) until the server has no response running (cancelling a cut one). */
  readonly settle: Effect.Effect<void>
  /** Sends what differs from `desired`, without waiting for acknowledgements. */
  readonly sync: (desired: Desired) => Effect.Effect<void, RealtimeError>
  /**
   * Asks for a response on behalf of `ticket` (see `ticket`): an abandoned ticket's response is
   * cancelled when it starts and reaches no one.
   */
  readonly createResponse: (
    options: { readonly instructions?: string; readonly toolChoice?: RealtimeToolChoice },
    ticket: Ticket
  ) => Effect.Effect<void, RealtimeError>
  /** A ticket for one response; `abandoned` may be set at any time, even before it is asked for. */
  readonly ticket: () => Ticket
  /**
   * Cancels response `responseId` if the server is still generating it (one that has ended is
   * left alone: the cancel must not cut the next answer); with no id, the one in progress or,
   * not started yet, the next.
   */
  readonly cancelResponse: (responseId?: string) => Effect.Effect<void, RealtimeError>
  readonly sendToolOutput: RealtimeConnection["sendToolOutput"]
  readonly truncate: (itemId: string, audioEndMs: number) => Effect.Effect<void, RealtimeError>
  readonly pushAudio: (pcm: Uint8Array) => Effect.Effect<void, RealtimeError>
  readonly commitAudio: Effect.Effect<void, RealtimeError>
  readonly clearAudio: Effect.Effect<void, RealtimeError>
}

interface Entry {
  readonly connection: RealtimeConnection
  readonly scope: Scope.Closeable
  lease: (Lease & { readonly queue: Queue.Queue<LeaseEvent, Cause.Done>; readonly revoke: (reason: RevokeReason) => void }) | undefined
  /** What the server holds, as far as this side has sent it. */
  instructions: string
  toolsKey: string
  contextIds: ReadonlyArray<string>
  broken: boolean
  /** When it was released, to prefer the most recent free connection. */
  releasedAt: number
  /** Who asked for each response not started yet, in order (the server answers in order). */
  readonly requests: Array<Ticket>
  /** The response the server is generating, and whether its asker still wants it. */
  active: { readonly id: string; stale: boolean } | undefined
  /** Waiting for the server to be done with `active`. */
  idle: Array<Deferred.Deferred<void>>
  /** What the server said about the user while no lease held the connection: the next holder's. */
  readonly heldForNext: Array<RealtimeEvent>
}

export interface Pool {
  readonly model: RealtimeModel["Service"]
  /** A lease for `owner`, reusing a free connection when rule 7 allows it. */
  readonly acquire: (owner: string, desired: Desired) => Effect.Effect<Lease, RealtimeError>
  /** Revokes `lease`; its connection becomes free for the next holder. */
  readonly release: (lease: Lease) => void
  /** Open connections and how many were opened in all (for tests and benchmarks). */
  readonly stats: () => { readonly open: number; readonly opened: number }
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

/** Whether `entry` can serve `desired` by updates its model allows (rule 7). */
export const reusable = (
  capabilities: RealtimeCapabilities,
  held: { readonly instructions: string; readonly toolsKey: string; readonly contextIds: ReadonlyArray<string> },
  desired: Desired
): boolean =>
  (held.instructions === desired.instructions || capabilities.mutableInstructions) &&
  (held.toolsKey === toolsKey(desired.tools) || capabilities.mutableTools) &&
  (isPrefix(held.contextIds, contextIds(desired.context)) || capabilities.mutableChatContext)

export const make = (
  model: RealtimeModel["Service"],
  parent: Scope.Scope,
  now: () => number,
  /**
   * Told when what a connection was saying about the user ends: it has gone (closed, broken), or
   * it heard the user stop speaking while no one held it.
   */
  ended: (connectionId: string) => void = () => {},
  /** Told of each connection's moves (for the session's `realtime_connection` events). */
  report: (owner: string, connectionId: string, action: RealtimeConnectionEvent["action"]) => void = () => {}
): Effect.Effect<Pool> =>
  Effect.sync(() => {
    const entries = new Set<Entry>()
    let opened = 0
    /**
     * The user's transcripts heard by connections that closed before anyone held them again: the
     * next lease gets them (kept here, so a failed connect does not lose them).
     */
    const saidIntoClosed: Array<RealtimeEvent> = []
    /** Owners whose lease fell back, and the connection that broke (reported with the next one). */
    const fellBack = new Map<string, string>()

    const guard = <A>(lease: { revoked: () => RevokeReason | undefined }, op: () => Effect.Effect<A, RealtimeError>) =>
      Effect.suspend(() => {
        const reason = lease.revoked()
        return reason
          ? Effect.fail(new RealtimeError({ reason: "revoked", message: `the lease was revoked (${reason})` }))
          : op()
      })

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
        Diagnostics.fiber,
        Effect.forkIn(entry.scope),
        Effect.asVoid
      )

    const sync = (entry: Entry, desired: Desired): Effect.Effect<void, RealtimeError> =>
      Effect.gen(function*() {
        const conn = entry.connection
        const acks: Array<Ack> = []
        const key = toolsKey(desired.tools)
        const changes: { instructions?: string; tools?: ReadonlyArray<RealtimeTool> } = {}
        if (entry.instructions !== desired.instructions) changes.instructions = desired.instructions
        if (entry.toolsKey !== key) changes.tools = desired.tools
        if (changes.instructions !== undefined || changes.tools !== undefined) {
          if (entry.lease) report(entry.lease.owner, conn.id, "updated")
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
        Effect.catchIf((error) => error.reason === "unsupported", (error) => breakEntry(entry, error.message))
      )

    const breakEntry = (entry: Entry, why: string): Effect.Effect<never, RealtimeError> =>
      Effect.sync(() => {
        entry.broken = true
        entry.lease?.revoke("fallback")
      }).pipe(
        Effect.andThen(Scope.close(entry.scope, Exit.void).pipe(Effect.forkIn(parent))),
        Effect.andThen(Effect.fail(new RealtimeError({ reason: "revoked", message: `the lease was revoked (fallback: ${why})` })))
      )

    /** Waits (a bounded time) until the server is done with its current response. */
    const settle = (entry: Entry): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (!entry.active && entry.requests.length === 0) return Effect.void
        const waiter = Deferred.makeUnsafe<void>()
        entry.idle.push(waiter)
        return (entry.active ? entry.connection.cancelResponse(entry.active.id).pipe(Effect.ignore) : Effect.void).pipe(
          Effect.andThen(Deferred.await(waiter)),
          Effect.timeoutOption("3 seconds"),
          Effect.asVoid
        )
      })

    const responseEnded = (entry: Entry) => {
      entry.active = undefined
      if (entry.requests.length > 0) return
      for (const waiter of entry.idle.splice(0)) Deferred.doneUnsafe(waiter, Effect.void)
    }

    /**
     * Which lease an event is for. A response asked for by a lease that was released since
     * (or cut) is stale: none of its events reach anyone (rule 8).
     */
    const track = (entry: Entry, event: RealtimeEvent): LeaseEvent | undefined => {
      switch (event._tag) {
        case "ResponseStarted": {
          const request = entry.requests.shift()
          const stale = request !== undefined && (request.abandoned || request.owner !== entry.lease)
          entry.active = { id: event.responseId, stale }
          if (stale) Effect.runFork(entry.connection.cancelResponse(event.responseId).pipe(Effect.ignore))
          return stale ? undefined : { ...event, ticket: request }
        }
        case "TextDelta":
        case "TranscriptDelta":
        case "AudioDelta":
        case "FunctionCall":
          return entry.active?.id === event.responseId && entry.active.stale ? undefined : event
        case "ResponseDone": {
          const stale = entry.active?.id === event.responseId && entry.active.stale
          if (entry.active?.id === event.responseId) responseEnded(entry)
          return stale ? undefined : event
        }
        case "Interrupted":
          responseEnded(entry)
          return event
        default:
          return event
      }
    }

    const makeLease = (entry: Entry, owner: string, reused: boolean): Effect.Effect<Lease> =>
      Effect.gen(function*() {
        const events = yield* Queue.unbounded<LeaseEvent, Cause.Done>()
        // Heard between holders: the new holder hears it before anything newer.
        Queue.offerAllUnsafe(events, [...saidIntoClosed.splice(0), ...entry.heldForNext.splice(0)])
        let revokedReason: RevokeReason | undefined
        const lease = {
          connectionId: entry.connection.id,
          owner,
          reused,
          capabilities: entry.connection.capabilities,
          events,
          queue: events,
          revoked: () => revokedReason,
          revoke: (reason: RevokeReason) => {
            if (revokedReason) return
            revokedReason = reason
            // A fallback is told with the fresh connection that follows it (it may break while the
            // session is quiescent: an update's error answer comes late).
            if (reason === "fallback") fellBack.set(owner, entry.connection.id)
            else if (reason === "closed") report(owner, entry.connection.id, "closed")
            if (entry.lease === lease) entry.lease = undefined
            // What was queued for the old holder is not for it any more.
            while (Queue.sizeUnsafe(events) > 0) Queue.takeUnsafe(events)
            Queue.endUnsafe(events)
          },
          sync: (desired: Desired) => guard(lease, () => sync(entry, desired)),
          settle: Effect.suspend(() => (revokedReason ? Effect.void : settle(entry))),
          ticket: () => ({ owner: lease, abandoned: false }),
          createResponse: (options: { readonly instructions?: string; readonly toolChoice?: RealtimeToolChoice }, request: Ticket) =>
            guard(lease, () =>
              // One response at a time: a cut one is cancelled and waited for first.
              Effect.gen(function*() {
                yield* settle(entry)
                if (request.abandoned) return
                entry.requests.push(request)
                yield* entry.connection.createResponse(options).pipe(
                  Effect.tapError(() => Effect.sync(() => {
                    const index = entry.requests.indexOf(request)
                    if (index >= 0) entry.requests.splice(index, 1)
                  }))
                )
              })),
          cancelResponse: (responseId?: string) =>
            guard({ revoked: () => revokedReason }, () =>
              Effect.suspend(() => {
                // Cut by its asker: what is left of it reaches no one. Named, so a cancel that
                // arrives late cannot cut the server's next answer.
                if (responseId !== undefined && entry.active?.id !== responseId) return Effect.void
                if (entry.active) entry.active.stale = true
                return entry.connection.cancelResponse(entry.active?.id)
              })),
          sendToolOutput: (output: Parameters<RealtimeConnection["sendToolOutput"]>[0]) =>
            guard(lease, () => entry.connection.sendToolOutput(output)),
          truncate: (itemId: string, audioEndMs: number) => guard(lease, () => entry.connection.truncate(itemId, audioEndMs)),
          pushAudio: (pcm: Uint8Array) => guard(lease, () => entry.connection.pushAudio(pcm)),
          commitAudio: guard({ revoked: () => revokedReason }, () => entry.connection.commitAudio),
          clearAudio: guard({ revoked: () => revokedReason }, () => entry.connection.clearAudio)
        }
        entry.lease = lease
        const broken = fellBack.get(owner)
        if (broken !== undefined) report(owner, broken, "fell_back")
        fellBack.delete(owner)
        report(owner, entry.connection.id, reused ? "reused" : "opened")
        return lease
      })

    const open = (desired: Desired): Effect.Effect<Entry, RealtimeError> =>
      Effect.gen(function*() {
        const scope = yield* Scope.fork(parent)
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
        opened++
        const entry: Entry = {
          connection,
          scope,
          lease: undefined,
          instructions: desired.instructions,
          toolsKey: toolsKey(desired.tools),
          contextIds: contextIds(desired.context),
          broken: false,
          releasedAt: 0,
          requests: [],
          active: undefined,
          idle: [],
          heldForNext: []
        }
        entries.add(entry)
        if (connection.configured) yield* watch(entry, [connection.configured])
        yield* Scope.addFinalizer(scope, Effect.sync(() => {
          entry.broken = true
          entries.delete(entry)
          entry.lease?.revoke("closed")
          ended(connection.id)
        }))
        // The router: events go to the current lease, or nowhere (late answers are harmless).
        yield* connection.events.pipe(
          Stream.runForEach((event) =>
            Effect.suspend(() => {
              const delivered = track(entry, event)
              if (!delivered) return Effect.logDebug(`realtime ${event._tag} of a stale response: dropped`)
              const lease = entry.lease
              if (lease) return Queue.offer(lease.queue, delivered).pipe(Effect.asVoid)
              if (aboutTheUser(event)) {
                entry.heldForNext.push(event)
                if (event._tag === "SpeechStopped") ended(connection.id)
                return Effect.void
              }
              return Effect.logDebug(`realtime event ${event._tag} arrived with no holder: dropped`)
            })
          ),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logWarning(`realtime connection ended: ${Cause.pretty(cause)}`)
          ),
          Effect.ensuring(Effect.sync(() => {
            entry.broken = true
            entry.lease?.revoke("closed")
            ended(connection.id)
          })),
          Diagnostics.fiber,
          Effect.forkIn(scope)
        )
        return entry
      })

    const closeEntry = (entry: Entry) => {
      entry.broken = true
      entries.delete(entry)
      return Scope.close(entry.scope, Exit.void)
    }

    const acquire = (owner: string, desired: Desired): Effect.Effect<Lease, RealtimeError> =>
      Effect.gen(function*() {
        const free = [...entries].filter((e) => !e.lease && !e.broken).sort((a, b) => b.releasedAt - a.releasedAt)
        const candidate = free.find((e) => reusable(e.connection.capabilities, e, desired))
        // What the user said into connections that close now is not lost with them (their
        // speech start and stop end with the connection).
        for (const entry of [...free].reverse()) {
          if (entry === candidate) continue
          for (const event of entry.heldForNext.splice(0)) {
            if (event._tag === "InputTranscript" && event.final) saidIntoClosed.push(event)
          }
        }
        // Connections nobody can use close in the background: opening a new one does not wait.
        for (const entry of free) if (entry !== candidate) yield* closeEntry(entry).pipe(Effect.forkIn(parent))
        if (candidate) {
          // What the old holder asked for ends before the new holder's configuration goes out.
          yield* settle(candidate)
          const lease = yield* makeLease(candidate, owner, true)
          yield* lease.sync(desired)
          return lease
        }
        const entry = yield* open(desired)
        return yield* makeLease(entry, owner, false)
      })

    return {
      model,
      acquire,
      release: (lease) => {
        for (const entry of entries) {
          if (entry.lease === lease) {
            entry.releasedAt = now()
            entry.lease.revoke("released")
            // What the old holder asked for is no one's now: cancelled, and dropped if it comes.
            if (entry.active) entry.active.stale = true
            for (const request of entry.requests) request.abandoned = true
            if (entry.active) Effect.runFork(entry.connection.cancelResponse(entry.active.id).pipe(Effect.ignore))
          }
        }
      },
      stats: () => ({ open: entries.size, opened })
    }
  })
