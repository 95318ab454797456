/**
 * `RealtimeModel` for the Gemini Live API (`BidiGenerateContent` over a WebSocket).
 *
 * **Providing it**
 *
 * ```ts
 * GeminiLive.layer({ apiKey: Redacted.make(key), model: "gemini-2.5-flash-native-audio-preview-12-2025" })
 * // from GEMINI_API_KEY (Redacted), GEMINI_LIVE_URL, GEMINI_LIVE_MODEL
 * GeminiLive.layerConfig
 * GeminiLive.layerConfigWith({ voice: "Kore", inputSampleRate: 24_000 })
 * ```
 *
 * Both provide `RealtimeModel` (and `GeminiLive`, the non-secret settings in use).
 *
 * **Capabilities** (what the protocol allows, docs/protocols.md 2.6, 2.7)
 *
 * - Instructions and tools are fixed by `setup`: `updateSession` with different ones fails with
 *   reason `unsupported` (baton then opens a new connection). There is no tool choice at all.
 * - The history is append-only (`clientContent`): `mutableChatContext` is false;
 *   `updateChatContext` appends the missing items and fails `unsupported` when it would have to
 *   delete one (see `GeminiHistory.ts`).
 * - Tool calls are always executed by baton (`toolCall` -> `FunctionCall`, `sendToolOutput` ->
 *   `toolResponse`), but the model continues by itself after a tool response: `autoToolReply`.
 * - No truncation of a model turn; `cancelResponse` sends an empty `clientContent`, which
 *   interrupts the generation.
 * - Audio: PCM16 in at `inputSampleRate` (default 16 kHz, named in the MIME type), PCM16 out at
 *   24 kHz; input and output transcription on; server activity detection on by default.
 * - Session resumption is on: on `goAway` the connection moves to a new socket with the newest
 *   handle (see `GeminiLiveConnection.ts`).
 *
 * The API key is `Redacted`; it travels in the URL's `key` parameter, which is never logged.
 */
import { Config, ConfigProvider, Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { type RealtimeCapabilities, RealtimeModel } from "../../services/RealtimeModel.ts"
import { connectGemini, type GeminiSettings } from "./GeminiLiveConnection.ts"
import { defaultLiveness, type Liveness } from "../openai/RealtimeSocket.ts"

export const DEFAULT_MODEL = "gemini-2.5-flash-native-audio-preview-12-2025"
export const DEFAULT_URL =
  "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

/**
 * Explicit options for the Gemini Live layer: key, model, endpoint, voice and the socket's
 * liveness checks.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Default `gemini-2.5-flash-native-audio-preview-12-2025`; `models/` is prefixed when missing. */
  readonly model?: string | undefined
  /** The endpoint, without the key. Default: Google's Live API endpoint. */
  readonly url?: string | undefined
  /** A prebuilt voice (e.g. `"Kore"`); the model's default when omitted. */
  readonly voice?: string | undefined
  /** Sample rate of the PCM16 that `pushAudio` receives. Default 16 000. */
  readonly inputSampleRate?: number | undefined
  /** Server voice activity detection. Default true; when false, `commitAudio` ends the user's turn. */
  readonly automaticActivityDetection?: boolean | undefined
  /** More `setup` fields (e.g. `contextWindowCompression`, `proactivity`), merged as they are. */
  readonly setup?: Readonly<Record<string, unknown>> | undefined
  /** Time allowed for `setupComplete`. Default 5 s. */
  readonly ackTimeout?: Duration.Input | undefined
  /** Time allowed for the WebSocket handshake. Default 10 s. */
  readonly connectTimeout?: Duration.Input | undefined
  /**
   * Liveness pings: every `interval`, and a connection whose server answered neither the ping
   * nor anything else within `timeout` is dropped (a half-open connection), so the reply on it
   * asks again on a fresh one. Default every 10 s, 10 s to answer.
   */
  readonly liveness?: Liveness | undefined
  /** Socket attempts when moving after a `goAway`. Default 3. */
  readonly reconnectAttempts?: number | undefined
  /** Start moving at the latest this long before the announced close. Default 1 s. */
  readonly goAwayMargin?: Duration.Input | undefined
}

/**
 * Non-secret settings of the model in use, provided as the `GeminiLive` service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Info {
  readonly model: string
  /** The endpoint, without the key. */
  readonly url: string
  readonly hasApiKey: boolean
}

export const capabilitiesFor = (options: Pick<Options, "automaticActivityDetection">): RealtimeCapabilities => ({
  mutableInstructions: false,
  mutableTools: false,
  mutableChatContext: false,
  perResponseToolChoice: false,
  manualFunctionCalls: true,
  autoToolReply: true,
  audioOutput: true,
  userTranscription: true,
  serverTurnDetection: options.automaticActivityDetection ?? true,
  messageTruncation: false
})

export const CAPABILITIES: RealtimeCapabilities = capabilitiesFor({})

const modelName = (model: string | undefined) => {
  const name = model?.trim() || DEFAULT_MODEL
  return name.startsWith("models/") || name.startsWith("projects/") ? name : `models/${name}`
}

const endpoint = (url: string | undefined) => {
  const text = url?.trim() || DEFAULT_URL
  // an invalid URL is kept as it is: `connect` fails with reason "connect"
  if (!URL.canParse(text)) return text
  const u = new URL(text)
  u.searchParams.delete("key")
  return u.toString()
}

const withKey = (url: string, apiKey: Redacted.Redacted<string> | undefined) => {
  const key = apiKey === undefined ? "" : Redacted.value(apiKey).trim()
  if (key === "" || !URL.canParse(url)) return url
  const u = new URL(url)
  u.searchParams.set("key", key)
  return u.toString()
}

export const settingsFrom = (options: Options): GeminiSettings => {
  return {
    url: withKey(endpoint(options.url), options.apiKey),
    model: modelName(options.model),
    voice: options.voice,
    inputSampleRate: options.inputSampleRate ?? 16_000,
    automaticActivityDetection: options.automaticActivityDetection ?? true,
    setupExtra: options.setup ?? {},
    capabilities: capabilitiesFor(options),
    ackTimeout: Duration.fromInputUnsafe(options.ackTimeout ?? "5 seconds"),
    connectTimeout: Duration.fromInputUnsafe(options.connectTimeout ?? "10 seconds"),
    liveness: options.liveness ?? defaultLiveness,
    reconnectAttempts: Math.max(1, Math.floor(options.reconnectAttempts ?? 3)),
    goAwayMargin: Duration.fromInputUnsafe(options.goAwayMargin ?? "1 second")
  }
}

/** The `RealtimeModel` service for these options. */
export const make = (options: Options): RealtimeModel["Service"] => {
  const settings = settingsFrom(options)
  return RealtimeModel.of({
    provider: "google",
    model: settings.model,
    capabilities: settings.capabilities,
    connect: (config) => connectGemini(settings, config)
  })
}

const layerWith = (options: Options) =>
  Layer.merge(
    Layer.succeed(RealtimeModel, make(options)),
    Layer.succeed(GeminiLive, {
      model: modelName(options.model),
      url: endpoint(options.url),
      hasApiKey: options.apiKey !== undefined && Redacted.value(options.apiKey).trim() !== ""
    })
  )

const EnvConfig = Config.all({
  apiKey: Config.Redacted("GEMINI_API_KEY"),
  url: Config.option(Config.String("GEMINI_LIVE_URL")),
  model: Config.option(Config.String("GEMINI_LIVE_MODEL"))
}).pipe(
  Config.flatMap(({ apiKey, model, url }) => {
    const endpointUrl = Option.getOrUndefined(url)
    if (endpointUrl !== undefined && !URL.canParse(endpointUrl)) {
      return Config.fail(new ConfigProvider.SourceError({ message: "GEMINI_LIVE_URL is not a valid URL" }))
    }
    if (Redacted.value(apiKey).trim() === "") {
      return Config.fail(new ConfigProvider.SourceError({ message: "GEMINI_API_KEY is empty" }))
    }
    return Config.succeed<Options>({ apiKey, url: endpointUrl, model: Option.getOrUndefined(model) })
  })
)

/**
 * Options of {@link GeminiLive.layerConfigWith}: everything but what the environment gives.
 *
 * @since 0.1.0
 * @category models
 */
export type TuningOptions = Omit<Options, "apiKey" | "url" | "model">

const layerConfigWith = (tuning: TuningOptions = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const env = yield* EnvConfig
    return layerWith({ ...tuning, ...env })
  }))

/**
 * The Gemini Live model. The service holds the non-secret settings in use; its layers also
 * provide `RealtimeModel`.
 *
 * @since 0.1.0
 * @category services
 */
export class GeminiLive extends Context.Service<GeminiLive, Info>()("baton/layers/google/GeminiLive") {
  static readonly make = make

  /** `RealtimeModel` (+ `GeminiLive`) from explicit options. */
  static readonly layer: (options?: Options) => Layer.Layer<RealtimeModel | GeminiLive> = (options = {}) =>
    layerWith(options)

  /**
   * `RealtimeModel` (+ `GeminiLive`) from `GEMINI_API_KEY` (Redacted, required),
   * `GEMINI_LIVE_URL` (endpoint, default Google's Live API endpoint) and `GEMINI_LIVE_MODEL` (default
   * `gemini-2.5-flash-native-audio-preview-12-2025`), with tuning options.
   */
  static readonly layerConfigWith: (tuning?: TuningOptions) => Layer.Layer<RealtimeModel | GeminiLive, Config.ConfigError> =
    layerConfigWith

  /** {@link GeminiLive.layerConfigWith} with default tuning. */
  static readonly layerConfig: Layer.Layer<RealtimeModel | GeminiLive, Config.ConfigError> = layerConfigWith()
}
