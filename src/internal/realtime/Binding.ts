/**
 * An actor's realtime binding: its lease on a connection of the session's pool (taken when the
 * floor arrives, released when it leaves), and the fiber that routes the lease's events:
 * responses to the replies that asked for them (Reply.ts), the user's speech and transcripts to
 * the actor's mailbox, in the server's order.
 */
import * as ToolSchema from "../../../services/ToolSchema.ts"
import { Cause, Deferred, Effect, Exit, Queue, Semaphore, Stream } from "effect"
import type { RealtimeEvent, RealtimeTool } from "../../../services/RealtimeModel.ts"
import { RealtimeError } from "../../../services/RealtimeModel.ts"
import type { Actor } from "../actor/Actor.ts"
import * as ActorTools from "../actor/ActorTools.ts"
import * as Diagnostics from "../../Diagnostics.ts"
import * as Lease from "./Lease.ts"
import type { LeaseEvent, Ticket } from "./Lease.ts"
import * as RealtimePool from "./Pool.ts"
import type { Pool } from "./Pool.ts"

export type ResponseQueue = Queue.Queue<RealtimeEvent, Cause.Done | RealtimeError>

/** A response that has started, on the lease it came on. */
export interface Started {
  readonly lease: Lease.Lease
  readonly queue: ResponseQueue
}

export interface RealtimeBinding {
  readonly pool: Pool
  /** One acquisition at a time (a reply and incoming audio may both need the connection). */
  readonly acquiring: Semaphore.Semaphore
  lease: Lease.Lease | undefined
  readonly responses: Map<string, ResponseQueue>
  /** Replies waiting for their response to start, by the ticket that asked for it. */
  readonly waiting: Map<Ticket, Deferred.Deferred<ResponseQueue, RealtimeError>>
  /** A reply waiting for the response the server starts by itself (after tool outputs). */
  expecting: { readonly lease: Lease.Lease; readonly started: Deferred.Deferred<ResponseQueue, RealtimeError> } | undefined
}

export const bind = (pool: Pool): RealtimeBinding => ({
  pool,
  acquiring: Semaphore.makeUnsafe(1),
  lease: undefined,
  responses: new Map(),
  waiting: new Map(),
  expecting: undefined
})

const toolsOf = (actor: Actor): ReadonlyArray<RealtimeTool> => {
  ActorTools.refresh(actor)
  return [...actor.tools.values()].map((tool) => ({
    name: tool.name,
    description: tool.description,
    parameters: ToolSchema.parametersOf(tool.definition)
  }))
}

export const desired = (actor: Actor) => ({ instructions: actor.agent.instructions, tools: toolsOf(actor), context: actor.chat })

const revoked = (why: string) => new RealtimeError({ reason: "revoked", message: why })

/** Gives the connection back to the pool (the actor passed or lent the floor). */
export const release = (binding: RealtimeBinding) => {
  const lease = binding.lease
  binding.lease = undefined
  if (lease) RealtimePool.release(binding.pool, lease)
}

/**
 * Takes a connection for an actor that has just got the floor: the one its predecessor released
 * when it can serve this actor (its updates sent at once, pipelined), else a fresh one (the old
 * one closes). A failure here is not the actor's: its next reply tries again.
 */
export const take = (actor: Actor): Effect.Effect<void> =>
  Effect.suspend(() => {
    const binding = actor.realtime
    if (!binding || (binding.lease && !Lease.revoked(binding.lease))) return Effect.void
    return lease(actor, binding).pipe(
      Effect.catchCause((cause) => Effect.logDebug(`realtime connection for ${actor.name} not taken: ${Cause.pretty(cause)}`)),
      Effect.asVoid
    )
  })

/**
 * The actor's lease, acquired (and its event router started) if it has none. A lease it already
 * had is brought up to date first (for a reply), unless `upToDate` is false (the user's audio:
 * it never waits for the server to finish an answer).
 */
export const lease = (
  actor: Actor,
  binding: RealtimeBinding,
  { upToDate = true }: { readonly upToDate?: boolean } = {}
): Effect.Effect<Lease.Lease, RealtimeError> =>
  Effect.gen(function*() {
    const current = (): Lease.Lease | undefined => (binding.lease && !Lease.revoked(binding.lease) ? binding.lease : undefined)
    const resync = (held: Lease.Lease) =>
      // A response still running (one that was cut) ends first: what it left on the server is
      // then seen by the sync.
      upToDate ? Lease.settle(held).pipe(Effect.andThen(Lease.sync(held, desired(actor))), Effect.as(held)) : Effect.succeed(held)
    const held = current()
    if (held) return yield* resync(held)
    return yield* binding.acquiring.withPermits(1)(Effect.gen(function*() {
      // Acquired meanwhile by another flow of this actor (its take, a reply): brought up to date.
      const again = current()
      if (again) return yield* resync(again)
      // The floor moved on while this flow waited for the acquisition before it (seed 360187):
      // a connection acquired now would be opened for no one (rule 7).
      if (!actor.holdsFloor()) return yield* revoked(`${actor.name} passed the floor before its connection was acquired`)
      const fresh = yield* RealtimePool.acquire(binding.pool, actor.name, desired(actor), actor.holdsFloor)
      if (!actor.holdsFloor()) {
        // The floor moved on while the connection was being acquired: it is the next holder's.
        RealtimePool.release(binding.pool, fresh)
        return yield* revoked(`${actor.name} passed the floor while its connection was acquired`)
      }
      binding.lease = fresh
      yield* route(actor, binding, fresh)
      return fresh
    }))
  })

/**
 * The user's audio, to the actor's connection (acquired if it has none yet). Audio that waited
 * for a connection while the floor moved on goes to the new holder's: the user spoke to
 * whoever holds the floor, and nothing they said is dropped for a floor change.
 */
export const pushAudio = (actor: Actor, pcm: Uint8Array): Effect.Effect<void, RealtimeError> =>
  Effect.gen(function*() {
    const binding = actor.realtime
    if (!binding || !actor.holdsFloor()) return
    const held = binding.lease && !Lease.revoked(binding.lease)
      ? binding.lease
      : yield* lease(actor, binding, { upToDate: false }).pipe(
        Effect.catchIf((e) => e.reason === "revoked" && !actor.holdsFloor(), () => Effect.succeed(undefined))
      )
    if (held) return yield* Lease.pushAudio(held, pcm)
    const next = actor.core.holder()
    if (next && next !== actor) yield* pushAudio(next, pcm)
  })

/** Routes the lease's events: responses to their replies, turn events to the session. */
const route = (actor: Actor, binding: RealtimeBinding, lease: Lease.Lease) =>
  Stream.fromQueue(lease.events).pipe(
    Stream.runForEach((event) => dispatch(actor, binding, lease, event)),
    Effect.ensuring(Effect.sync(() => {
      const reason = Lease.revoked(lease)
      if (reason === "dropped" && actor.holdsFloor()) {
        actor.core.emit({
          type: "error",
          agent: actor.name,
          source: "realtime",
          message: `${actor.name}'s realtime connection ${lease.connectionId} dropped; its next request opens a new one`,
          recoverable: true
        })
      }
      const why = revoked(`the connection left ${actor.name} (${reason ?? "closed"})`)
      // Only what was asked on this lease: a retry may already wait on a fresh one.
      for (const [ticket, waiter] of binding.waiting) {
        if (ticket.owner !== lease) continue
        binding.waiting.delete(ticket)
        Deferred.doneUnsafe(waiter, Exit.fail(why))
      }
      if (binding.expecting?.lease === lease) {
        Deferred.doneUnsafe(binding.expecting.started, Exit.fail(why))
        binding.expecting = undefined
      }
      // A response of a lease released by a floor change was cut with the floor (rule 2), not
      // broken: its reply ends interrupted, like any reply of an agent that passed the floor.
      const cut = Lease.revoked(lease) === "released" ? Cause.interrupt() : Cause.fail(why)
      for (const queue of binding.responses.values()) Queue.failCauseUnsafe(queue, cut)
      binding.responses.clear()
      if (binding.lease === lease) binding.lease = undefined
    })),
    // Started on the acquiring flow's step: what the connection heard between holders (queued
    // on the lease as it was made) reaches the mailbox before the acquisition ends, so the
    // take's work token is not given back while the user's words still wait (rule 10).
    Diagnostics.startIn(actor.scope, { startImmediately: true })
  )

/**
 * Responses the server stopped itself: cancelling them again would, on Gemini, cut the
 * answer to the very turn that interrupted them.
 */
export const stoppedByServer = new WeakSet<ResponseQueue>()

/** Which response each queue carries (a cut reply cancels its own response, never the next). */
export const responseIds = new WeakMap<ResponseQueue, string>()

const dispatch = (actor: Actor, binding: RealtimeBinding, lease: Lease.Lease, event: LeaseEvent): Effect.Effect<void> =>
  Effect.suspend(() => {
    switch (event._tag) {
      case "ResponseStarted":
        return Queue.unbounded<RealtimeEvent, Cause.Done | RealtimeError>().pipe(
          Effect.flatMap((queue) => {
            const ticket = event.ticket
            const waiter = ticket ? binding.waiting.get(ticket) : binding.expecting?.started
            if (ticket) binding.waiting.delete(ticket)
            else binding.expecting = undefined
            if (ticket && (!waiter || ticket.abandoned)) {
              // Asked for by a reply that was cut since: no one wants it.
              ticket.abandoned = true
              Queue.endUnsafe(queue)
              return binding.lease ? Lease.cancelResponse(binding.lease, event.responseId).pipe(Effect.ignore) : Effect.void
            }
            binding.responses.set(event.responseId, queue)
            responseIds.set(queue, event.responseId)
            // The reply gets the queue itself: the whole response may have come (and left the
            // routing map) before the reply starts reading it.
            if (waiter) return Effect.sync(() => void Deferred.doneUnsafe(waiter, Exit.succeed(queue)))
            // A response the server started by itself (its turn detection): a reply follows it.
            return Effect.sync(() =>
              actor.send({
                _tag: "Heard",
                event: {
                  _tag: "ServerReply",
                  started: { lease, queue },
                  cancel: Effect.andThen(
                    Effect.sync(() => {
                      binding.responses.delete(event.responseId)
                      Queue.endUnsafe(queue)
                    }),
                    Lease.cancelResponse(lease, event.responseId).pipe(Effect.ignore)
                  )
                }
              })
            )
          })
        )
      case "TextDelta":
      case "TranscriptDelta":
      case "AudioDelta":
      case "FunctionCall":
      case "ResponseDone": {
        const queue = binding.responses.get(event.responseId)
        if (!queue) return Effect.logDebug(`realtime ${event._tag} for an unknown response ${event.responseId}: dropped`)
        Queue.offerUnsafe(queue, event)
        if (event._tag === "ResponseDone") {
          binding.responses.delete(event.responseId)
          Queue.endUnsafe(queue)
        }
        return Effect.void
      }
      case "Interrupted": {
        // The server stopped the answer because the user spoke over it: the reply playing it is
        // cut (recorded as interrupted, audio cleared, truncated at what was played).
        for (const [id, queue] of binding.responses) {
          if (event.responseId !== undefined && id !== event.responseId) continue
          stoppedByServer.add(queue)
          Queue.failCauseUnsafe(queue, Cause.interrupt())
          binding.responses.delete(id)
        }
        return Effect.void
      }
      case "SpeechStarted":
        return Effect.sync(() => {
          actor.core.setUserSpeaking(true, lease.connectionId)
          actor.send({ _tag: "Heard", event: { _tag: "SpeechStarted", userTurn: actor.core.userTurns() } })
        })
      case "SpeechStopped":
        return Effect.sync(() => actor.core.setUserSpeaking(false))
      case "InputTranscript":
        return Effect.sync(() => {
          if (!event.final) return
          const failed = event.failed
          if (failed) {
            const code = failed.code ? ` (${failed.code})` : ""
            // About the user, not this agent: reported to whoever holds the floor (rule 8).
            actor.core.emit({
              type: "error",
              agent: actor.core.holder()?.name ?? actor.name,
              source: "realtime",
              message: `the user's turn ${event.itemId} could not be transcribed${code}: ${failed.message}`,
              recoverable: true
            })
          }
          actor.send({
            _tag: "Heard",
            event: { _tag: "Transcript", itemId: event.itemId, text: event.text, failed: failed !== undefined, followedBy: event.followedBy }
          })
        })
      case "Error":
        return Effect.sync(() => {
          actor.core.emit({ type: "error", agent: actor.name, source: "realtime", message: event.message, recoverable: !event.fatal })
        })
      case "GoAway":
      case "Reconnected":
        return Effect.logDebug(`realtime ${event._tag} on ${actor.name}'s connection`)
    }
  })

