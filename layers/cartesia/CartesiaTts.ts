/**
 * Streaming text to speech with Cartesia's WebSocket API (`/tts/websocket`): one socket per
 * Layer, opened on first use and reopened after it dies, carrying one generation ("context") per
 * `synthesize` call. Each context asks for raw PCM16 at `sampleRate`; `chunk` messages are routed
 * by `context_id` to their stream as frames, `done` ends it, an `error` fails it (4xx
 * InvalidRequest, 5xx ProviderError; its title, message and error_code in the description). Interrupting a stream sends `cancel` and forgets the
 * context, so late chunks of a cancelled context are dropped. No chunk for `chunkTimeout` (5 s)
 * fails the stream with Timeout; a socket closed mid-generation fails its streams with Transport.
 *
 * `CartesiaTts.layer({ apiKey, voice, baseUrl? })` / `CartesiaTts.layerConfig` (env
 * `CARTESIA_API_KEY`, `CARTESIA_VOICE`, `CARTESIA_BASE_URL`, `CARTESIA_MODEL`) provide `Tts`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Cause, Config, Duration, Effect, Exit, Layer, Option, Queue, Redacted, Scope, Semaphore, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Tts, type TtsOptions, type TtsService } from "../../services/Tts.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import type { Liveness } from "../shared/Liveness.ts"
import * as VoiceSocket from "../shared/VoiceSocket.ts"

/**
 * Options of Cartesia text to speech: the key, voice id, endpoint, model, sample rate and how long
 * to wait for a chunk.
 *
 * @since 0.1.0
 * @category models
 */
export interface CartesiaTtsOptions {
  readonly apiKey: Redacted.Redacted<string>
  /** A Cartesia voice id (uuid). */
  readonly voice: string
  /** Default `wss://api.cartesia.ai/tts/websocket`. */
  readonly baseUrl?: string | undefined
  /** Default `sonic-3`. */
  readonly model?: string | undefined
  readonly language?: string | undefined
  /** Default 24000. */
  readonly sampleRate?: number | undefined
  /** Default `2025-04-16`. */
  readonly version?: string | undefined
  /** Longest wait for the next chunk. Default 5 s. */
  readonly chunkTimeout?: Duration.Input | undefined
  /**
   * Liveness pings of the socket: one that answered neither a ping nor anything else within
   * `timeout` is dropped (a half-open connection). Default every 10 s, 10 s to answer.
   */
  readonly liveness?: Liveness | undefined
}

/**
 * Cartesia's TTS WebSocket endpoint, the default `baseUrl`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "wss://api.cartesia.ai/tts/websocket"

type Route = Queue.Queue<AudioFrame.AudioFrame, VoiceError | Cause.Done>

interface Connection {
  readonly socket: VoiceSocket.VoiceSocket
  readonly routes: Map<string, Route>
  readonly scope: Scope.Closeable
  alive: boolean
}

interface ServerMessage {
  readonly type?: string
  readonly context_id?: string
  readonly data?: string
  readonly done?: boolean
  readonly status_code?: number
  readonly error?: string
  readonly message?: string
  readonly title?: string
  readonly error_code?: string
}

/** An error frame as a VoiceError: the current shape (`title`, `message`, `error_code`) or the older `error` string. */
const providerError = (message: ServerMessage) => {
  const status = message.status_code
  const text = [message.title, message.message ?? message.error].filter((t) => t !== undefined && t !== "").join(": ")
  const said = `${text === "" ? "no reason given" : text}${message.error_code === undefined ? "" : ` (${message.error_code})`}`
  return new VoiceError({
    source: "tts",
    reason: status !== undefined && status < 500 && status !== 429 ? "InvalidRequest" : "ProviderError",
    ...(status === undefined ? {} : { status }),
    description: `Cartesia refused the generation: ${said}`
  })
}

/** Routes one server message to its context's stream. */
const route = (connection: Connection, rate: number, text: string) =>
  Effect.gen(function*() {
    const parsed = Option.liftThrowable(JSON.parse)(text) as Option.Option<ServerMessage>
    if (Option.isNone(parsed)) return
    const message = parsed.value
    const target = message.context_id === undefined ? undefined : connection.routes.get(message.context_id)
    if (target === undefined) return // a cancelled or unknown context: its audio is dropped
    if (message.type === "chunk" && typeof message.data === "string") {
      const bytes = Buffer.from(message.data, "base64")
      const even = bytes.byteLength - (bytes.byteLength % 2)
      if (even > 0) yield* Queue.offer(target, AudioFrame.fromPcm16(new Uint8Array(bytes.subarray(0, even)), rate))
    }
    if (message.type === "error") {
      connection.routes.delete(message.context_id!)
      yield* Queue.fail(target, providerError(message))
    } else if (message.done === true) {
      connection.routes.delete(message.context_id!)
      yield* Queue.end(target)
    }
  })

/** Reads a connection's socket, routing messages, until it closes; then fails what was routed. */
const readFrames = (connection: Connection, rate: number) =>
  Effect.gen(function*() {
    while (true) {
      const frame = yield* Queue.take(connection.socket.frames)
      if (frame._tag === "Text") yield* route(connection, rate, frame.text)
      if (frame._tag === "Close") {
        connection.alive = false
        const lost = new VoiceError({
          source: "tts",
          reason: "Transport",
          status: frame.code,
          description: `the Cartesia socket closed (${frame.code}${frame.reason === "" ? "" : ` ${frame.reason}`}) mid-generation`
        })
        for (const target of connection.routes.values()) yield* Queue.fail(target, lost)
        connection.routes.clear()
        return
      }
    }
  }).pipe(Effect.catchCause(() => Effect.void))

/** A socket in its own Scope (a child of the Layer's), with its reader. */
const openConnection = (options: CartesiaTtsOptions, rate: number, layerScope: Scope.Scope) =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(layerScope)
    const socket = yield* VoiceSocket.open({
      source: "tts",
      provider: "Cartesia",
      url: options.baseUrl ?? defaultBaseUrl,
      headers: { "X-API-Key": Redacted.value(options.apiKey), "Cartesia-Version": options.version ?? "2025-04-16" },
      liveness: options.liveness
    }).pipe(Scope.provide(scope), Effect.onError(() => Scope.close(scope, Exit.void)))
    const connection: Connection = { socket, routes: new Map(), scope, alive: true }
    yield* Effect.forkIn(readFrames(connection, rate), scope)
    return connection
  })

/**
 * The `Tts` service over Cartesia's `/tts/websocket`: one socket for the layer's life, each
 * utterance a context multiplexed on it; opened when first needed and again after it is lost.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("CartesiaTts.make")(function*(options: CartesiaTtsOptions) {
  const rate = options.sampleRate ?? 24000
  const chunkTimeout = options.chunkTimeout ?? Duration.seconds(5)
  const layerScope = yield* Effect.scope
  const lock = yield* Semaphore.make(1)
  let current: Connection | undefined
  let counter = 0

  /** The open connection, opened (again) when there is none. */
  const connection = lock.withPermits(1)(Effect.suspend(() =>
    current !== undefined && current.alive && current.socket.isOpen()
      ? Effect.succeed(current)
      : Effect.gen(function*() {
        if (current !== undefined) yield* Scope.close(current.scope, Exit.void)
        current = yield* openConnection(options, rate, layerScope)
        return current
      })
  ))

  const request = (contextId: string, text: string, call: TtsOptions | undefined) =>
    JSON.stringify({
      model_id: options.model ?? "sonic-3",
      voice: { mode: "id", id: call?.voice ?? options.voice },
      language: options.language ?? "en",
      output_format: { container: "raw", encoding: "pcm_s16le", sample_rate: rate },
      context_id: contextId,
      transcript: text,
      continue: false,
      ...(call?.speed === undefined ? {} : { generation_config: { speed: call.speed } })
    })

  const timedOut = new VoiceError({
    source: "tts",
    reason: "Timeout",
    description: `Cartesia sent no audio for ${Duration.toMillis(chunkTimeout)} ms`
  })

  const synthesize = (text: string, call?: TtsOptions): Stream.Stream<AudioFrame.AudioFrame, VoiceError> =>
    text.trim() === "" ? Stream.empty : Stream.unwrap(Effect.gen(function*() {
      const conn = yield* connection
      const contextId = `baton-${process.pid}-${++counter}`
      const target = yield* Effect.acquireRelease(
        Effect.gen(function*() {
          const target: Route = yield* Queue.unbounded<AudioFrame.AudioFrame, VoiceError | Cause.Done>()
          conn.routes.set(contextId, target)
          if (!conn.socket.send(request(contextId, text, call))) {
            conn.routes.delete(contextId)
            return yield* new VoiceError({ source: "tts", reason: "Transport", description: "the Cartesia socket closed" })
          }
          return target
        }),
        () =>
          Effect.sync(() => {
            // Still routed: the reader stopped early (barge-in), so the generation is cancelled.
            if (conn.routes.delete(contextId)) conn.socket.send(JSON.stringify({ context_id: contextId, cancel: true }))
          })
      )
      return Stream.fromEffectRepeat(
        Queue.take(target).pipe(Effect.timeoutOrElse({ duration: chunkTimeout, orElse: () => Effect.fail(timedOut) }))
      )
    }).pipe(Effect.withSpan("CartesiaTts.synthesize")))

  return { sampleRate: rate, synthesize } satisfies TtsService
})

/**
 * `Tts` by Cartesia with explicit options.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: CartesiaTtsOptions): Layer.Layer<Tts, VoiceError> => Layer.effect(Tts, make(options))

/**
 * {@link layer} from the environment: `CARTESIA_API_KEY`, `CARTESIA_VOICE`, `CARTESIA_BASE_URL`, `CARTESIA_MODEL`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Tts, VoiceError | Config.ConfigError> = Layer.effect(
  Tts,
  Effect.gen(function*() {
    const apiKey = yield* Config.Redacted("CARTESIA_API_KEY")
    const voice = yield* Config.String("CARTESIA_VOICE")
    const baseUrl = yield* Config.String("CARTESIA_BASE_URL").pipe(Config.withDefault(defaultBaseUrl))
    const model = yield* Config.String("CARTESIA_MODEL").pipe(Config.withDefault("sonic-3"))
    return yield* make({ apiKey, voice, baseUrl, model })
  })
)
