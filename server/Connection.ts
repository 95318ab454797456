/**
 * A `/ws` connection is a client of one caller's session (Call.ts): a new connection starts a
 * session; `/ws?resume=<token>` attaches to the session the token names, which was kept while
 * its client was away. The session's events go out as JSON frames; its words stream as
 * `agent_text`; the agents' audio goes out as binary PCM16 and is cut with `clear`. The user's
 * binary frames (PCM16) are heard by the holder's realtime connection or the cascaded voice
 * pipeline (Line.ts).
 *
 * How a connection ends decides the session's fate: a close with 1000 (the client is done), an
 * idle timeout or the drain end it; any other way (a cut, 1001 going away, a half-open socket
 * cut by the pings) leaves it waiting `resumeSeconds` for the client to come back.
 */
import { Deferred, Effect, Fiber, Option, Queue, type Redacted } from "effect"
import { Socket } from "effect/socket"
import * as AudioFrame from "../services/AudioFrame.ts"
import type { AudioOutputService } from "../services/AudioOutput.ts"
import type { CallControl } from "../services/CallControl.ts"
import type { ResamplerService } from "../services/Resampler.ts"
import type { TextOutputService } from "../services/TextOutput.ts"
import type { Agent } from "../src/index.ts"
import * as Timeline from "../src/Timeline.ts"
import type * as Transfer from "../src/Transfer.ts"
import * as Call from "./Call.ts"
import type { ServerOptions } from "./Config.ts"
import { turnRefusal } from "./Limits.ts"
import { idleReason, pullWithin } from "./Liveness.ts"
import * as ServiceMetrics from "./Metrics.ts"
import type { DurableSessions } from "./Line.ts"
import type { Registry } from "./Registry.ts"
import type { Resumer } from "./Resumer.ts"
import type { ServiceTransfers } from "./Transfers.ts"
import { type ClientMessage, encode, parseClientFrame, type ServerFrame } from "./Wire.ts"

export interface ConnectionContext {
  /** The entry agent; its tools may hang up or press keys (`CallControl`) and transfer the call
   * (`Transfer.Transferer`), which each transport provides. */
  readonly agent: Agent.Agent<CallControl | Transfer.Transferer>
  readonly userdata: () => unknown
  readonly options: ServerOptions
  readonly registry: Registry
  readonly resampler: ResamplerService
  /** The rate a realtime model takes the user's audio at (OpenAI 24 kHz, Gemini 16 kHz). */
  readonly realtimeInputRate: number
  /** The sessions that can be resumed, and how a token finds one. */
  readonly resumer: Resumer
  /** What resume tokens are signed with (`BATON_TOKEN`, or a secret of this process). */
  readonly resumeSecret: Redacted.Redacted<string>
  /** With a durable `BATON_STORE`: where sessions are journaled, and how to resume one from it. */
  readonly durable?: DurableSessions | undefined
  /** Where each route's calls transfer to (Transfers.ts); without it a transfer is `Failed`. */
  readonly transfers?: ServiceTransfers | undefined
}

/**
 * Starts a session for a new client and serves it until the session ends: the client may go and
 * come back (or another take over), so this waits for the session, not the socket.
 */
export const serve = Effect.fn("Server.connection")(function*(socket: Socket.Socket, ctx: ConnectionContext) {
  const call = yield* Call.open(ctx, ctx.resumeSecret, true)
  yield* Effect.acquireRelease(ctx.resumer.add(call), () => ctx.resumer.remove(call))
  yield* ServiceMetrics.sessionOpened
  yield* attach(socket, ctx, call, false)
  const reason = yield* Deferred.await(call.ended)
  yield* Effect.logDebug(`session ${call.id} ended: ${reason}`)
}, (effect) =>
  Effect.scoped(effect).pipe(
    Effect.ensuring(ServiceMetrics.sessionClosed)
  ))

/**
 * `/ws?resume=<token>`: attaches this socket to the session the token names, or closes it with
 * the reason (nothing else happens). The session stays with the connection that started it.
 */
export const resume = (token: string) =>
  Effect.fn("Server.resume")(function*(socket: Socket.Socket, ctx: ConnectionContext) {
    const found = yield* ctx.resumer.reattach(token, "ws")
    if (found._tag === "Refused") {
      yield* socket.reader
      const writer = yield* socket.writer
      yield* writer.write(new Socket.CloseEvent(found.code, found.message)).pipe(Effect.ignore)
      return yield* Effect.logDebug(`resume refused: ${found.reason}`)
    }
    yield* attach(socket, ctx, found.call, true)
  }, Effect.scoped)

/** Outgoing frames, in order: the session's output and the connection's own frames share it. */
type Outgoing = string | Uint8Array | Socket.CloseEvent

/** Serves one socket as the call's client until it goes, is superseded, or the call ends. */
const attach = (socket: Socket.Socket, ctx: ConnectionContext, call: Call.Call, resumed: boolean) =>
  Effect.gen(function*() {
    // Taking the reader completes the upgrade; writes wait for it, so it comes first.
    const reader = yield* socket.reader
    const writer = yield* socket.writer
    const outbox = yield* Queue.unbounded<Outgoing>()
    // Written in order until a close is; a client that left cannot be told anything, and what
    // matters then is the session.
    const flushing = yield* Effect.gen(function*() {
      while (true) {
        const out = yield* Queue.take(outbox)
        yield* writer.write(out).pipe(Effect.ignore)
        if (out instanceof Socket.CloseEvent) return
      }
    }).pipe(Effect.forkScoped)
    const send = (frame: ServerFrame | object) => Effect.sync(() => void Queue.offerUnsafe(outbox, encode(frame)))
    const sendBytes = (bytes: Uint8Array) => Effect.sync(() => void Queue.offerUnsafe(outbox, bytes))
    /** Sends what is queued, then closes the socket (a client that does not read is not waited for long). */
    const closeWith = (code: number, reason: string) =>
      Effect.suspend(() => {
        Queue.offerUnsafe(outbox, new Socket.CloseEvent(code, reason.slice(0, 100)))
        return Effect.timeoutOption(Fiber.join(flushing), 2000).pipe(Effect.asVoid)
      })

    const line = call.line
    const session = line.session
    const superseded = yield* Deferred.make<void>()
    const client: Call.Client = {
      audio: audioOutput(send, sendBytes),
      text: textOutput(send),
      event: send,
      token: (t) => send({ type: "resume_token", resumeToken: t.token, expiresAt: t.expiresAt }),
      move: (t) => Effect.andThen(send({ type: "reconnect", resumeToken: t.token, expiresAt: t.expiresAt }), closeWith(1012, "service restart")),
      superseded,
      drop: closeWith(1011, "connection dropped")
    }

    const takeTurn = (text: string) =>
      Effect.flatMap(call.turns.offer, (verdict) =>
        verdict === "ok"
          ? session.send(text).pipe(Effect.catch((e) => send(inputError(e.message))))
          : send(inputError(turnRefusal(verdict, ctx.options))))
    let inputRate = 16_000
    /** The caller's audio could not reach whoever hears it (a realtime connection, a closed session). */
    const lineFailed = (e: { readonly message: string; readonly _tag: string }) =>
      send({ type: "error", source: "transport", message: e.message, recoverable: e._tag !== "SessionClosed" })
    const pushAudio = (bytes: Uint8Array) =>
      bytes.byteLength % 2 !== 0
        ? send(inputError("an audio frame needs an even number of bytes (PCM16)"))
        : line.hear(AudioFrame.fromPcm16(bytes, inputRate)).pipe(Effect.catch(lineFailed))

    const onMessage = (message: ClientMessage): Effect.Effect<void> => {
      switch (message.type) {
        case "user_text":
          return message.text.length > ctx.options.maxTextChars
            ? send(inputError(`a user_text of ${message.text.length} characters is over the limit of ${ctx.options.maxTextChars}`))
            : message.text.trim() === ""
            ? send(inputError("user_text is empty"))
            : takeTurn(message.text)
        case "interrupt":
          return session.interrupt
        case "audio_end":
          return line.endAudio.pipe(Effect.catch(lineFailed))
        case "approve":
          return session.approve(message.callId).pipe(Effect.catch((e) => send(inputError(e.message))))
        case "reject":
          return session.reject(message.callId, message.reason !== undefined ? { reason: message.reason } : {}).pipe(
            Effect.catch((e) => send(inputError(e.message)))
          )
        case "timeline":
          return session.eventLog.pipe(Effect.flatMap((events) => send({ type: "timeline", svg: Timeline.fromEvents(events) })))
        case "audio_format":
          if (message.sampleRate < 8000 || message.sampleRate > 48_000) {
            return send(inputError(`sampleRate ${message.sampleRate} is outside 8000..48000`))
          }
          return Effect.sync(() => {
            inputRate = message.sampleRate
          })
      }
    }
    const onFrame = (frame: string | Uint8Array) =>
      Effect.gen(function*() {
        ServiceMetrics.frameIn(typeof frame === "string" ? "text" : "binary")
        if (typeof frame !== "string") return yield* pushAudio(frame)
        const message = parseClientFrame(frame)
        if (typeof message === "string") return yield* send(inputError(message))
        yield* onMessage(message)
      })

    // `ready` (and on a resume the conversation so far) before any event of the session: the
    // history is read and the client attached in one step, so every item is in the history or in
    // an event after it (or both: a client merges items by id).
    const token = yield* call.mint
    const agent = yield* session.currentAgent
    yield* call.attach(client, () => {
      Queue.offerUnsafe(outbox, encode({
        type: "ready",
        sessionId: session.id,
        resumeToken: token.token,
        resumeExpiresAt: token.expiresAt,
        ...(resumed ? { resumed: true } : {}),
        agent: agent?.name ?? ctx.agent.name,
        audio: line.audio,
        inputSampleRate: inputRate
      } satisfies ServerFrame))
      if (resumed) Queue.offerUnsafe(outbox, encode({ type: "history", items: Effect.runSync(session.history).items } satisfies ServerFrame))
    })

    const readLoop = Effect.gen(function*() {
      while (true) {
        const pulled = yield* pullWithin(reader.pull, ctx.options.idleSeconds)
        if (Option.isNone(pulled)) return { _tag: "end", reason: idleReason(ctx.options.idleSeconds) } as const
        for (const frame of pulled.value) yield* onFrame(frame)
      }
    })
    const outcome = yield* Effect.raceFirst(
      readLoop.pipe(Effect.catch((e: Socket.SocketError) => Effect.succeed(socketGone(e)))),
      Effect.raceFirst(
        Deferred.await(call.ended).pipe(Effect.map((reason) => ({ _tag: "ended", reason } as const))),
        Deferred.await(superseded).pipe(Effect.as({ _tag: "superseded" } as const))
      )
    )
    switch (outcome._tag) {
      case "gone": // the client cannot be told; the session waits for it
        yield* call.detach(client)
        break
      case "end": // the client is done, or idle: the session ends with this connection
        yield* call.end(outcome.reason)
        if (outcome.reason !== "client left") {
          yield* send({ type: "close", reason: outcome.reason })
          yield* closeWith(1000, outcome.reason)
        }
        break
      case "ended":
        if (outcome.reason === Call.movedReason) break // told to reconnect, and closed
        // the session's own `close` event went out already
        if (outcome.reason !== Call.sessionClosedReason) yield* send({ type: "close", reason: outcome.reason })
        yield* closeWith(1000, outcome.reason)
        break
      case "superseded":
        yield* send({ type: "close", reason: supersededReason })
        yield* closeWith(4409, supersededReason)
        break
    }
  }).pipe(Effect.scoped)

/** Why a connection was closed when another resumed its session. */
export const supersededReason = "another connection resumed this session"

const inputError = (message: string): ServerFrame => ({ type: "error", source: "input", message, recoverable: true })

/** How the socket went: a close with 1000 says the client is done; any other (a cut without a
 * close, 1006; going away, 1001; a transport error) may be followed by a resume. */
const socketGone = (e: Socket.SocketError) =>
  e.reason._tag === "SocketCloseError" && e.reason.code === 1000
    ? ({ _tag: "end", reason: "client left" } as const)
    : ({ _tag: "gone" } as const)

const textOutput = (send: (frame: ServerFrame) => Effect.Effect<void>): TextOutputService => ({
  start: () => Effect.void,
  write: (delta, info) => send({ type: "agent_text", agent: info.agent, speechId: info.speechId, delta }),
  end: () => Effect.void
})

const audioOutput = (
  send: (frame: ServerFrame) => Effect.Effect<void>,
  sendBytes: (bytes: Uint8Array) => Effect.Effect<void>
): AudioOutputService => {
  let rate: number | undefined
  return {
    write: (pcm, sampleRate) =>
      Effect.suspend(() => {
        const announce = rate === sampleRate ? Effect.void : send({ type: "audio_format", sampleRate })
        rate = sampleRate
        return Effect.andThen(announce, sendBytes(pcm))
      }),
    clear: (info) => send({ type: "clear", speechId: info.speechId, agent: info.agent })
  }
}
