/**
 * The phone bridge: Twilio Media Streams over a WebSocket (`/twilio`). Twilio sends `connected`,
 * `start` (the stream's id and format), `media` (base64 µ-law at 8 kHz, 20 ms a message), `mark`
 * (a mark we sent was played), `dtmf` (a keypad press: gathered into a turn, see
 * src/voice/Dtmf.ts) and `stop`; we send `media`, `mark` (after each reply, so we
 * know when it was played) and `clear` (barge-in: drop what is queued on the line). The caller's
 * audio goes to the holder's realtime connection (resampled to the model's rate), or without a
 * realtime model to the cascaded voice pipeline (Line.ts); the agents' audio comes back resampled
 * to 8 kHz µ-law.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Deferred, Effect, Option, Schema, Stream } from "effect"
import { Socket } from "effect/socket"
import * as AudioFrame from "../services/AudioFrame.ts"
import type { AudioOutputService } from "../services/AudioOutput.ts"
import * as Mulaw from "../services/Mulaw.ts"
import * as Dtmf from "../src/voice/Dtmf.ts"
import type { ResamplerStage } from "../services/Resampler.ts"
import type { ConnectionContext } from "./Connection.ts"
import * as Line from "./Line.ts"
import { idleReason, pullWithin } from "./Liveness.ts"
import * as ServiceMetrics from "./Metrics.ts"

const PHONE_RATE = 8000
/** 20 ms of µ-law at 8 kHz: what Twilio sends and expects. */
const CHUNK = 160

const Media = Schema.Struct({ payload: Schema.String })
/**
 * The messages of a Twilio Media Stream (connected, start, media, mark, dtmf, stop) as a schema.
 *
 * @since 0.1.0
 * @category models
 */
export const TwilioMessage = Schema.Union([
  Schema.Struct({ event: Schema.Literal("connected") }),
  Schema.Struct({ event: Schema.Literal("start"), streamSid: Schema.String }),
  Schema.Struct({ event: Schema.Literal("media"), media: Media }),
  Schema.Struct({ event: Schema.Literal("mark"), mark: Schema.Struct({ name: Schema.String }) }),
  Schema.Struct({ event: Schema.Literal("dtmf"), dtmf: Schema.Struct({ digit: Schema.String }) }),
  Schema.Struct({ event: Schema.Literal("stop") })
])
type TwilioMessage = typeof TwilioMessage.Type
const decodeMessage = Schema.decodeUnknownResult(TwilioMessage)

const parse = (text: string): TwilioMessage | string => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return "not JSON"
  }
  const result = decodeMessage(json)
  return result._tag === "Success" ? result.success : `not a Media Streams message: ${String(result.failure).split("\n")[0]}`
}

/**
 * Serves one Twilio stream until `stop`, the socket closing, `idleSeconds` without a message, or the drain.
 *
 * @since 0.1.0
 * @category constructors
 */
export const serve = Effect.fn("Server.twilio")(function*(socket: Socket.Socket, ctx: ConnectionContext) {
  // Taking the reader completes the upgrade; writes wait for it, so it comes first.
  const reader = yield* socket.reader
  const writer = yield* socket.writer
  const sendJson = (message: object) => writer.write(JSON.stringify(message)).pipe(Effect.ignore)
  const closer = yield* Deferred.make<string>()
  yield* Effect.acquireRelease(ctx.registry.register(closer), () => ctx.registry.unregister(closer))

  let streamSid: string | undefined
  const toPhone = new Map<number, ResamplerStage>()
  const output: AudioOutputService = {
    write: (pcm, sampleRate) =>
      Effect.gen(function*() {
        if (streamSid === undefined) return
        const stage = toPhone.get(sampleRate) ?? (yield* ctx.resampler.make(sampleRate, PHONE_RATE))
        toPhone.set(sampleRate, stage)
        for (const frame of stage.push(AudioFrame.fromPcm16(pcm, sampleRate))) {
          const ulaw = Mulaw.encode(frame.data)
          for (let at = 0; at < ulaw.length; at += CHUNK) {
            yield* sendJson({ event: "media", streamSid, media: { payload: Buffer.from(ulaw.subarray(at, at + CHUNK)).toString("base64") } })
          }
        }
      }),
    clear: () => (streamSid === undefined ? Effect.void : sendJson({ event: "clear", streamSid }))
  }

  const line = yield* Line.start(ctx, output)
  const session = line.session
  yield* ServiceMetrics.sessionOpened
  // Keypad presses, gathered into turns for whoever holds the floor.
  const keypad = yield* Dtmf.collector((text) => session.send(text).pipe(Effect.ignore))
  // After each reply, a mark: Twilio echoes it once the line has played the reply.
  yield* session.events.pipe(
    Stream.runForEach((event) =>
      event.type === "speech_finished" && streamSid !== undefined && !event.interrupted
        ? sendJson({ event: "mark", streamSid, mark: { name: `speech:${event.speechId}` } })
        : Effect.void
    ),
    Effect.forkScoped
  )

  const onMessage = (message: TwilioMessage) =>
    Effect.gen(function*() {
      switch (message.event) {
        case "start":
          streamSid = message.streamSid
          return
        case "media":
          return yield* line.hear(AudioFrame.make(Mulaw.decode(Buffer.from(message.media.payload, "base64")), PHONE_RATE)).pipe(Effect.ignore)
        case "mark": // the caller has heard that reply to its end
          return yield* Effect.logDebug(`twilio: ${message.mark.name} played`)
        case "dtmf":
          return yield* keypad.press(message.dtmf.digit)
        default:
          return
      }
    })

  const readLoop = Effect.gen(function*() {
    while (true) {
      const pulled = yield* pullWithin(reader.pull, ctx.options.idleSeconds)
      if (Option.isNone(pulled)) return idleReason(ctx.options.idleSeconds)
      for (const frame of pulled.value) {
        ServiceMetrics.frameIn(typeof frame === "string" ? "text" : "binary")
        if (typeof frame !== "string") continue
        const message = parse(frame)
        if (typeof message === "string") {
          yield* Effect.logWarning(`twilio: ${message}`)
          continue
        }
        if (message.event === "stop") return "the call ended"
        yield* onMessage(message)
      }
    }
  })
  const reason = yield* Effect.raceFirst(
    readLoop.pipe(Effect.catch((e: Socket.SocketError) => Effect.succeed(e.reason._tag === "SocketCloseError" ? "the line closed" : e.message))),
    Deferred.await(closer)
  )
  yield* writer.write(new Socket.CloseEvent(1000, reason.slice(0, 100))).pipe(Effect.ignore)
  yield* Effect.logDebug(`twilio session ${session.id} ended: ${reason}`)
}, (effect) =>
  Effect.scoped(effect).pipe(
    Effect.ensuring(ServiceMetrics.sessionClosed)
  ))
