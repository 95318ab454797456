/**
 * The operator's desk (issue 35): `/operator`, a page for a person who watches the live sessions
 * and can step in, and `/operator/ws`, its socket. With `BATON_TOKEN` set both need an operator
 * token (`POST /token?route=operator`), which a caller's `/ws` token is not. `?name=` names the
 * operator (default `operator`): the floor's holder when they take over, and whom a transfer to
 * them reaches.
 *
 * Client → server: `{"type":"list"}` (answered with `sessions`: id, who holds the floor, since
 * when, the last words), `{"type":"open","session":id}` (the conversation so far as `history`,
 * with the session's `audio`, then every event of the session as `event`, and, when the session
 * has audio, the caller's and the agents' mixed as binary PCM16 after an `audio_format`),
 * `{"type":"whisper","text"}` (instructions only the agent sees, for its next reply),
 * `{"type":"take_over"}` (the floor passes to the operator: the agent stops at once),
 * `{"type":"say","text"}` (the operator's words to the caller), `{"type":"hand_back","agent",
 * "note"}` (the floor back to an agent, the note for its next reply), `{"type":"timeline"}` (the
 * open session's timeline picture as SVG). Transfers: an `offer` frame (who it is for, the
 * session, the briefing, how long it still rings) is answered with `{"type":"accept","offer":id}`
 * (the transfer is Answered, the session opens and the operator takes the floor in the step the
 * transfer task returns: its agent's tool gets the outcome, the agent says nothing more) or `{"type":"decline","offer":id,"reason"}`; an
 * `offer_closed` frame says when it stopped ringing and how. The take-over's `result` comes when
 * the transfer returns; one that has not within 5 seconds, or is withdrawn with
 * `{"type":"cancel_take_over"}`, is `NotApplied` and the agent keeps the floor. Voice: while holding the floor,
 * binary PCM16 frames (at the rate of `{"type":"audio_format","sampleRate"}`, 16 kHz until
 * declared) go to the caller where the agents' audio would, and with a voice pipeline are
 * transcribed into the history as the operator's words, an utterance ending at
 * `{"type":"audio_end"}` (or a hand back). Each command is answered with `result` or `error`. An
 * operator who leaves while holding the floor hands it back to the agent taken over.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Clock, Deferred, Effect, Exit, Fiber, Option, Queue, Scope, Stream } from "effect"
import { Socket } from "effect/socket"
import * as AudioFrame from "../services/AudioFrame.ts"
import type { CallControl } from "../services/CallControl.ts"
import type { ResamplerService, ResamplerStage } from "../services/Resampler.ts"
import type { SttStream } from "../services/Stt.ts"
import { type Agent, type AgentSession, Human } from "../src/index.ts"
import type { SessionEvent } from "../src/Events.ts"
import * as Timeline from "../src/Timeline.ts"
import type * as Transfer from "../src/Transfer.ts"
import type { Call } from "./Call.ts"
import * as ListenIn from "./ListenIn.ts"
import * as OperatorTransfer from "./OperatorTransfer.ts"
import type { Resumer } from "./Resumer.ts"

/** What the desk works with: the live sessions, and the agents the floor may be handed back to. */
export interface Desk {
  readonly resumer: Resumer
  readonly agents: ReadonlyArray<Agent.Agent<CallControl | Transfer.Transferer>>
  /** Where transfers to an operator ring: an operator connected here is online on it. */
  readonly line?: OperatorTransfer.OperatorLine | undefined
  /** Brings the listen-in audio to one rate, and the operator's voice to the transcriber's. */
  readonly resampler: ResamplerService
}

/** A live session as the list shows it. */
export interface SessionSummary {
  readonly id: string
  readonly holder: string | undefined
  /** When the holder got the floor (ms since the epoch). */
  readonly since: number | undefined
  readonly last: { readonly who: string; readonly text: string } | undefined
}

const summary = (session: AgentSession.AgentSession): Effect.Effect<SessionSummary> =>
  Effect.gen(function*() {
    const events = yield* session.eventLog
    const moved = events.findLast((e) => e.type === "agent_handoff")
    const items = (yield* session.history).items
    const last = items.findLast((i) => i._tag === "Message" && (i.role === "user" || i.role === "assistant"))
    return {
      id: session.id,
      holder: moved?.type === "agent_handoff" ? moved.to : undefined,
      since: moved?.at,
      last: last?._tag === "Message" ? { who: last.role === "user" ? "caller" : last.agent ?? "agent", text: last.text } : undefined
    }
  })

/** The sessions live on this process, oldest first. */
export const sessions = (desk: Desk): Effect.Effect<ReadonlyArray<SessionSummary>> =>
  Effect.forEach(desk.resumer.list(), (call) => summary(call.line.session))

/**
 * The operator's name from `?name=`: letters, digits, spaces, `.`, `_` and `-`, up to 40; absent
 * or empty, "operator". Anything else is refused with what is expected.
 *
 * @since 0.1.0
 * @category utils
 */
export const operatorName = (given: string | null | undefined): string | { readonly error: string } => {
  if (given === null || given === undefined || given.trim() === "") return "operator"
  const name = given.trim()
  return /^[\p{L}\p{N} ._-]{1,40}$/u.test(name)
    ? name
    : { error: `an operator's name is 1 to 40 letters, digits, spaces, '.', '_' or '-' (got ${JSON.stringify(given.slice(0, 60))})` }
}

const parse = (frame: string): { readonly type: string; readonly [k: string]: unknown } | undefined => {
  try {
    const value = JSON.parse(frame)
    return typeof value === "object" && value !== null && typeof value.type === "string" ? value : undefined
  } catch {
    return undefined
  }
}

/** What a take-over comes to (Applied, or NotApplied with the reason). */
type HandoffOutcome = Effect.Success<ReturnType<AgentSession.AgentSession["takeOver"]>>

/** How long an accepted transfer may take to return (the operator then holds the floor); after
 * it the take-over is withdrawn and the agent keeps the floor. */
const RETURN_WAIT = "5 seconds"
/** How long a hand back waits for the transcript of the operator's last words. */
const LAST_WORDS_WAIT = "3 seconds"

/** One operator's socket: a person (a `Human` named `name`) who may take over the session opened. */
export const serve = (socket: Socket.Socket, desk: Desk, name = "operator") =>
  Effect.gen(function*() {
    const reader = yield* socket.reader
    const writer = yield* socket.writer
    const outbox = yield* Queue.unbounded<string | Uint8Array>()
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(outbox), (frame) => writer.write(frame).pipe(Effect.ignore))))
    const send = (frame: object) => Effect.sync(() => void Queue.offerUnsafe(outbox, JSON.stringify(frame)))
    const sendBytes = (pcm: Uint8Array) => Effect.sync(() => void Queue.offerUnsafe(outbox, pcm))
    const operator = yield* Human.make({ name })
    // The floor goes back to an agent, never to a task (a task is started by its caller).
    const handsBackTo = desk.agents.filter((a) => a.task === undefined)
    // What the caller says reaches the page as the session's events; the queue is not kept.
    yield* Effect.forkScoped(Stream.runDrain(operator.heard))
    let opened: Call | undefined
    let watching: Fiber.Fiber<void> | undefined
    let listening: Fiber.Fiber<never> | undefined
    /** A take-over waiting for an accepted transfer to return, and the session it is for. */
    let claiming: { readonly fiber: Fiber.Fiber<HandoffOutcome>; readonly session: string } | undefined
    // (The service's agents run in its sessions: what they need, the sessions have.)
    const agentNamed = (agent: unknown) => handsBackTo.find((a) => a.name === agent) as Agent.Agent | undefined
    /** The agent the floor was taken from, by the last take-over's record. */
    const takenFrom = (session: AgentSession.AgentSession) =>
      Effect.map(session.eventLog, (events) => {
        const taken = events.findLast((e): e is Extract<SessionEvent, { type: "agent_handoff" }> => e.type === "agent_handoff" && e.kind === "take_over")
        return agentNamed(taken?.from) ?? (handsBackTo[0] as Agent.Agent | undefined)
      })

    const open = (id: string): Effect.Effect<Call | undefined, never, Scope.Scope> =>
      Effect.gen(function*() {
        const call = desk.resumer.find(id)
        if (!call) {
          yield* send({ type: "error", message: `no live session ${id}` })
          return undefined
        }
        if (watching) yield* Fiber.interrupt(watching)
        if (listening) yield* Fiber.interrupt(listening)
        yield* voice.stop
        const session = call.line.session
        opened = call
        // Events from here on, then what was said so far (the page merges items by id).
        watching = yield* Effect.forkScoped(Stream.runForEach(session.events, (event) => send({ type: "event", event })), { startImmediately: true })
        yield* send({ type: "history", session: session.id, audio: call.line.audio, items: (yield* session.history).items, summary: yield* summary(session) })
        // Listen in: both sides of the call, mixed (a text-only session has none).
        if (call.line.audio !== "none") {
          yield* send({ type: "audio_format", sampleRate: ListenIn.SAMPLE_RATE })
          listening = yield* Effect.forkScoped(ListenIn.stream(call.line.tap, desk.resampler, sendBytes))
        } else listening = undefined
        return call
      })

    const takeOver = (session: AgentSession.AgentSession) =>
      Effect.flatMap(session.takeOver(operator, { reason: `${name} took over` }), (outcome) => send({ type: "result", of: "take_over", outcome }))

    const voice = yield* operatorVoice(desk, name, operator, sendErrorOnce(send))

    // Offers of transfers to this operator (or to any), from the moment they are online.
    const ringing = new Map<string, OperatorTransfer.Offer>()
    const line = desk.line
    // One page per name on the line: a second one would take the first one's offers.
    if (line?.online.has(name)) yield* send({ type: "error", of: "offers", message: `an operator named ${name} is online already: this page gets no transfers` })
    else if (line) {
      const offers = yield* OperatorTransfer.connect(line, name)
      yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
        const offer = yield* Queue.take(offers)
        ringing.set(offer.id, offer)
        const now = yield* Clock.currentTimeMillis
        yield* send({ type: "offer", offer, remainingMs: Math.max(0, offer.offeredAt + offer.ringMs - now) })
        // Off the page once it stops ringing, whoever settled it.
        yield* OperatorTransfer.settled(line, offer.id).pipe(
          Effect.flatMap((outcome) => Effect.andThen(Effect.sync(() => ringing.delete(offer.id)), send({ type: "offer_closed", id: offer.id, outcome }))),
          Effect.forkScoped
        )
      })))
    }

    const onCommand = (command: { readonly type: string; readonly [k: string]: unknown }): Effect.Effect<void, never, Scope.Scope> =>
      Effect.gen(function*() {
        if (command.type === "list") return yield* send({ type: "sessions", sessions: yield* sessions(desk), agents: handsBackTo.map((a) => a.name) })
        if (command.type === "open") return yield* Effect.asVoid(open(String(command.session)))
        if (command.type === "accept" || command.type === "decline") {
          const id = String(command.offer ?? "")
          const offer = ringing.get(id)
          if (!line || !offer) return yield* send({ type: "error", of: command.type, message: `no offer ${id} is ringing for ${name}` })
          if (command.type === "decline") {
            const reason = typeof command.reason === "string" ? command.reason : undefined
            const answered = yield* OperatorTransfer.answer(line, name, id, false, reason)
            return yield* send(answered ? { type: "result", of: "decline", offer: id } : { type: "error", of: "decline", message: `offer ${id} stopped ringing` })
          }
          const call = offer.session === undefined ? undefined : desk.resumer.find(offer.session)
          if (!(yield* OperatorTransfer.answer(line, name, id, true))) {
            return yield* send({ type: "error", of: "accept", message: `offer ${id} stopped ringing` })
          }
          // Asked at once, before the transfer task can return: the operator takes the floor in
          // the step it returns, so the agent's tool gets Answered but the agent never replies.
          // Bounded: a transfer that does not return leaves the floor with the agent (rule 2).
          const taken = call
            ? yield* Effect.forkScoped(
              call.line.session.takeOver(operator, { reason: `${name} accepted the transfer`, afterTask: true, timeout: RETURN_WAIT }),
              { startImmediately: true }
            )
            : undefined
          yield* send({ type: "result", of: "accept", offer: id, session: offer.session })
          if (!call || !taken) return
          const claim = { fiber: taken, session: call.id }
          claiming = claim
          yield* open(call.id)
          // Told when it returns or times out; meanwhile the desk takes other commands (a cancel).
          return yield* Fiber.await(taken).pipe(
            Effect.flatMap((exit) => Exit.isSuccess(exit) ? send({ type: "result", of: "take_over", outcome: exit.value }) : Effect.void),
            Effect.ensuring(Effect.sync(() => void (claiming === claim ? claiming = undefined : undefined))),
            Effect.forkScoped,
            Effect.asVoid
          )
        }
        if (command.type === "cancel_take_over") {
          const claim = claiming
          if (!claim) return yield* send({ type: "error", of: "cancel_take_over", message: "no take-over is waiting for a transfer to return" })
          claiming = undefined
          // Withdrawn in the session's own step (the interruption waits for it): applied first, it stands.
          yield* Fiber.interrupt(claim.fiber)
          const outcome: HandoffOutcome = operator.holding() === claim.session
            ? { _tag: "Applied", to: name }
            : { _tag: "NotApplied", reason: `${name} cancelled the take-over` }
          return yield* send({ type: "result", of: "take_over", outcome })
        }
        const call = opened
        if (!call) return yield* send({ type: "error", message: "open a session first" })
        const session = call.line.session
        switch (command.type) {
          case "whisper":
            return yield* session.whisper(String(command.text ?? "")).pipe(
              Effect.andThen(send({ type: "result", of: "whisper" })),
              Effect.catch((e) => send({ type: "error", of: "whisper", message: e.message }))
            )
          case "take_over":
            return yield* takeOver(session)
          case "say":
            return yield* operator.say(String(command.text ?? "")).pipe(
              Effect.andThen(send({ type: "result", of: "say" })),
              Effect.catch((e) => send({ type: "error", of: "say", message: e.message }))
            )
          case "timeline":
            return yield* Effect.flatMap(session.eventLog, (events) => send({ type: "timeline", svg: Timeline.fromEvents(events) }))
          case "audio_format":
            return yield* voice.format(command.sampleRate)
          case "audio_end":
            return yield* voice.endUtterance
          // A tool call waiting for approval (`needsApproval`): the operator answers it.
          case "approve":
          case "reject": {
            const callId = String(command.callId ?? "")
            const answer = command.type === "approve"
              ? session.approve(callId)
              : session.reject(callId, typeof command.reason === "string" && command.reason !== "" ? { reason: command.reason } : {})
            return yield* answer.pipe(
              Effect.andThen(send({ type: "result", of: command.type, callId })),
              Effect.catch((e) => send({ type: "error", of: command.type, message: e.message }))
            )
          }
          case "hand_back": {
            const agent = agentNamed(command.agent)
            if (!agent) return yield* send({ type: "error", of: "hand_back", message: `no agent ${String(command.agent)} (expected ${handsBackTo.map((a) => a.name).join(", ")})` })
            const note = typeof command.note === "string" && command.note !== "" ? command.note : undefined
            // The operator's last spoken words are recorded before the floor goes.
            yield* voice.stop
            return yield* send({ type: "result", of: "hand_back", outcome: yield* session.handBack(agent, { note }) })
          }
          default:
            return yield* send({ type: "error", message: `unknown command ${command.type}` })
        }
      })
    // Leaving with the floor would strand the caller: it goes back to the agent taken over.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        const held = operator.holding()
        const session = held === undefined ? undefined : desk.resumer.find(held)?.line.session
        if (!session) return Effect.void
        return Effect.flatMap(takenFrom(session), (agent) => (agent ? Effect.asVoid(session.handBack(agent, { note: `${name} left.` })) : Effect.void))
      })
    )
    while (true) {
      const frames = yield* reader.pull.pipe(Effect.map(Option.some), Effect.catch(() => Effect.succeed(Option.none())))
      if (Option.isNone(frames)) return
      for (const frame of frames.value) {
        if (typeof frame !== "string") {
          yield* voice.speak(opened, frame)
          continue
        }
        const command = parse(frame)
        yield* command ? onCommand(command) : send({ type: "error", message: "a frame is one JSON command with a type" })
      }
    }
  }).pipe(Effect.scoped)

/** An error the operator is told once until `reset` (a microphone sends dozens of frames a second). */
const sendErrorOnce = (send: (frame: object) => Effect.Effect<void>) => {
  let told = false
  return {
    error: (message: string) =>
      Effect.suspend(() => {
        if (told) return Effect.void
        told = true
        return send({ type: "error", of: "audio", message })
      }),
    reset: () => void (told = false)
  }
}

/**
 * The operator's voice: to the caller while they hold the floor of the session opened, and with
 * a transcriber, into the history as their words (an utterance per `audio_end`).
 */
const operatorVoice = (
  desk: Desk,
  name: string,
  operator: Human.Human,
  errors: ReturnType<typeof sendErrorOnce>
) =>
  Effect.gen(function*() {
    const connection = yield* Effect.scope
    let rate = 16_000
    /** The transcription under way: its stream, its Scope, and whether words wait for an end. */
    let stt: { readonly stream: SttStream; readonly scope: Scope.Closeable; readonly stage: ResamplerStage; pending: boolean; final: Deferred.Deferred<void> } | undefined

    const transcribing = (call: Call) =>
      Effect.gen(function*() {
        const transcriber = call.line.transcriber
        if (!transcriber) return undefined
        if (stt) return stt
        const scope = yield* Scope.fork(connection)
        const stream = yield* transcriber.stream().pipe(Scope.provide(scope))
        const state = { stream, scope, stage: yield* desk.resampler.make(rate, transcriber.sampleRate), pending: false, final: yield* Deferred.make<void>() }
        yield* stream.events.pipe(
          Stream.runForEach((event) =>
            event._tag !== "Final" ? Effect.void : Effect.gen(function*() {
              state.pending = false
              if (event.text.trim() !== "") yield* Effect.ignore(operator.say(event.text.trim(), { voiced: true }))
              yield* Deferred.succeed(state.final, undefined)
              state.final = yield* Deferred.make<void>()
            })
          ),
          Effect.ignore,
          Effect.forkIn(scope)
        )
        stt = state
        return state
      })

    const endUtterance = Effect.suspend(() => {
      const current = stt
      if (!current || !current.pending) return Effect.void
      return current.stream.endUtterance.pipe(
        Effect.andThen(Effect.timeoutOption(Deferred.await(current.final), LAST_WORDS_WAIT)),
        Effect.ignore
      )
    })

    /** Ends the transcription: the last utterance's words first. */
    const stop = Effect.gen(function*() {
      const current = stt
      if (!current) return
      yield* endUtterance
      stt = undefined
      yield* Scope.close(current.scope, Exit.void)
    })

    return {
      format: (sampleRate: unknown) =>
        Effect.suspend(() => {
          if (typeof sampleRate !== "number" || !Number.isInteger(sampleRate) || sampleRate < 8000 || sampleRate > 48_000) {
            return errors.error(`sampleRate ${String(sampleRate)} is outside 8000..48000`)
          }
          rate = sampleRate
          // A transcription at the old rate ends; the next frame starts one at the new rate.
          return stop
        }),
      endUtterance,
      stop,
      speak: (call: Call | undefined, bytes: Uint8Array) =>
        Effect.gen(function*() {
          if (!call || operator.holding() !== call.id) {
            return yield* errors.error("your voice goes to the caller only while you hold the floor: take over first")
          }
          errors.reset()
          if (bytes.byteLength % 2 !== 0) return yield* errors.error("an audio frame needs an even number of bytes (PCM16)")
          const frame = AudioFrame.fromPcm16(bytes, rate)
          yield* call.line.speak(frame, name)
          const transcription = yield* transcribing(call).pipe(Effect.catch(() => Effect.succeed(undefined)))
          if (!transcription) return
          transcription.pending = true
          for (const out of transcription.stage.push(frame)) yield* Effect.ignore(transcription.stream.push(out))
        })
    }
  })

export { page } from "./OperatorPage.ts"
