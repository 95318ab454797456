/**
 * `RealtimeModel` for the OpenAI Realtime API (GA, `gpt-realtime`) over a WebSocket.
 *
 * **Providing it**
 *
 * ```ts
 * // explicit options
 * OpenAiRealtime.layer({ apiKey: Redacted.make(key), model: "gpt-realtime", voice: "marin" })
 * // from OPENAI_API_KEY (Redacted), OPENAI_REALTIME_URL or OPENAI_BASE_URL, OPENAI_REALTIME_MODEL
 * OpenAiRealtime.layerConfig
 * OpenAiRealtime.layerConfigWith({ ackTimeout: "3 seconds", turnDetection: null })
 * ```
 *
 * Both provide `RealtimeModel` (and `OpenAiRealtime`, the non-secret settings in use). The
 * transport is the `ws` package (see `RealtimeSocket.ts` for why); nothing else is required.
 *
 * **Behaviour** (details in `OpenAiRealtimeConnection.ts`, `OpenAiRealtimeHandlers.ts`,
 * `RealtimeItems.ts`)
 *
 * - The session is configured with PCM16 24 kHz audio in and out, the voice, server turn
 *   detection (configurable, `null` disables it), input transcription (configurable), the
 *   instructions, tools and tool choice; conversation items use baton's item ids.
 * - Function calls are surfaced as `FunctionCall` events and never answered by the server:
 *   baton sends the output (`sendToolOutput`) and asks for a reply (`createResponse`).
 * - Acknowledged requests (`updateSession`, `updateChatContext`, `sendToolOutput`) return an
 *   `Ack` that fails with `rejected` on an `error` naming the request, with `timeout` after
 *   `ackTimeout` (default 5 s; the pending entry is removed and a later answer is dropped with a
 *   debug log), and with `closed` when the connection ends first.
 * - A `session_expired` error reconnects and re-seeds the conversation (event `Reconnected`).
 * - The API key is `Redacted`: it is only written into the `Authorization` header, never logged.
 */
import { Config, ConfigProvider, Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { type RealtimeCapabilities, RealtimeModel } from "../../services/RealtimeModel.ts"
import { connectOpenAi, type ConnectionSettings } from "./OpenAiRealtimeConnection.ts"
import { defaultLiveness, type Liveness } from "./RealtimeSocket.ts"

export const DEFAULT_MODEL = "gpt-realtime"
export const DEFAULT_BASE_URL = "https://api.openai.com/v1"

/**
 * Server turn detection (docs/protocols.md 1.2); `null` in {@link Options.turnDetection} disables it.
 *
 * @since 0.1.0
 * @category models
 */
export type TurnDetection =
  | {
    readonly type: "server_vad"
    readonly threshold?: number
    readonly prefixPaddingMs?: number
    readonly silenceDurationMs?: number
    readonly idleTimeoutMs?: number
    /** The server answers a detected turn by itself (default true). */
    readonly createResponse?: boolean
    /** User speech cancels the response being spoken (default true). */
    readonly interruptResponse?: boolean
  }
  | {
    readonly type: "semantic_vad"
    readonly eagerness?: "low" | "medium" | "high" | "auto"
    readonly createResponse?: boolean
    readonly interruptResponse?: boolean
  }

/**
 * Explicit options for the OpenAI Realtime layer: key, model, URL, voice, turn detection,
 * transcription and the socket's liveness checks.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Default `gpt-realtime`. */
  readonly model?: string | undefined
  /** The full WebSocket URL (a `model` query parameter is added when absent). Wins over `baseUrl`. */
  readonly url?: string | undefined
  /** API root (`https://…/v1`); the socket is `wss://…/v1/realtime?model=…`. Default `https://api.openai.com/v1`. */
  readonly baseUrl?: string | undefined
  /** Default `"marin"`. */
  readonly voice?: string | undefined
  /** Default server VAD with the server's defaults (`createResponse` and `interruptResponse` true). */
  readonly turnDetection?: TurnDetection | null | undefined
  /** Input transcription model; `null` disables it. Default `gpt-4o-mini-transcribe`. */
  readonly inputTranscription?: { readonly model: string; readonly language?: string; readonly prompt?: string } | null | undefined
  readonly noiseReduction?: "near_field" | "far_field" | null | undefined
  /** Acknowledgement timeout of pipelined requests. Default 5 s. */
  readonly ackTimeout?: Duration.Input | undefined
  /** Handshake timeout (socket open + `session.created`). Default 10 s. */
  readonly connectTimeout?: Duration.Input | undefined
  /**
   * Liveness pings: every `interval`, and a connection whose server answered neither the ping
   * nor anything else within `timeout` is dropped (a half-open connection), so the reply on it
   * asks again on a fresh one. Default every 10 s, 10 s to answer.
   */
  readonly liveness?: Liveness | undefined
  /** Reconnect and re-seed on `session_expired`. Default true. */
  readonly reconnectOnExpiry?: boolean | undefined
  /** Connection attempts per reconnection. Default 3. */
  readonly reconnectAttempts?: number | undefined
  /** Extra handshake headers (e.g. `OpenAI-Organization`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/**
 * Non-secret settings of the model in use, provided as the `OpenAiRealtime` service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Info {
  readonly model: string
  /** The socket URL (no secret: the key travels in a header). */
  readonly url: string
  readonly hasApiKey: boolean
}

export const CAPABILITIES: RealtimeCapabilities = {
  mutableInstructions: true,
  mutableTools: true,
  mutableChatContext: true,
  perResponseToolChoice: true,
  manualFunctionCalls: true,
  autoToolReply: false,
  audioOutput: true,
  userTranscription: true,
  serverTurnDetection: true,
  messageTruncation: true
}

/** The socket URL for the options. */
export const realtimeUrl = (options: Pick<Options, "url" | "baseUrl" | "model">): string => {
  const model = options.model ?? DEFAULT_MODEL
  const raw = options.url?.trim()
  const text = raw !== undefined && raw !== "" ? raw : `${(options.baseUrl?.trim() || DEFAULT_BASE_URL).replace(/\/+$/, "")}/realtime`
  // an invalid URL is kept as it is: `connect` fails with reason "connect"
  if (!URL.canParse(text)) return text
  const url = new URL(text)
  if (url.protocol === "https:") url.protocol = "wss:"
  if (url.protocol === "http:") url.protocol = "ws:"
  if (!url.searchParams.has("model")) url.searchParams.set("model", model)
  return url.toString()
}

const turnDetectionWire = (td: TurnDetection | null) => {
  if (td === null) return null
  const common = { create_response: td.createResponse ?? true, interrupt_response: td.interruptResponse ?? true }
  if (td.type === "semantic_vad") return { type: "semantic_vad", eagerness: td.eagerness ?? "auto", ...common }
  return {
    type: "server_vad",
    ...(td.threshold === undefined ? {} : { threshold: td.threshold }),
    ...(td.prefixPaddingMs === undefined ? {} : { prefix_padding_ms: td.prefixPaddingMs }),
    ...(td.silenceDurationMs === undefined ? {} : { silence_duration_ms: td.silenceDurationMs }),
    ...(td.idleTimeoutMs === undefined ? {} : { idle_timeout_ms: td.idleTimeoutMs }),
    ...common
  }
}

const PCM = { type: "audio/pcm", rate: 24_000 } as const

export const settingsFrom = (options: Options): ConnectionSettings => {
  const transcription = options.inputTranscription === undefined
    ? { model: "gpt-4o-mini-transcribe" }
    : options.inputTranscription
  const key = options.apiKey === undefined ? "" : Redacted.value(options.apiKey).trim()
  return {
    url: realtimeUrl(options),
    headers: { ...options.headers, ...(key === "" ? {} : { Authorization: `Bearer ${key}` }) },
    model: options.model ?? DEFAULT_MODEL,
    sessionBase: {
      output_modalities: ["audio"],
      audio: {
        input: {
          format: PCM,
          transcription,
          turn_detection: turnDetectionWire(options.turnDetection === undefined ? { type: "server_vad" } : options.turnDetection),
          noise_reduction: options.noiseReduction ? { type: options.noiseReduction } : null
        },
        output: { format: PCM, voice: options.voice ?? "marin" }
      }
    },
    capabilities: CAPABILITIES,
    ackTimeout: Duration.fromInputUnsafe(options.ackTimeout ?? "5 seconds"),
    connectTimeout: Duration.fromInputUnsafe(options.connectTimeout ?? "10 seconds"),
    liveness: options.liveness ?? defaultLiveness,
    reconnectOnExpiry: options.reconnectOnExpiry ?? true,
    reconnectAttempts: Math.max(1, Math.floor(options.reconnectAttempts ?? 3))
  }
}

/** The `RealtimeModel` service for these options. */
export const make = (options: Options): RealtimeModel["Service"] => {
  const settings = settingsFrom(options)
  return RealtimeModel.of({
    provider: "openai",
    model: settings.model,
    capabilities: CAPABILITIES,
    connect: (config) => connectOpenAi(settings, config)
  })
}

const isOpenAiHost = (url: string) => URL.canParse(url) && new URL(url).hostname === "api.openai.com"

const layerWith = (options: Options) => {
  const url = realtimeUrl(options)
  return Layer.merge(
    Layer.succeed(RealtimeModel, make(options)),
    Layer.succeed(OpenAiRealtime, {
      model: options.model ?? DEFAULT_MODEL,
      url,
      hasApiKey: options.apiKey !== undefined && Redacted.value(options.apiKey).trim() !== ""
    })
  )
}

const EnvConfig = Config.all({
  apiKey: Config.option(Config.Redacted("OPENAI_API_KEY")),
  url: Config.option(Config.String("OPENAI_REALTIME_URL")),
  baseUrl: Config.option(Config.String("OPENAI_BASE_URL")),
  model: Config.option(Config.String("OPENAI_REALTIME_MODEL"))
}).pipe(
  Config.flatMap(({ apiKey, baseUrl, model, url }) => {
    const options: Options = {
      apiKey: Option.getOrUndefined(apiKey),
      url: Option.getOrUndefined(url),
      baseUrl: Option.getOrUndefined(baseUrl),
      model: Option.getOrUndefined(model)?.trim() || DEFAULT_MODEL
    }
    const resolved = URL.canParse(options.url ?? options.baseUrl ?? DEFAULT_BASE_URL)
      ? realtimeUrl(options)
      : undefined
    if (resolved === undefined) {
      return Config.fail(new ConfigProvider.SourceError({ message: "OPENAI_REALTIME_URL / OPENAI_BASE_URL is not a valid URL" }))
    }
    const hasKey = options.apiKey !== undefined && Redacted.value(options.apiKey).trim() !== ""
    if (!hasKey && isOpenAiHost(resolved)) {
      return Config.fail(new ConfigProvider.SourceError({ message: "OPENAI_API_KEY is required for api.openai.com" }))
    }
    return Config.succeed(options)
  })
)

/**
 * Options of {@link OpenAiRealtime.layerConfigWith}: everything but what the environment gives.
 *
 * @since 0.1.0
 * @category models
 */
export type TuningOptions = Omit<Options, "apiKey" | "url" | "baseUrl" | "model">

const layerConfigWith = (tuning: TuningOptions = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const env = yield* EnvConfig
    return layerWith({ ...tuning, ...env })
  }))

/**
 * The OpenAI Realtime model. The service holds the non-secret settings in use; its layers also
 * provide `RealtimeModel`.
 *
 * @since 0.1.0
 * @category services
 */
export class OpenAiRealtime extends Context.Service<OpenAiRealtime, Info>()("baton/layers/openai/OpenAiRealtime") {
  static readonly make = make

  /** `RealtimeModel` (+ `OpenAiRealtime`) from explicit options. */
  static readonly layer: (options?: Options) => Layer.Layer<RealtimeModel | OpenAiRealtime> = (options = {}) =>
    layerWith(options)

  /**
   * `RealtimeModel` (+ `OpenAiRealtime`) from `OPENAI_API_KEY` (Redacted; required for
   * api.openai.com), `OPENAI_REALTIME_URL` (full socket URL) or `OPENAI_BASE_URL` (API root),
   * `OPENAI_REALTIME_MODEL` (default `gpt-realtime`), with tuning options.
   */
  static readonly layerConfigWith: (
    tuning?: TuningOptions
  ) => Layer.Layer<RealtimeModel | OpenAiRealtime, Config.ConfigError> = layerConfigWith

  /** {@link OpenAiRealtime.layerConfigWith} with default tuning. */
  static readonly layerConfig: Layer.Layer<RealtimeModel | OpenAiRealtime, Config.ConfigError> = layerConfigWith()
}
