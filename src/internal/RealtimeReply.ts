/**
 * The realtime path of an actor: its lease on a connection of the session's pool, the fiber
 * that routes the lease's events, and replies driven by the model's events. Tool calls go
 * through the same batches as in the text pipeline (same rules); their outputs reach the
 * server with the next context sync, before any response is asked for.
 */
import * as ToolSchema from "../../services/ToolSchema.ts"
import { Cause, Deferred, Duration, Effect, Exit, Queue, Semaphore, Stream } from "effect"
import { AudioOutput, durationMs } from "../../services/AudioOutput.ts"
import * as ModelCallMeter from "../observe/ModelCallMeter.ts"
import { ModelCall } from "../../services/ModelCall.ts"
import type { RealtimeEvent, RealtimeTool, RealtimeToolChoice } from "../../services/RealtimeModel.ts"
import { RealtimeError, RealtimeResponseTimeout } from "../../services/RealtimeModel.ts"
import type { Actor } from "./Actor.ts"
import { message } from "../ChatContext.ts"
import type { ReplyOptions } from "../CurrentAgent.ts"
import * as Diagnostics from "../Diagnostics.ts"
import type { Lease, LeaseEvent, Pool, Ticket } from "./RealtimePool.ts"
import type { PendingCall } from "./Reply.ts"
import type { Speech } from "../Speech.ts"
import * as ToolBatch from "./ToolBatch.ts"

type ResponseQueue = Queue.Queue<RealtimeEvent, Cause.Done | RealtimeError>

export interface RealtimeBinding {
  readonly pool: Pool
  /** One acquisition at a time (a reply and incoming audio may both need the connection). */
  readonly acquiring: Semaphore.Semaphore
  lease: Lease | undefined
  readonly responses: Map<string, ResponseQueue>
  /** Replies waiting for their response to start, by the ticket that asked for it. */
  readonly waiting: Map<Ticket, Deferred.Deferred<ResponseQueue, RealtimeError>>
  /** A reply waiting for the response the server starts by itself (after tool outputs). */
  expecting: { readonly lease: Lease; readonly started: Deferred.Deferred<ResponseQueue, RealtimeError> } | undefined
}

export const bind = (pool: Pool): RealtimeBinding => ({
  pool,
  acquiring: Semaphore.makeUnsafe(1),
  lease: undefined,
  responses: new Map(),
  waiting: new Map(),
  expecting: undefined
})

const toolsOf = (actor: Actor): ReadonlyArray<RealtimeTool> =>
  [...actor.tools.values()].map((tool) => ({
    name: tool.name,
    description: tool.description,
    parameters: ToolSchema.parametersOf(tool.definition)
  }))

const desired = (actor: Actor) => ({ instructions: actor.agent.instructions, tools: toolsOf(actor), context: actor.chat })

const revoked = (why: string) => new RealtimeError({ reason: "revoked", message: why })

/** Gives the connection back to the pool (the actor passed or lent the floor). */
export const release = (binding: RealtimeBinding) => {
  const lease = binding.lease
  binding.lease = undefined
  if (lease) binding.pool.release(lease)
}

/**
 * Takes a connection for an actor that has just got the floor: the one its predecessor released
 * when it can serve this actor (its updates sent at once, pipelined), else a fresh one (the old
 * one closes). A failure here is not the actor's: its next reply tries again.
 */
export const take = (actor: Actor): Effect.Effect<void> =>
  Effect.suspend(() => {
    const binding = actor.realtime
    if (!binding || (binding.lease && !binding.lease.revoked())) return Effect.void
    return lease(actor, binding).pipe(
      Effect.catchCause((cause) => Effect.logDebug(`realtime connection for ${actor.name} not taken: ${Cause.pretty(cause)}`)),
      Effect.asVoid,
      Diagnostics.fiber
    )
  })

/**
 * The actor's lease, acquired (and its event router started) if it has none. A lease it already
 * had is brought up to date first (for a reply), unless `upToDate` is false (the user's audio:
 * it never waits for the server to finish an answer).
 */
const lease = (actor: Actor, binding: RealtimeBinding, upToDate = true): Effect.Effect<Lease, RealtimeError> =>
  Effect.gen(function*() {
    const current = (): Lease | undefined => (binding.lease && !binding.lease.revoked() ? binding.lease : undefined)
    const resync = (held: Lease) =>
      // A response still running (one that was cut) ends first: what it left on the server is
      // then seen by the sync.
      upToDate ? held.settle.pipe(Effect.andThen(held.sync(desired(actor))), Effect.as(held)) : Effect.succeed(held)
    const held = current()
    if (held) return yield* resync(held)
    return yield* binding.acquiring.withPermits(1)(Effect.gen(function*() {
      // Acquired meanwhile by another flow of this actor (its take, a reply): brought up to date.
      const again = current()
      if (again) return yield* resync(again)
      const fresh = yield* binding.pool.acquire(actor.name, desired(actor))
      if (!actor.holdsFloor()) {
        // The floor moved on while the connection was being acquired: it is the next holder's.
        binding.pool.release(fresh)
        return yield* revoked(`${actor.name} passed the floor while its connection was acquired`)
      }
      binding.lease = fresh
      yield* route(actor, binding, fresh)
      return fresh
    }))
  })

/** The user's audio, to the actor's connection (acquired if it has none yet). */
export const pushAudio = (actor: Actor, pcm: Uint8Array): Effect.Effect<void, RealtimeError> =>
  Effect.gen(function*() {
    const binding = actor.realtime
    if (!binding || !actor.holdsFloor()) return
    const held = binding.lease && !binding.lease.revoked()
      ? binding.lease
      : yield* lease(actor, binding, false)
    yield* held.pushAudio(pcm)
  })

/** Routes the lease's events: responses to their replies, turn events to the session. */
const route = (actor: Actor, binding: RealtimeBinding, lease: Lease) =>
  Stream.fromQueue(lease.events).pipe(
    Stream.runForEach((event) => dispatch(actor, binding, lease, event)),
    Effect.ensuring(Effect.sync(() => {
      const why = revoked(`the connection left ${actor.name} (${lease.revoked() ?? "closed"})`)
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
      const cut = lease.revoked() === "released" ? Cause.interrupt() : Cause.fail(why)
      for (const queue of binding.responses.values()) Queue.failCauseUnsafe(queue, cut)
      binding.responses.clear()
      if (binding.lease === lease) binding.lease = undefined
    })),
    Diagnostics.fiber,
    Effect.forkIn(actor.scope),
    Effect.asVoid
  )

/**
 * Responses the server stopped itself: cancelling them again would, on Gemini, cut the
 * answer to the very turn that interrupted them.
 */
const stoppedByServer = new WeakSet<ResponseQueue>()

/** Which response each queue carries (a cut reply cancels its own response, never the next). */
const responseIds = new WeakMap<ResponseQueue, string>()

const dispatch = (actor: Actor, binding: RealtimeBinding, lease: Lease, event: LeaseEvent): Effect.Effect<void> =>
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
              return binding.lease ? binding.lease.cancelResponse(event.responseId).pipe(Effect.ignore) : Effect.void
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
                  body: (speech) => run(actor, speech, {}, { lease, queue }),
                  cancel: Effect.andThen(
                    Effect.sync(() => {
                      binding.responses.delete(event.responseId)
                      Queue.endUnsafe(queue)
                    }),
                    lease.cancelResponse(event.responseId).pipe(Effect.ignore)
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
          if (event.final) actor.send({ _tag: "Heard", event: { _tag: "Transcript", itemId: event.itemId, text: event.text } })
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

/** A response that has started, on the lease it came on. */
interface Started {
  readonly lease: Lease
  readonly queue: ResponseQueue
}

/** Asks for a response on the actor's lease; on a fallback, once more on a fresh connection. */
const request = (
  actor: Actor,
  binding: RealtimeBinding,
  options: {
    readonly instructions?: string | undefined
    readonly toolChoice?: RealtimeToolChoice | undefined
    readonly speechId: string
    /** Calls whose outputs were just recorded: a server that answers them by itself
     * (autoToolReply) gets them as tool outputs and is only waited for. */
    readonly outputsOf?: ReadonlyArray<string> | undefined
  },
  attempt = 0
): Effect.Effect<Started, RealtimeError> =>
  Effect.gen(function*() {
    const started = Deferred.makeUnsafe<ResponseQueue, RealtimeError>()
    const current = binding.lease
    const answersByItself = options.outputsOf !== undefined && current !== undefined && !current.revoked() &&
      current.capabilities.autoToolReply
    // Registered before the outputs are sent: a server that answers them by itself is heard.
    if (answersByItself) binding.expecting = { lease: current, started }
    let ticket: Ticket | undefined
    return yield* Effect.gen(function*() {
      if (answersByItself) {
        // As tool outputs (not as context, which would interrupt such a model), before the sync.
        const ids = new Set(options.outputsOf)
        for (const item of actor.chat.items) {
          if (item._tag === "FunctionCallOutput" && ids.has(item.callId)) {
            yield* current.sendToolOutput({ callId: item.callId, name: item.name, output: item.output, isError: item.isError })
          }
        }
      }
      const held = yield* lease(actor, binding)
      if (answersByItself && held === current) return { lease: held, queue: yield* awaitStart(started) }
      ticket = held.ticket()
      binding.waiting.set(ticket, started)
      yield* held.createResponse({
        ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
        ...(options.toolChoice !== undefined ? { toolChoice: options.toolChoice } : {})
      }, ticket).pipe(Effect.provideService(ModelCall, { agent: actor.name, speechId: options.speechId }))
      return { lease: held, queue: yield* awaitStart(started) }
    }).pipe(
      // Cut or failed before it started (the user spoke): its response, if it comes, is
      // cancelled and reaches no one, and the next one is not taken for it.
      Effect.onExit((exit) =>
        Effect.sync(() => {
          if (exit._tag === "Success") return
          if (ticket) {
            ticket.abandoned = true
            binding.waiting.delete(ticket)
          }
          if (binding.expecting?.started === started) binding.expecting = undefined
        })
      )
    )
  }).pipe(
    Effect.catchIf(
      (error) => (error.reason === "revoked" || error.reason === "closed") && attempt === 0 && actor.holdsFloor(),
      () => request(actor, binding, options, attempt + 1)
    )
  )

/** The response's start, within `RealtimeResponseTimeout` (a server that never answers ends the reply). */
const awaitStart = (started: Deferred.Deferred<ResponseQueue, RealtimeError>) =>
  Effect.flatMap(Effect.service(RealtimeResponseTimeout), (limit) =>
    Deferred.await(started).pipe(
      Effect.timeoutOrElse({
        duration: limit,
        orElse: () => Effect.fail(new RealtimeError({ reason: "timeout", message: `no response from the realtime model within ${Duration.format(Duration.fromInputUnsafe(limit))}` }))
      })
    ))

/** Plays one response: text and audio out as they come, calls collected. */
const play = (
  actor: Actor,
  speech: Speech,
  held: Lease,
  queue: ResponseQueue
): Effect.Effect<ReadonlyArray<PendingCall>, unknown> => {
  const info = { speechId: speech.handle.id, agent: actor.name }
  const text = actor.core.textOutput
  const calls: Array<PendingCall> = []
  let said = ""
  let itemId: string | undefined
  let audioBytes = 0
  let audioRate = 24000
  let started = false
  const open = Effect.suspend(() => {
    if (started) return Effect.void
    started = true
    actor.setState("speaking")
    return text.start(info)
  })
  const pool = actor.core.realtimePool?.model
  const meter = ModelCallMeter.start({ ...info, kind: "realtime", provider: pool?.provider ?? "unknown", model: pool?.model ?? "unknown" }, actor.core.now)
  return Effect.gen(function*() {
    const audio = yield* AudioOutput
    actor.setState("thinking")
    yield* Stream.fromQueue(queue).pipe(
      Stream.runForEach((event) =>
        Effect.suspend(() => {
          if (!actor.holdsFloor()) return Effect.interrupt
          switch (event._tag) {
            case "TextDelta":
            case "TranscriptDelta":
              itemId ??= event.itemId
              meter.text()
              return open.pipe(
                Effect.andThen(text.write(event.delta, info)),
                Effect.andThen(Effect.sync(() => {
                  said += event.delta
                }))
              )
            case "AudioDelta":
              itemId ??= event.itemId
              audioRate = event.sampleRate
              meter.audio(event.pcm.byteLength, event.sampleRate)
              return open.pipe(
                Effect.andThen(audio.write(event.pcm, event.sampleRate, info)),
                Effect.andThen(Effect.sync(() => {
                  audioBytes += event.pcm.byteLength
                }))
              )
            case "FunctionCall":
              calls.push({ callId: event.callId, name: event.name, arguments: event.arguments, itemId: event.itemId })
              return Effect.void
            case "ResponseDone":
              meter.usage(event.usage)
              return event.status === "failed"
                ? Effect.fail(new RealtimeError({ reason: "protocol", message: event.error ?? "the response failed" }))
                : Effect.void
            default:
              return Effect.void
          }
        })
      ),
      Effect.onExit((exit) =>
        Effect.gen(function*() {
          actor.core.emit(meter.end(exit))
          const cut = Exit.isFailure(exit)
          if (said !== "" || (cut && itemId)) {
            actor.commit(message("assistant", said, { agent: actor.name, interrupted: cut, ...(itemId ? { id: itemId } : {}) }))
          }
          if (started) yield* text.end(info, cut)
          if (cut && Exit.hasInterrupts(exit)) {
            // Cut short: the server stops too, and forgets what was not played.
            yield* audio.clear(info)
            if (!stoppedByServer.has(queue)) yield* held.cancelResponse(responseIds.get(queue)).pipe(Effect.ignore)
            if (itemId && audioBytes > 0 && held.capabilities.messageTruncation) {
              yield* held.truncate(itemId, Math.round(durationMs(audioBytes, audioRate))).pipe(Effect.ignore)
            }
          }
        })
      )
    )
    return calls
  })
}

/** A reply of a realtime actor (or the rest of one the server started by itself). */
export const run = (
  actor: Actor,
  speech: Speech,
  options: ReplyOptions,
  startedBy?: Started
): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const binding = actor.realtime!
    let instructions = options.instructions
    let toolChoice = options.toolChoice as RealtimeToolChoice | undefined
    let existing = startedBy
    let answered: ReadonlyArray<string> | undefined
    let retried = false
    for (let step = 0;; step++) {
      if (!actor.holdsFloor()) return
      speech.phase = "generating"
      const choice: RealtimeToolChoice | undefined = step >= actor.agent.maxToolSteps ? "none" : toolChoice
      const { lease: held, queue } = existing ??
        (yield* request(actor, binding, { instructions, toolChoice: choice, speechId: speech.handle.id, outputsOf: answered }))
      existing = undefined
      const played = yield* play(actor, speech, held, queue).pipe(
        Effect.map((calls) => ({ calls, retry: false })),
        // The connection broke under the reply (an update's error answer): ask again on the
        // fresh one, once per step.
        Effect.catchIf(
          (error) => error instanceof RealtimeError && held.revoked() === "fallback" && !retried && actor.holdsFloor(),
          () => Effect.succeed({ calls: [] as ReadonlyArray<PendingCall>, retry: true })
        )
      )
      if (played.retry) {
        retried = true
        step--
        continue
      }
      retried = false
      const calls = played.calls
      if (calls.length === 0) return
      const next = yield* ToolBatch.run(actor, speech, calls)
      if (next === "passed") return
      if (next === "done") {
        // No reply, but the server gets the outputs now, as history.
        if (binding.lease && !binding.lease.revoked()) yield* binding.lease.sync(desired(actor)).pipe(Effect.ignore)
        return
      }
      instructions = undefined
      toolChoice = undefined
      answered = calls.map((call) => call.callId)
    }
  })
