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
import type { Liveness } from "../shared/Liveness.ts"
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
  /**
   * Liveness pings of the socket: one that answered neither a ping nor anything else within
   * `timeout` is dropped (a half-open connection). Default every 10 s, 10 s to answer.
   */
  readonly liveness?: Liveness | undefined
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

/** A close the client did not ask for, as an error (1006: the connection was lost, no close frame). */
const closeError = (code: number, reason: string) =>
  new VoiceError({
    source: "stt",
    reason: reason.startsWith("DATA-") ? "InvalidAudio" : code === 1006 || reason.startsWith("NET-") ? "Transport" : "ProviderError",
    status: code,
    description: `Deepgram closed the stream (${code}${reason === "" ? "" : ` ${reason}`})${
      reason === "NET-0001" ? ": no audio or KeepAlive for 10 s" : ""
    }`
  })

/** What one stream's reader, writer and keep-alive share. */
interface State {
  readonly socket: VoiceSocket.VoiceSocket
  readonly events: Queue.Queue<SttEvent, VoiceError | Cause.Done>
  segments: Array<string>
  /** Audio seconds sent. */
  sentSeconds: number
  /**
   * Where the audio of the last emitted Final ended: a result that starts before it (a
   * from_finalize answer later than finalizeTimeout) belongs to a closed utterance.
   */
  closedUpTo: number
  finalized: Deferred.Deferred<void> | undefined
  closing: boolean
  closedWith: VoiceError | undefined
  audioSinceTick: boolean
}

const onResults = (state: State, message: Results) =>
  Effect.gen(function*() {
    const transcript = (message.channel?.alternatives?.[0]?.transcript ?? "").trim()
    if (message.start !== undefined && message.start < state.closedUpTo - 0.001) return
    if (message.is_final) {
      if (transcript !== "") state.segments.push(transcript)
      if (message.from_finalize && state.finalized !== undefined) yield* Deferred.succeed(state.finalized, undefined)
    } else if (transcript !== "") {
      yield* Queue.offer(state.events, { _tag: "Interim", text: [...state.segments, transcript].join(" ") })
    }
  })

/** Reads the socket until it closes; a close the client did not ask for fails `events`. */
const readFrames = (state: State) =>
  Effect.gen(function*() {
    while (true) {
      const frame = yield* Queue.take(state.socket.frames)
      if (frame._tag === "Close") {
        if (!state.closing) {
          state.closedWith = closeError(frame.code, frame.reason)
          yield* Queue.fail(state.events, state.closedWith)
          if (state.finalized !== undefined) yield* Deferred.succeed(state.finalized, undefined)
        }
        return
      }
      if (frame._tag !== "Text") continue
      const message = Option.liftThrowable(JSON.parse)(frame.text) as Option.Option<{ type?: string }>
      if (Option.isSome(message) && message.value.type === "Results") yield* onResults(state, message.value as Results)
    }
  }).pipe(Effect.catchCause(() => Effect.void))

/** A KeepAlive after each tick with no audio. */
const keepAlive = (state: State, everyMs: number) =>
  Effect.gen(function*() {
    while (true) {
      yield* Effect.sleep(Duration.millis(everyMs))
      if (!state.audioSinceTick) state.socket.send(JSON.stringify({ type: "KeepAlive" }))
      state.audioSinceTick = false
    }
  })

const notOpen = () => new VoiceError({ source: "stt", reason: "Transport", description: "the Deepgram socket is closed" })

const push = (state: State) => (frame: AudioFrame.AudioFrame) =>
  Effect.suspend(() => {
    if (frame.sampleRate !== sampleRate || frame.channels !== 1) {
      return Effect.fail(new VoiceError({
        source: "stt",
        reason: "InvalidAudio",
        description: `DeepgramStt takes 16000 Hz mono, got ${frame.sampleRate} Hz × ${frame.channels} (resample first)`
      }))
    }
    if (state.closedWith !== undefined) return Effect.fail(state.closedWith)
    state.audioSinceTick = true
    state.sentSeconds += frame.data.length / sampleRate
    const bytes = new Uint8Array(frame.data.buffer.slice(frame.data.byteOffset, frame.data.byteOffset + frame.data.byteLength))
    return state.socket.send(bytes) ? Effect.void : Effect.fail(notOpen())
  })

/** Read through a function: the reader fiber sets it while `endUtterance` waits. */
const closedWith = (state: State): VoiceError | undefined => state.closedWith

/** Finalize, wait for its answer (or `timeout`), emit the utterance's Final. */
const endUtterance = (state: State, timeout: Duration.Input): Effect.Effect<void, VoiceError> =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<void>()
    const boundary = state.sentSeconds
    if (state.closedWith !== undefined) return yield* state.closedWith
    state.finalized = done
    if (!state.socket.send(JSON.stringify({ type: "Finalize" }))) return yield* notOpen()
    yield* Deferred.await(done).pipe(Effect.timeoutOption(timeout))
    state.finalized = undefined
    const closed = closedWith(state)
    if (closed !== undefined) return yield* closed
    const text = state.segments.join(" ")
    state.segments = []
    state.closedUpTo = boundary
    yield* Queue.offer(state.events, { _tag: "Final", text })
  })

export const make = (options: DeepgramSttOptions): SttService => ({
  sampleRate,
  stream: Effect.fn("DeepgramStt.stream")(function*(streamOptions?: SttOptions) {
    const socket = yield* VoiceSocket.open({
      source: "stt",
      provider: "Deepgram",
      url: urlOf(options, streamOptions?.language),
      headers: { Authorization: `Token ${Redacted.value(options.apiKey)}` },
      liveness: options.liveness
    })
    const state: State = {
      socket,
      events: yield* Queue.unbounded<SttEvent, VoiceError | Cause.Done>(),
      segments: [],
      sentSeconds: 0,
      closedUpTo: 0,
      finalized: undefined,
      closing: false,
      closedWith: undefined,
      audioSinceTick: false
    }
    const lock = yield* Semaphore.make(1)
    yield* Effect.forkScoped(readFrames(state))
    yield* Effect.forkScoped(keepAlive(state, options.keepAliveMs ?? 5000))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        state.closing = true
        socket.send(JSON.stringify({ type: "CloseStream" }))
      }).pipe(Effect.andThen(Queue.end(state.events)))
    )
    return {
      push: push(state),
      endUtterance: lock.withPermits(1)(endUtterance(state, options.finalizeTimeout ?? Duration.seconds(3))).pipe(
        Effect.withSpan("DeepgramStt.endUtterance")
      ),
      events: Stream.fromQueue(state.events)
    }
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
