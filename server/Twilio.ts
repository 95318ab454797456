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
import { Deferred, Effect, Option, Schema } from "effect"
import { Socket } from "effect/socket"
import * as AudioFrame from "../services/AudioFrame.ts"
import type { AudioOutputService } from "../services/AudioOutput.ts"
import { CallControlError, validDigits } from "../services/CallControl.ts"
import * as Mulaw from "../services/Mulaw.ts"
import * as Transfer from "../src/Transfer.ts"
import * as Dtmf from "../src/voice/Dtmf.ts"
import type { ResamplerStage } from "../services/Resampler.ts"
import type { ConnectionContext } from "./Connection.ts"
import * as Call from "./Call.ts"
import { supersededReason } from "./Connection.ts"
import * as Resumer from "./Resumer.ts"
import { idleReason, pullWithin } from "./Liveness.ts"
import * as ServiceMetrics from "./Metrics.ts"
import { dtmfTwiml, updateCall } from "./TwilioCallControl.ts"
import * as Transfers from "./Transfers.ts"

/** Each call's waiters for its next stream (a transfer that sends the caller back to the agent),
 * shared by the streams that carry the call in turn. */
const nextStream = new WeakMap<Call.Call, Transfers.StreamWaiters>()
const waitersOf = (call: Call.Call) => {
  let waiters = nextStream.get(call)
  if (!waiters) nextStream.set(call, waiters = Transfers.streamWaiters())
  return waiters
}
/** How long a transfer's outcome waits for the caller's stream to come back before the agent speaks anyway. */
const STREAM_BACK_MS = 10_000

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
  Schema.Struct({
    event: Schema.Literal("start"),
    streamSid: Schema.String,
    // Twilio's start block: the call, and the <Parameter>s of the TwiML's <Stream> (a resumeToken among them).
    start: Schema.optional(Schema.Struct({
      callSid: Schema.optional(Schema.String),
      customParameters: Schema.optional(Schema.Record(Schema.String, Schema.String))
    }))
  }),
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
 * With `BATON_TWILIO_STATUS_URL`, POSTs what the app needs to reconnect a call's stream (its
 * resume token, as the stream starts and as it is refreshed) as JSON. The token is a credential:
 * sent only there, never logged.
 */
const postStatus = (ctx: ConnectionContext, body: object) =>
  Option.match(ctx.options.twilioStatusUrl, {
    onNone: () => Effect.void,
    onSome: (url) =>
      Effect.tryPromise(() =>
        fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(5000) })
          .then((r) => {
            if (!r.ok) throw new Error(`HTTP ${r.status}`)
          })
      ).pipe(Effect.catch((e) => Effect.logWarning(`twilio: the status callback failed (${e.cause instanceof Error ? e.cause.message : String(e.cause)})`)))
  })

/**
 * Serves one Twilio stream until `stop`, the socket closing, `idleSeconds` without a message, or the drain.
 * Its `start` message's `customParameters.resumeToken` (a `<Parameter>` of the TwiML's `<Stream>`)
 * attaches it to that call instead of starting one; a stream cut without `stop` leaves its call
 * waiting `BATON_RESUME_S` for such a stream.
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
  let callSid: string | undefined
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
  const superseded = yield* Deferred.make<void>()
  const client: Call.Client = {
    audio: output,
    // After each reply, a mark: Twilio echoes it once the line has played the reply.
    event: (event) =>
      event.type === "speech_finished" && streamSid !== undefined && !event.interrupted
        ? sendJson({ event: "mark", streamSid, mark: { name: `speech:${event.speechId}` } })
        : Effect.void,
    token: (token) => postStatus(ctx, { event: "resume_token", callSid, streamSid, sessionId: token.sessionId, resumeToken: token.token, expiresAt: token.expiresAt }),
    superseded,
    hangUp: (reason) => hangUp(reason),
    sendDtmf: (digits) => sendDtmf(digits),
    transfer: (request) => transfer(request)
  }

  // The agent's hang-up and keypad, through Twilio's REST API (TwilioCallControl.ts).
  const api = Option.flatten(Option.fromNullishOr(ctx.options.twilioApi))
  /** Set while Twilio replaces this stream's TwiML to press keys: its `stop` is not the call's end. */
  let restreaming = false
  const hangUp = (reason: string): Effect.Effect<void> =>
    Option.isNone(api) || callSid === undefined
      ? Effect.void // closing the stream ends the call when the TwiML has nothing after <Connect>
      : updateCall(api.value, callSid, { Status: "completed" }).pipe(
        Effect.catch((e) => Effect.logWarning(`twilio: hanging up (${reason}) through the API failed, closing the stream instead: ${e.message}`))
      )
  const sendDtmf = (digits: string): Effect.Effect<void, CallControlError> =>
    Effect.gen(function*() {
      if (Option.isNone(api)) {
        return yield* new CallControlError({ reason: "unsupported", message: "twilio: DTMF needs Twilio's REST API: set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN" })
      }
      const streamUrl = api.value.streamUrl
      if (Option.isNone(streamUrl)) {
        return yield* new CallControlError({ reason: "unsupported", message: "twilio: DTMF reconnects the stream after the tones: set BATON_TWILIO_STREAM_URL (this service's wss://.../twilio)" })
      }
      if (call === undefined || callSid === undefined) return yield* new CallControlError({ reason: "no_call", message: "twilio: the stream has no call yet" })
      const token = yield* call.mint
      restreaming = true
      yield* updateCall(api.value, callSid, { Twiml: dtmfTwiml(yield* validDigits(digits), streamUrl.value, token.token) }).pipe(
        Effect.tapError(() => Effect.sync(() => void (restreaming = false)))
      )
    })

  /**
   * Transfers through Twilio's REST API (Transfers.ts, TwilioTransfer.ts). Replacing the call's
   * TwiML stops this stream: its `stop` is then the transfer's, and what it means waits for the
   * outcome (answered: the call is the person's now and ends here; else the caller comes back on
   * a new stream, which resumes the call).
   */
  let transferring: { readonly outcome: Deferred.Deferred<Transfer.TransferOutcome>; moved: boolean } | undefined
  const transfer = (request: Transfer.TransferRequest): Effect.Effect<Transfer.TransferOutcome> =>
    Effect.gen(function*() {
      const twilio = ctx.transfers?.twilio ?? "this service was started without transfers"
      if (typeof twilio === "string") return Transfer.outcome("Failed", twilio)
      if (call === undefined || callSid === undefined) return Transfer.outcome("Failed", "twilio: the stream has no call yet")
      const current = { outcome: yield* Deferred.make<Transfer.TransferOutcome>(), moved: false }
      transferring = current
      const back = yield* Transfers.awaitStream(waitersOf(call), STREAM_BACK_MS)
      const mint = call.mint
      return yield* Transfers.twilioCall(twilio, {
        callSid,
        sessionId: call.id,
        resumeToken: Effect.map(mint, (token) => token.token),
        moved: Effect.sync(() => void (current.moved = true)),
        back
      }).transfer(request).pipe(
        Effect.onExit((exit) =>
          Deferred.succeed(current.outcome, exit._tag === "Success" ? exit.value : Transfer.outcome("Failed", "the transfer was interrupted"))
        )
      )
    })
  /** A `stop` while (or after) this stream's call was moved by a transfer. */
  const stoppedByTransfer = (moved: NonNullable<typeof transferring>) =>
    Effect.map(Deferred.await(moved.outcome), (outcome) =>
      outcome._tag === "Answered"
        ? { _tag: "end" as const, reason: `the call was transferred (${outcome.reason})` }
        : moved.moved
        ? { _tag: "gone" as const, reason: "back to the agent after the transfer" }
        : { _tag: "end" as const, reason: "the call ended" })

  /** The call this stream carries: a new one, or the one its `resumeToken` parameter names. */
  let call: Call.Call | undefined
  let owner = false
  let keypad: Dtmf.Collector | undefined
  /** Completed when the call ends or another stream takes it over. */
  const away = yield* Deferred.make<string>()
  const begin = (message: Extract<TwilioMessage, { event: "start" }>) =>
    Effect.gen(function*() {
      streamSid = message.streamSid
      callSid = message.start?.callSid
      const resumeToken = message.start?.customParameters?.["resumeToken"]
      // The call's slot of BATON_MAX_SESSIONS is taken here, not at the upgrade: only `start` says
      // whether the stream carries a call that holds one already (a reconnect to a live call).
      if (resumeToken !== undefined) {
        const found = yield* ctx.resumer.reattach(resumeToken, "twilio")
        if (found._tag === "Refused") return found
        call = found.call
      } else {
        const admitted = yield* Effect.acquireRelease(
          Effect.sync(() => ctx.registry.admit()),
          (admission) => (admission === "ok" ? Effect.sync(() => ctx.registry.release()) : Effect.void)
        )
        if (admitted !== "ok") {
          yield* ServiceMetrics.refuse(admitted)
          return Resumer.unadmitted(admitted, ctx.options.maxSessions)
        }
        call = yield* Call.open(ctx, ctx.resumeSecret, false)
        owner = true
        const opened = call
        yield* Effect.acquireRelease(ctx.resumer.add(opened), () => ctx.resumer.remove(opened))
        yield* Effect.acquireRelease(ServiceMetrics.sessionOpened, () => ServiceMetrics.sessionClosed)
      }
      const session = call.line.session
      // Keypad presses, gathered into turns for whoever holds the floor.
      keypad = yield* Dtmf.collector((text) => session.send(text).pipe(Effect.ignore))
      yield* call.attach(client)
      // A caller sent back to the agent after a transfer is on the line again.
      yield* Transfers.streamAttached(waitersOf(call))
      yield* Effect.raceFirst(Deferred.await(call.ended), Deferred.await(superseded).pipe(Effect.as(supersededReason))).pipe(
        Effect.flatMap((reason) => Deferred.succeed(away, reason)),
        Effect.forkScoped
      )
      yield* Effect.flatMap(call.mint, client.token)
      return undefined
    })

  const onMessage = (message: TwilioMessage) =>
    Effect.gen(function*() {
      switch (message.event) {
        case "start":
          return yield* begin(message)
        case "media":
          if (call) yield* call.line.hear(AudioFrame.make(Mulaw.decode(Buffer.from(message.media.payload, "base64")), PHONE_RATE)).pipe(Effect.ignore)
          return
        case "mark": // the caller has heard that reply to its end
          return yield* Effect.logDebug(`twilio: ${message.mark.name} played`)
        case "dtmf":
          if (keypad) yield* keypad.press(message.dtmf.digit)
          return
        default:
          return
      }
    })

  type Outcome = { readonly _tag: "end" | "refused" | "gone"; readonly reason: string; readonly code?: number }
  const readLoop = Effect.gen(function*() {
    while (true) {
      const pulled = yield* pullWithin(reader.pull, ctx.options.idleSeconds)
      if (Option.isNone(pulled)) return { _tag: "end", reason: idleReason(ctx.options.idleSeconds) } satisfies Outcome
      for (const frame of pulled.value) {
        ServiceMetrics.frameIn(typeof frame === "string" ? "text" : "binary")
        if (typeof frame !== "string") continue
        const message = parse(frame)
        if (typeof message === "string") {
          yield* Effect.logWarning(`twilio: ${message}`)
          continue
        }
        // After a DTMF update Twilio stops this stream, plays the tones and resumes the call on a new one.
        if (message.event === "stop") {
          if (transferring !== undefined) return (yield* stoppedByTransfer(transferring)) satisfies Outcome
          return { _tag: restreaming ? "gone" : "end", reason: restreaming ? "restreaming after DTMF" : "the call ended" } satisfies Outcome
        }
        const refused = yield* onMessage(message)
        if (refused) return { _tag: "refused", reason: refused.message, code: refused.code } satisfies Outcome
      }
    }
  })
  const outcome: Outcome = yield* Effect.raceFirst(
    // A stream cut without `stop` may come back: the call's TwiML connects a new one with the resume token.
    readLoop.pipe(Effect.catch((e: Socket.SocketError) => Effect.succeed({ _tag: "gone", reason: e.reason._tag === "SocketCloseError" ? "the line closed" : e.message } satisfies Outcome))),
    Effect.raceFirst(Deferred.await(closer), Deferred.await(away)).pipe(Effect.map((reason): Outcome => ({ _tag: "end", reason })))
  )
  if (call && outcome._tag === "gone") yield* call.detach(client)
  else if (call && call.holds(client)) yield* call.end(outcome.reason)
  if (outcome._tag !== "gone") {
    if (outcome._tag === "refused") yield* Effect.logWarning(`twilio: a stream was refused: ${outcome.reason}`)
    const code = outcome.code ?? (outcome.reason === supersededReason ? 4409 : 1000)
    yield* writer.write(new Socket.CloseEvent(code, outcome.reason.slice(0, 100))).pipe(Effect.ignore)
  }
  yield* Effect.logDebug(`twilio stream ${streamSid ?? "(no start)"} ended: ${outcome.reason}`)
  // The stream that started the call holds it (and its slot) until it ends, wherever its caller is.
  if (call && owner) yield* Deferred.await(call.ended)
}, Effect.scoped)
