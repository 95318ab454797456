/**
 * Streaming speech to text with Deepgram's live API (`/v1/listen` over WebSocket, Nova): one
 * socket per stream, audio as binary PCM16 16 kHz frames, transcripts back as JSON. Interims are
 * the finalized segments so far plus the current guess; `endUtterance` sends `Finalize` and the
 * `Final` is the utterance's segments once the `from_finalize` result arrives (or, if it never
 * does, after `finalizeTimeout`, with what was finalized; results for that utterance arriving
 * later are dropped by their `start`, so they never leak into the next one). `KeepAlive` goes out after a `keepAliveMs`
 * tick with no audio (Deepgram closes an idle socket after 10 s, NET-0001); the Scope's end
 * sends `CloseStream`. Error close frames become `VoiceError`s on `events`.
 *
 * `DeepgramStt.layer({ apiKey, baseUrl?, model? })` / `DeepgramStt.layerConfig` (env
 * `DEEPGRAM_API_KEY`, `DEEPGRAM_BASE_URL`, `DEEPGRAM_MODEL`) provide `Stt`.
 */
import { type Cause, Config, Deferred, Duration, Effect, Layer, Option, Queue, Redacted, Semaphore, Stream } from "effect"
import type * as AudioFrame from "../../services/AudioFrame.ts"
import { Stt, type SttEvent, type SttOptions, type SttService } from "../../services/Stt.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import * as VoiceSocket from "../shared/VoiceSocket.ts"

export interface DeepgramSttOptions {
  readonly apiKey: Redacted.Redacted<string>
  /** Default `wss://api.deepgram.com/v1/listen`. */
  readonly baseUrl?: string | undefined
  /** Default `nova-3`. */
  readonly model?: string | undefined
  /** Idle time before a KeepAlive. Default 5000 ms. */
  readonly keepAliveMs?: number | undefined
  /** How long `endUtterance` waits for the finalized result. Default 3 s. */
  readonly finalizeTimeout?: Duration.Input | undefined
}

export const defaultBaseUrl = "wss://api.deepgram.com/v1/listen"
const sampleRate = 16000

interface Results {
  readonly type: "Results"
  readonly is_final?: boolean
  readonly from_finalize?: boolean
  /** Seconds of the stream's audio where this result starts. */
  readonly start?: number
  readonly channel?: { readonly alternatives?: ReadonlyArray<{ readonly transcript?: string; readonly confidence?: number }> }
}

const urlOf = (options: DeepgramSttOptions, language: string | undefined) => {
  const url = new URL(options.baseUrl ?? defaultBaseUrl)
  const params: Record<string, string> = {
    model: options.model ?? "nova-3",
    encoding: "linear16",
    sample_rate: String(sampleRate),
    channels: "1",
    interim_results: "true",
    punctuate: "true",
    smart_format: "true",
    language: language ?? "en-US"
  }
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v)
  return url.toString()
}

/** A close the client did not ask for, as an error. */
const closeError = (code: number, reason: string) =>
  new VoiceError({
    source: "stt",
    reason: reason.startsWith("DATA-") ? "InvalidAudio" : reason.startsWith("NET-") ? "Transport" : "ProviderError",
    status: code,
    description: `Deepgram closed the stream (${code}${reason === "" ? "" : ` ${reason}`})${
      reason === "NET-0001" ? ": no audio or KeepAlive for 10 s" : ""
    }`
  })

export const make = (options: DeepgramSttOptions): SttService => ({
  sampleRate,
  stream: Effect.fn("DeepgramStt.stream")(function*(streamOptions?: SttOptions) {
    const socket = yield* VoiceSocket.open({
      source: "stt",
      provider: "Deepgram",
      url: urlOf(options, streamOptions?.language),
      headers: { Authorization: `Token ${Redacted.value(options.apiKey)}` }
    })
    const events = yield* Queue.unbounded<SttEvent, VoiceError | Cause.Done>()
    const lock = yield* Semaphore.make(1)
    let segments: Array<string> = []
    // Audio seconds sent, and where the last emitted Final's audio ended: a result that starts
    // before that (a from_finalize answer later than finalizeTimeout) belongs to a closed utterance.
    let sentSeconds = 0
    let closedUpTo = 0
    let finalized: Deferred.Deferred<void> | undefined
    let closing = false
    let closedWith: VoiceError | undefined
    let audioSinceTick = false
    const closedAfter = (): VoiceError | undefined => closedWith

    const onResults = (message: Results) =>
      Effect.gen(function*() {
        const transcript = (message.channel?.alternatives?.[0]?.transcript ?? "").trim()
        if (message.start !== undefined && message.start < closedUpTo - 0.001) return
        if (message.is_final) {
          if (transcript !== "") segments.push(transcript)
          if (message.from_finalize && finalized !== undefined) yield* Deferred.succeed(finalized, undefined)
        } else if (transcript !== "") {
          yield* Queue.offer(events, { _tag: "Interim", text: [...segments, transcript].join(" ") })
        }
      })

    yield* Effect.forkScoped(Effect.gen(function*() {
      while (true) {
        const frame = yield* Queue.take(socket.frames)
        if (frame._tag === "Close") {
          if (!closing) {
            closedWith = closeError(frame.code, frame.reason)
            yield* Queue.fail(events, closedWith)
            if (finalized !== undefined) yield* Deferred.succeed(finalized, undefined)
          }
          return
        }
        if (frame._tag !== "Text") continue
        const message = Option.liftThrowable(JSON.parse)(frame.text) as Option.Option<{ type?: string }>
        if (Option.isSome(message) && message.value.type === "Results") yield* onResults(message.value as Results)
      }
    }).pipe(Effect.catchCause(() => Effect.void)))

    const keepAliveMs = options.keepAliveMs ?? 5000
    yield* Effect.forkScoped(Effect.gen(function*() {
      while (true) {
        yield* Effect.sleep(Duration.millis(keepAliveMs))
        if (!audioSinceTick) socket.send(JSON.stringify({ type: "KeepAlive" }))
        audioSinceTick = false
      }
    }))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closing = true
        socket.send(JSON.stringify({ type: "CloseStream" }))
      }).pipe(Effect.andThen(Queue.end(events)))
    )

    const notOpen = new VoiceError({ source: "stt", reason: "Transport", description: "the Deepgram socket is closed" })
    const push = (frame: AudioFrame.AudioFrame) =>
      Effect.suspend(() => {
        if (frame.sampleRate !== sampleRate || frame.channels !== 1) {
          return Effect.fail(new VoiceError({
            source: "stt",
            reason: "InvalidAudio",
            description: `DeepgramStt takes 16000 Hz mono, got ${frame.sampleRate} Hz × ${frame.channels} (resample first)`
          }))
        }
        if (closedWith !== undefined) return Effect.fail(closedWith)
        audioSinceTick = true
        sentSeconds += frame.data.length / sampleRate
        return socket.send(new Uint8Array(frame.data.buffer.slice(frame.data.byteOffset, frame.data.byteOffset + frame.data.byteLength)))
          ? Effect.void
          : Effect.fail(notOpen)
      })

    const endUtterance = lock.withPermits(1)(Effect.gen(function*() {
      const done = yield* Deferred.make<void>()
      const boundary = sentSeconds
      finalized = done
      if (closedWith !== undefined) return yield* closedWith
      if (!socket.send(JSON.stringify({ type: "Finalize" }))) return yield* notOpen
      yield* Deferred.await(done).pipe(Effect.timeoutOption(options.finalizeTimeout ?? Duration.seconds(3)))
      finalized = undefined
      const closed = closedAfter()
      if (closed !== undefined) return yield* closed
      const text = segments.join(" ")
      segments = []
      closedUpTo = boundary
      yield* Queue.offer(events, { _tag: "Final", text })
    })).pipe(Effect.withSpan("DeepgramStt.endUtterance"))

    return { push, endUtterance, events: Stream.fromQueue(events) }
  })
})

export const layer = (options: DeepgramSttOptions): Layer.Layer<Stt> => Layer.succeed(Stt, make(options))

/** {@link layer} from the environment: `DEEPGRAM_API_KEY`, `DEEPGRAM_BASE_URL`, `DEEPGRAM_MODEL`. */
export const layerConfig: Layer.Layer<Stt, Config.ConfigError> = Layer.effect(
  Stt,
  Effect.gen(function*() {
    const apiKey = yield* Config.Redacted("DEEPGRAM_API_KEY")
    const baseUrl = yield* Config.String("DEEPGRAM_BASE_URL").pipe(Config.withDefault(defaultBaseUrl))
    const model = yield* Config.String("DEEPGRAM_MODEL").pipe(Config.withDefault("nova-3"))
    return make({ apiKey, baseUrl, model })
  })
)
