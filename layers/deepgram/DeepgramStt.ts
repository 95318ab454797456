/**
 * Streaming speech to text with Deepgram's live API (`/v1/listen` over WebSocket, Nova): one
 * socket per stream, audio as binary PCM16 16 kHz messages of `chunkMs` (default 100 ms, as
 * LiveKit's plugin sends: five 20 ms frames a message, not one; what is gathered goes out before
 * a `Finalize`, and the first 60 ms of a pause after loud audio go out frame by frame, so
 * Deepgram's endpointing hears the pause at once), transcripts back as JSON. Interims are the finalized segments so far plus the
 * current guess; a `speech_final` result (Deepgram heard the words end) is an interim with
 * `endOfSpeech`, so that a reply can start before the pipeline ends the utterance. The audio's
 * gathering into messages is Gather.ts's.
 *
 * Deepgram finalizes words by itself: its endpointing (`endpointing`, sent explicitly, default
 * 25 ms of silence) sends `is_final`/`speech_final` results mid-stream, and `UtteranceEnd` (after
 * `utterance_end_ms`, default 1000) marks a gap after the last word. `endUtterance` sends
 * `Finalize` only as a flush, since Deepgram does not promise an answer without a significant
 * amount of audio. The `Final` comes as soon as every word heard is final and Deepgram's results
 * reach the utterance's end, or a `from_finalize` answer or an `UtteranceEnd` arrives. Otherwise
 * it waits: at most the endpointing delay when the words heard are all final (audio after them
 * is what endpointing called a pause), up to `finalizeTimeout` while words are still interim or
 * nothing was heard yet; words never finalized are kept as heard. Results of a closed utterance
 * arriving later (they end before its boundary) are dropped, so they never leak into the next one.
 * `KeepAlive` goes out after a `keepAliveMs` tick with no audio (Deepgram closes an idle socket
 * after 10 s, NET-0001); the Scope's end sends `CloseStream`. Error close frames become
 * `VoiceError`s on `events`.
 *
 * `DeepgramStt.layer({ apiKey, baseUrl?, model? })` / `DeepgramStt.layerConfig` (env
 * `DEEPGRAM_API_KEY`, `DEEPGRAM_BASE_URL`, `DEEPGRAM_MODEL`) provide `Stt`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Cause, Clock, Config, Deferred, Duration, Effect, Layer, Option, Queue, Redacted, Semaphore, Stream } from "effect"
import type * as AudioFrame from "../../services/AudioFrame.ts"
import { Stt, type SttEvent, type SttOptions, type SttService } from "../../services/Stt.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import type { Liveness } from "../shared/Liveness.ts"
import * as VoiceSocket from "../shared/VoiceSocket.ts"
import * as Gather from "./Gather.ts"

/**
 * Options of Deepgram streaming speech to text: the key, endpoint, model, keep-alive interval and
 * recognition settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeepgramSttOptions {
  readonly apiKey: Redacted.Redacted<string>
  /** Default `wss://api.deepgram.com/v1/listen`. */
  readonly baseUrl?: string | undefined
  /** Default `nova-3`. */
  readonly model?: string | undefined
  /**
   * Audio gathered into one message (ms). Default 100: fewer messages than one per 20 ms frame (a
   * message is a socket write, the largest cost of a call's audio path), and an utterance's last
   * audio is sent at once when it ends.
   */
  readonly chunkMs?: number | undefined
  /** Idle time before a KeepAlive. Default 5000 ms. */
  readonly keepAliveMs?: number | undefined
  /** Silence (ms) after which Deepgram finalizes the words heard (`speech_final`); `false` disables it. Default 25. */
  readonly endpointingMs?: number | false | undefined
  /** Gap (ms) after the last word for an `UtteranceEnd`. Default 1000. */
  readonly utteranceEndMs?: number | undefined
  /** How long `endUtterance` waits for words still interim to be finalized. Default 3 s. */
  readonly finalizeTimeout?: Duration.Input | undefined
  /**
   * Liveness pings of the socket: one that answered neither a ping nor anything else within
   * `timeout` is dropped (a half-open connection). Default every 10 s, 10 s to answer.
   */
  readonly liveness?: Liveness | undefined
}

/**
 * Deepgram's streaming endpoint, the default `baseUrl`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "wss://api.deepgram.com/v1/listen"
const sampleRate = 16000

interface Results {
  readonly type: "Results"
  readonly is_final?: boolean
  readonly speech_final?: boolean
  readonly from_finalize?: boolean
  /** Seconds of the stream's audio where this result starts, and how long it covers. */
  readonly start?: number
  readonly duration?: number
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
    endpointing: options.endpointingMs === false ? "false" : String(options.endpointingMs ?? 25),
    utterance_end_ms: String(options.utteranceEndMs ?? 1000),
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
  /** Finalized transcripts of the current utterance. */
  segments: Array<string>
  /** The latest interim guess at words not finalized yet ("" when every word heard is final). */
  pending: string
  /** Audio seconds sent, and how far Deepgram's results have covered. */
  sentSeconds: number
  heardUpTo: number
  /**
   * Where the audio of the last emitted Final ended: a result that ends by then (a
   * from_finalize answer later than finalizeTimeout) belongs to a closed utterance.
   */
  closedUpTo: number
  /** While `endUtterance` waits: woken by every message from Deepgram. */
  wake: Deferred.Deferred<void> | undefined
  /** A from_finalize answer, an UtteranceEnd or a close came: nothing more will settle the utterance. */
  settled: boolean
  closing: boolean
  /** The next message's audio (Gather.ts). */
  readonly gathering: Gather.Gathering
  closedWith: VoiceError | undefined
  audioSinceTick: boolean
}

const wake = (state: State) => state.wake === undefined ? Effect.void : Deferred.succeed(state.wake, undefined)

const settle = (state: State) =>
  Effect.suspend(() => {
    state.settled = true
    return wake(state)
  })

const onResults = (state: State, message: Results) =>
  Effect.gen(function*() {
    const transcript = (message.channel?.alternatives?.[0]?.transcript ?? "").trim()
    const end = (message.start ?? Number.POSITIVE_INFINITY) + (message.duration ?? 0)
    if (end <= state.closedUpTo + 0.001) return
    if (Number.isFinite(end)) state.heardUpTo = Math.max(state.heardUpTo, end)
    if (!message.is_final) {
      if (transcript === "") return
      state.pending = transcript
      yield* Queue.offer(state.events, { _tag: "Interim", text: [...state.segments, transcript].join(" ") })
      return yield* wake(state)
    }
    if (transcript !== "") state.segments.push(transcript)
    state.pending = ""
    // Deepgram's own endpointing: every word so far is final and a pause followed them, told now
    // (the utterance's Final waits for endUtterance) so that a reply can start on them
    if (message.speech_final && !message.from_finalize && state.segments.length > 0) {
      yield* Queue.offer(state.events, { _tag: "Interim", text: state.segments.join(" "), endOfSpeech: true })
    }
    yield* (message.from_finalize ? settle(state) : wake(state))
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
          yield* settle(state)
        }
        return
      }
      if (frame._tag !== "Text") continue
      const message = Option.liftThrowable(JSON.parse)(frame.text) as Option.Option<{ type?: string }>
      if (Option.isNone(message)) continue
      if (message.value.type === "Results") yield* onResults(state, message.value as Results)
      // A gap after the last word: the words are as final as they will get.
      if (message.value.type === "UtteranceEnd") yield* settle(state)
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
    return Gather.add(state.gathering, state.socket, frame.data, sampleRate) ? Effect.void : Effect.fail(notOpen())
  })

/** Read through a function: the reader fiber sets it while `endUtterance` waits. */
const closedWith = (state: State): VoiceError | undefined => state.closedWith

/** How long `endUtterance` waits: for audio after final words, and for words interim or not heard yet. */
interface Waits {
  readonly unheard: Duration.Duration
  readonly interim: Duration.Duration
}

/** Waits until Deepgram has settled the utterance ending at `boundary`, or the wait that applies runs out. */
const awaitSettled = (state: State, boundary: number, waits: Waits) =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    while (!state.settled && !(state.pending === "" && state.heardUpTo >= boundary - 0.001)) {
      const finalWords = state.pending === "" && state.segments.length > 0
      const left = Duration.toMillis(finalWords ? waits.unheard : waits.interim) - ((yield* Clock.currentTimeMillis) - start)
      if (left <= 0) return
      state.wake = yield* Deferred.make<void>()
      yield* Deferred.await(state.wake).pipe(Effect.timeoutOption(Duration.millis(left)))
      state.wake = undefined
    }
  }).pipe(Effect.ensuring(Effect.sync(() => {
    state.wake = undefined
    state.settled = false
  })))

/** Flush with Finalize, wait until the utterance is settled, emit its Final. */
const endUtterance = (state: State, waits: Waits): Effect.Effect<void, VoiceError> =>
  Effect.gen(function*() {
    const boundary = state.sentSeconds
    if (state.closedWith !== undefined) return yield* state.closedWith
    state.settled = false
    if (!Gather.flush(state.gathering, state.socket) || !state.socket.send(JSON.stringify({ type: "Finalize" }))) return yield* notOpen()
    yield* awaitSettled(state, boundary, waits)
    const closed = closedWith(state)
    if (closed !== undefined) return yield* closed
    // Words never finalized (the wait ran out, or an UtteranceEnd came first) are kept as heard.
    const text = [...state.segments, state.pending].filter((t) => t !== "").join(" ")
    state.segments = []
    state.pending = ""
    state.closedUpTo = boundary
    yield* Queue.offer(state.events, { _tag: "Final", text })
  })

const waitsOf = (options: DeepgramSttOptions): Waits => {
  const interim = Duration.fromInputUnsafe(options.finalizeTimeout ?? Duration.seconds(3))
  return { interim, unheard: options.endpointingMs === false ? interim : Duration.millis(options.endpointingMs ?? 25) }
}

/** The options Deepgram would refuse at the handshake, said plainly before it. */
const invalidOptions = (options: DeepgramSttOptions): VoiceError | undefined => {
  const wholeMs = (n: number | undefined) => n === undefined || (Number.isInteger(n) && n >= 0)
  if (options.endpointingMs !== false && !wholeMs(options.endpointingMs)) {
    return new VoiceError({ source: "stt", reason: "InvalidRequest", description: `endpointingMs must be a whole number of ms (≥ 0) or false, got ${options.endpointingMs}` })
  }
  if (!wholeMs(options.utteranceEndMs)) {
    return new VoiceError({ source: "stt", reason: "InvalidRequest", description: `utteranceEndMs must be a whole number of ms (≥ 0), got ${options.utteranceEndMs}` })
  }
  return undefined
}

/**
 * The `Stt` service over Deepgram's `/v1/listen` WebSocket: one socket per stream, interim and
 * final transcripts as they come.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: DeepgramSttOptions): SttService => ({
  sampleRate,
  stream: Effect.fn("DeepgramStt.stream")(function*(streamOptions?: SttOptions) {
    const invalid = invalidOptions(options)
    if (invalid !== undefined) return yield* invalid
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
      pending: "",
      sentSeconds: 0,
      heardUpTo: 0,
      closedUpTo: 0,
      wake: undefined,
      settled: false,
      closing: false,
      gathering: Gather.make(options.chunkMs ?? 100, sampleRate),
      closedWith: undefined,
      audioSinceTick: false
    }
    const lock = yield* Semaphore.make(1)
    yield* Effect.forkScoped(readFrames(state))
    yield* Effect.forkScoped(keepAlive(state, options.keepAliveMs ?? 5000))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        state.closing = true
        Gather.flush(state.gathering, socket)
        socket.send(JSON.stringify({ type: "CloseStream" }))
      }).pipe(Effect.andThen(Queue.end(state.events)))
    )
    return {
      push: push(state),
      endUtterance: lock.withPermits(1)(endUtterance(state, waitsOf(options))).pipe(
        Effect.withSpan("DeepgramStt.endUtterance")
      ),
      events: Stream.fromQueue(state.events)
    }
  })
})

/**
 * `Stt` by Deepgram with explicit options.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: DeepgramSttOptions): Layer.Layer<Stt> => Layer.succeed(Stt, make(options))

/**
 * {@link layer} from the environment: `DEEPGRAM_API_KEY`, `DEEPGRAM_BASE_URL`, `DEEPGRAM_MODEL`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Stt, Config.ConfigError> = Layer.effect(
  Stt,
  Effect.gen(function*() {
    const apiKey = yield* Config.Redacted("DEEPGRAM_API_KEY")
    const baseUrl = yield* Config.String("DEEPGRAM_BASE_URL").pipe(Config.withDefault(defaultBaseUrl))
    const model = yield* Config.String("DEEPGRAM_MODEL").pipe(Config.withDefault("nova-3"))
    return make({ apiKey, baseUrl, model })
  })
)
