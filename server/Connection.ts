/**
 * One WebSocket connection = one `AgentSession` of the core, in the connection's Scope: when the
 * client goes, the Scope closes and the session with it (every call answered, every actor's
 * Scope closed). The session's events go out as JSON frames; its words stream as `agent_text`;
 * the agents' audio goes out as binary PCM16 and is cut with `clear`. The user's binary frames
 * (PCM16) are heard by the holder's realtime connection or the cascaded voice pipeline (Line.ts).
 */
import { Deferred, Effect, Option, Stream } from "effect"
import { Socket } from "effect/socket"
import * as AudioFrame from "../services/AudioFrame.ts"
import type { AudioOutputService } from "../services/AudioOutput.ts"
import type { ResamplerService } from "../services/Resampler.ts"
import type { TextOutputService } from "../services/TextOutput.ts"
import type { Agent } from "../src/index.ts"
import * as Timeline from "../src/Timeline.ts"
import type { ServerOptions } from "./Config.ts"
import { turnGate, turnRefusal } from "./Limits.ts"
import * as Line from "./Line.ts"
import { idleReason, pullWithin } from "./Liveness.ts"
import * as ServiceMetrics from "./Metrics.ts"
import type { Registry } from "./Registry.ts"
import { type ClientMessage, encode, parseClientFrame, type ServerFrame } from "./Wire.ts"

export interface ConnectionContext {
  readonly agent: Agent.Agent
  readonly userdata: () => unknown
  readonly options: ServerOptions
  readonly registry: Registry
  readonly resampler: ResamplerService
  /** The rate a realtime model takes the user's audio at (OpenAI 24 kHz, Gemini 16 kHz). */
  readonly realtimeInputRate: number
}

/** Serves one upgraded socket until the client leaves, goes idle, or the drain closes it. */
export const serve = Effect.fn("Server.connection")(function*(socket: Socket.Socket, ctx: ConnectionContext) {
  // Taking the reader completes the upgrade; writes wait for it, so it comes first.
  const reader = yield* socket.reader
  const writer = yield* socket.writer
  // A client that left cannot be told anything; what matters then is closing its session.
  const send = (frame: ServerFrame | object) => writer.write(encode(frame)).pipe(Effect.ignore)
  const sendBytes = (bytes: Uint8Array) => writer.write(bytes).pipe(Effect.ignore)

  const closer = yield* Deferred.make<string>()
  yield* Effect.acquireRelease(ctx.registry.register(closer), () => ctx.registry.unregister(closer))

  const line = yield* Line.start(ctx, audioOutput(send, sendBytes), textOutput(send))
  const session = line.session
  yield* ServiceMetrics.sessionOpened

  // The turns this client has waiting and how fast it sends them (Limits.ts); events say when one is taken.
  const turns = yield* turnGate(ctx.options)
  yield* session.events.pipe(Stream.runForEach((event) => Effect.andThen(Effect.sync(() => turns.observe(event)), send(event))), Effect.forkScoped)
  const takeTurn = (text: string) =>
    Effect.flatMap(turns.offer, (verdict) =>
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

  yield* send({ type: "ready", sessionId: session.id, agent: ctx.agent.name, audio: line.audio, inputSampleRate: inputRate })

  const readLoop = Effect.gen(function*() {
    while (true) {
      const pulled = yield* pullWithin(reader.pull, ctx.options.idleSeconds)
      if (Option.isNone(pulled)) return idleReason(ctx.options.idleSeconds)
      for (const frame of pulled.value) yield* onFrame(frame)
    }
  })
  const reason = yield* Effect.raceFirst(
    readLoop.pipe(Effect.catch((e: Socket.SocketError) => Effect.succeed(closeReason(e)))),
    Deferred.await(closer)
  )
  if (reason !== "client left" && reason !== "connection lost") {
    yield* send({ type: "close", reason })
    yield* writer.write(new Socket.CloseEvent(1000, reason.slice(0, 100))).pipe(Effect.ignore)
  }
  yield* Effect.logDebug(`session ${session.id} ended: ${reason}`)
}, (effect) =>
  Effect.scoped(effect).pipe(
    Effect.ensuring(ServiceMetrics.sessionClosed)
  ))

const inputError = (message: string): ServerFrame => ({ type: "error", source: "input", message, recoverable: true })

/** Why the read loop ended; 1006 is a connection cut without a close (a terminated or half-open one). */
const closeReason = (e: Socket.SocketError): string =>
  e.reason._tag !== "SocketCloseError" ? `transport: ${e.message}` : e.reason.code === 1006 ? "connection lost" : "client left"

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
