/**
 * A reply of a realtime actor: asks for a response on the actor's lease (once more on a fresh
 * connection after a fallback), plays it (text and audio out as they come, calls collected), and
 * runs its tool calls through the same batches as the text pipeline (same rules); their outputs
 * reach the server with the next context sync, before any response is asked for.
 */
import { Deferred, Duration, Effect, Exit, Stream } from "effect"
import { AudioOutput, durationMs } from "../../../services/AudioOutput.ts"
import { ModelCall } from "../../../services/ModelCall.ts"
import type { RealtimeToolChoice } from "../../../services/RealtimeModel.ts"
import { RealtimeError, RealtimeResponseTimeout } from "../../../services/RealtimeModel.ts"
import { message } from "../../ChatContext.ts"
import type { ReplyOptions } from "../../CurrentAgent.ts"
import * as ModelCallMeter from "../../observe/ModelCallMeter.ts"
import { followUpCut, generate as startGenerating, type Speech } from "../../Speech.ts"
import type { Actor } from "../actor/Actor.ts"
import type { PendingCall } from "../Reply.ts"
import * as Speeches from "../Speeches.ts"
import * as ToolBatch from "../ToolBatch.ts"
import { desired, lease, type RealtimeBinding, type ResponseQueue, responseIds, type Started, stoppedByServer } from "./Binding.ts"
import * as Lease from "./Lease.ts"
import type { Ticket } from "./Lease.ts"

export type { Started }

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
    /** Whether the reply may still make a model call (not when its agent's floor is passing). */
    readonly live: () => boolean
  },
  attempt = 0
): Effect.Effect<Started, RealtimeError> =>
  Effect.gen(function*() {
    const started = Deferred.makeUnsafe<ResponseQueue, RealtimeError>()
    const current = binding.lease
    const answersByItself = options.outputsOf !== undefined && current !== undefined && !Lease.revoked(current) &&
      current.capabilities.autoToolReply
    // Registered before the outputs are sent: a server that answers them by itself is heard.
    if (answersByItself) binding.expecting = { lease: current, started }
    let ticket: Ticket | undefined
    return yield* Effect.gen(function*() {
      // No request (nor tool outputs a server answers by itself) once the session is closing.
      if (actor.core.closed()) return yield* Effect.interrupt
      if (answersByItself) {
        // As tool outputs (not as context, which would interrupt such a model), before the sync.
        const ids = new Set(options.outputsOf)
        for (const item of actor.chat.items) {
          if (item._tag === "FunctionCallOutput" && ids.has(item.callId)) {
            yield* Lease.sendToolOutput(current, { callId: item.callId, name: item.name, output: item.output, isError: item.isError })
          }
        }
      }
      const held = yield* lease(actor, binding)
      // The session began closing while the connection was being acquired (seed 602931): no
      // model request after that (rule 11).
      if (actor.core.closed()) return yield* Effect.interrupt
      if (answersByItself && held === current) return { lease: held, queue: yield* awaitStart(held, started) }
      ticket = Lease.ticket(held)
      binding.waiting.set(ticket, started)
      yield* Lease.createResponse(held, {
        ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
        ...(options.toolChoice !== undefined ? { toolChoice: options.toolChoice } : {})
      }, ticket).pipe(Effect.provideService(ModelCall, { agent: actor.name, speechId: options.speechId }))
      return { lease: held, queue: yield* awaitStart(held, started) }
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
      (error) => (error.reason === "revoked" || error.reason === "closed") && attempt === 0 && actor.holdsFloor() && options.live(),
      () => request(actor, binding, options, attempt + 1)
    ),
    // The connection left with the floor before the response started (seed 1015080): the
    // reply was cut by the floor change, as one already playing is (rule 2), not broken.
    // Or it left while the floor was passing (a batch under this reply handed off): cut too.
    Effect.catchIf((error) => error.reason === "revoked" && (!actor.holdsFloor() || !options.live()), () => Effect.interrupt)
  )

/** The response's start, within `RealtimeResponseTimeout`: a server that never answers ends the
 * reply, and its connection is given up (the next request opens a fresh one). */
const awaitStart = (held: Lease.Lease, started: Deferred.Deferred<ResponseQueue, RealtimeError>) =>
  Effect.flatMap(Effect.service(RealtimeResponseTimeout), (limit) =>
    Deferred.await(started).pipe(
      Effect.timeoutOrElse({
        duration: limit,
        orElse: () => {
          const message = `no response from the realtime model within ${Duration.format(Duration.fromInputUnsafe(limit))}`
          return Effect.andThen(Lease.giveUp(held, message), Effect.fail(new RealtimeError({ reason: "timeout", message })))
        }
      })
    ))

/**
 * The words of `text` heard when `fraction` of its audio has played: its transcript is taken as
 * spread evenly over the audio, and a word cut in the middle is not kept.
 */
export const heardPart = (text: string, fraction: number): string => {
  if (fraction >= 1) return text
  const end = Math.floor(text.length * Math.max(0, fraction))
  if (end >= text.length || /\s/.test(text[end] ?? "")) return text.slice(0, end).trimEnd()
  const space = text.lastIndexOf(" ", end)
  return space < 0 ? "" : text.slice(0, space).trimEnd()
}

/** Plays one response: text and audio out as they come, calls collected. */
const play = (
  actor: Actor,
  speech: Speech,
  held: Lease.Lease,
  queue: ResponseQueue
): Effect.Effect<ReadonlyArray<PendingCall>, RealtimeError> => {
  const info = { speechId: speech.handle.id, agent: actor.name }
  const text = actor.core.textOutput
  const calls: Array<PendingCall> = []
  let said = ""
  let itemId: string | undefined
  let audioBytes = 0
  let audioRate = 24000
  /** When the first audio went out: an output plays in real time from there. */
  let firstAudioAt: number | undefined
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
              firstAudioAt ??= actor.core.now()
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
                ? Effect.fail(
                  new RealtimeError({ reason: "failed", message: event.error ?? "the response failed", ...(event.errorCode ? { code: event.errorCode } : {}) })
                )
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
          // A model streams its audio faster than it plays. Cut short (the output cleared), the
          // user heard only what played since the first audio went out: the history and the
          // server keep that. Otherwise (a failure) what was sent still plays.
          const interrupted = cut && Exit.hasInterrupts(exit)
          const sentMs = durationMs(audioBytes, audioRate)
          const playedMs = firstAudioAt === undefined ? 0 : Math.min(sentMs, actor.core.now() - firstAudioAt)
          const kept = interrupted && sentMs > 0 && playedMs < sentMs ? heardPart(said, playedMs / sentMs) : said
          if (kept !== "" || (cut && itemId)) {
            actor.commit(message("assistant", kept, { agent: actor.name, interrupted: cut, ...(itemId ? { id: itemId } : {}) }))
          }
          if (started) yield* text.end(info, cut)
          if (interrupted) {
            // Cut short: the server stops too, and forgets what was not played.
            yield* audio.clear(info)
            if (!stoppedByServer.has(queue)) yield* Lease.cancelResponse(held, responseIds.get(queue)).pipe(Effect.ignore)
            if (itemId && audioBytes > 0 && held.capabilities.messageTruncation) {
              yield* Lease.truncate(held, itemId, Math.round(playedMs)).pipe(Effect.ignore)
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
): Effect.Effect<void, RealtimeError> =>
  Effect.gen(function*() {
    const binding = actor.realtime!
    let instructions = options.instructions
    let toolChoice = options.toolChoice as RealtimeToolChoice | undefined
    let existing = startedBy
    let answered: ReadonlyArray<string> | undefined
    let retried = false
    const live = () => !followUpCut(speech)
    for (let step = 0;; step++) {
      if (!actor.holdsFloor()) return
      startGenerating(speech)
      const choice: RealtimeToolChoice | undefined = step >= actor.agent.maxToolSteps ? "none" : toolChoice
      const { lease: held, queue } = existing ??
        (yield* request(actor, binding, { instructions, toolChoice: choice, speechId: speech.handle.id, outputsOf: answered, live }))
      existing = undefined
      const played = yield* play(actor, speech, held, queue).pipe(
        Effect.map((calls) => ({ calls, retry: false })),
        // The connection broke under the reply (an update's error answer, a lost socket): ask
        // again on a fresh one, once per step. What was played stays, marked interrupted. Not
        // when its agent's floor is passing (the batch under it handed off): no model call then.
        Effect.catchIf(
          (error) =>
            error instanceof RealtimeError && (Lease.revoked(held) === "fallback" || Lease.revoked(held) === "dropped") && !retried &&
            actor.holdsFloor(),
          () => Effect.succeed({ calls: [] as ReadonlyArray<PendingCall>, retry: !followUpCut(speech) })
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
        if (binding.lease && !Lease.revoked(binding.lease)) yield* Lease.sync(binding.lease, desired(actor)).pipe(Effect.ignore)
        return
      }
      // Words a tool said meanwhile (or a reply it awaited) are heard first: one voice at a time.
      if (Speeches.interjectingOver(actor.speeches, speech)) {
        yield* Speeches.interjectedOver(actor.speeches, speech)
        if (actor.core.closed()) return yield* Effect.interrupt
        if (followUpCut(speech)) return
      }
      instructions = undefined
      toolChoice = undefined
      answered = calls.map((call) => call.callId)
    }
  })
