/**
 * `effect/ai` `LanguageModel` for OpenAI-compatible chat-completions servers
 * (OpenAI, Azure-style gateways, Ollama, llama.cpp, vLLM, ...), streamed over
 * SSE with `effect/http`.
 *
 * **Providing it**
 *
 * `OpenAiChat.layer(options)` and `OpenAiChat.layerConfig` provide
 * `LanguageModel.LanguageModel` (and `OpenAiChat`, the non-secret settings in
 * use) and **require `HttpClient.HttpClient`**, so the application picks the
 * transport once:
 *
 * ```ts
 * // explicit options, any HttpClient
 * OpenAiChat.layer({ model: "gpt-4o-mini", apiKey: Redacted.make(key) }).pipe(Layer.provide(FetchHttpClient.layer))
 * // from OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_MODEL
 * OpenAiChat.layerConfig.pipe(Layer.provide(NodeHttpClient.layerUndici))
 * // the same with the transport already provided
 * OpenAiChat.layerConfigFetch   // FetchHttpClient.layer (global fetch)
 * OpenAiChat.layerConfigNode    // NodeHttpClient.layerUndici (undici agent)
 * ```
 *
 * **Behaviour**
 *
 * - Every request is `stream: true` with `stream_options.include_usage`;
 *   `generateText` collects the same stream.
 * - Retries (`maxRetries`, default 2, exponential backoff from
 *   `retryBaseDelay`) happen only before the response body is read, and only
 *   for 429 (waiting `retry-after-ms` / `retry-after` when sent, unless it
 *   exceeds `maxRetryAfter`), 5xx and transport failures. Nothing is retried
 *   once the body is being streamed. Delays use the Effect `Clock`
 *   (`TestClock` drives them in tests).
 * - Interrupting the consumer aborts the HTTP request.
 * - The API key is `Redacted`; it is only written into the `Authorization`
 *   header (which `effect/http` redacts in spans) and scrubbed from every
 *   server-provided text that ends up in errors or logs.
 *
 * @since 0.1.0
 */
import * as ChatLimits from "./ChatLimits.ts"
import * as ErrorInfo from "../../src/ErrorInfo.ts"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import {
  Clock,
  Config,
  ConfigProvider,
  Context,
  Duration,
  Effect,
  Layer,
  Option,
  Redacted,
  Schedule,
  Stream
} from "effect"
import { AiError, IdGenerator, LanguageModel, Telemetry } from "effect/ai"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import {
  aiError,
  isRetryableBeforeBody,
  makeScrub,
  networkReason,
  reasonFromResponse,
  reasonFromStreamError
} from "./ChatErrors.ts"
import * as ModelParts from "../../services/ModelParts.ts"
import { decodeChatStream } from "./ChatStream.ts"
import { makeRequestBody, parseErrorBody, type RequestSettings, type WireRequestBody } from "./ChatWire.ts"

/** Default `OPENAI_BASE_URL`. */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1"

/** Default `OPENAI_MODEL`. */
export const DEFAULT_MODEL = "gpt-4o-mini"

/**
 * Explicit options for {@link OpenAiChat.layer} (with the limits of `ChatLimits.Tuning`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends ChatLimits.Tuning {
  /** Model name sent as `model`. */
  readonly model: string
  /** Bearer key. Omit for keyless servers (Ollama, llama.cpp, vLLM, ...). */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** API root; `/chat/completions` is appended. Default `https://api.openai.com/v1`. */
  readonly baseUrl?: string | undefined
  /** Sent as `parallel_tool_calls` when tools are present. Default `true`. */
  readonly parallelToolCalls?: boolean | undefined
  readonly temperature?: number | undefined
  readonly maxTokens?: number | undefined
  /** Field used for `maxTokens`. Default `"max_completion_tokens"`; older servers want `"max_tokens"`. */
  readonly maxTokensParameter?: "max_tokens" | "max_completion_tokens" | undefined
  /** Retries after the first attempt (429, 5xx, transport failures before the body). Default 2. */
  readonly maxRetries?: number | undefined
  /** First backoff delay, doubled on each retry. Default 500 ms. */
  readonly retryBaseDelay?: Duration.Input | undefined
  /** A 429 asking to wait longer than this is not retried. Default 30 s. */
  readonly maxRetryAfter?: Duration.Input | undefined
  /** Extra request headers (e.g. `OpenAI-Organization`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/**
 * Options of {@link OpenAiChat.layerConfigWith}: everything but what the environment provides.
 *
 * @since 0.1.0
 * @category models
 */
export type TuningOptions = Omit<Options, "model" | "apiKey" | "baseUrl">

/**
 * Non-secret settings of the model in use, provided as the `OpenAiChat` service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Info {
  readonly model: string
  readonly baseUrl: string
  readonly hasApiKey: boolean
}

const normalizeBaseUrl = (baseUrl: string | undefined): string =>
  (baseUrl === undefined || baseUrl.trim() === "" ? DEFAULT_BASE_URL : baseUrl.trim()).replace(/\/+$/, "")

const normalizeKey = (apiKey: Redacted.Redacted<string> | undefined): Option.Option<Redacted.Redacted<string>> =>
  apiKey !== undefined && Redacted.value(apiKey).trim() !== "" ? Option.some(apiKey) : Option.none()

const isOpenAiHost = (baseUrl: string): boolean =>
  URL.canParse(baseUrl) && new URL(baseUrl).hostname === "api.openai.com"

/**
 * Builds the `LanguageModel` service. Requires an `HttpClient`.
 */
export const make = Effect.fnUntraced(function*(options: Options) {
  const client = yield* HttpClient.HttpClient
  const baseUrl = normalizeBaseUrl(options.baseUrl)
  const url = `${baseUrl}/chat/completions`
  const apiKey = normalizeKey(options.apiKey)
  const scrub = makeScrub(apiKey)
  const maxRetries = Math.max(0, Math.floor(options.maxRetries ?? 2))
  const retryBaseDelay = Duration.fromInputUnsafe(options.retryBaseDelay ?? "500 millis")
  const maxRetryAfter = Duration.fromInputUnsafe(options.maxRetryAfter ?? "30 seconds")
  const limits = ChatLimits.make({ ...options, url })
  const settings: RequestSettings = {
    model: options.model,
    parallelToolCalls: options.parallelToolCalls ?? true,
    temperature: options.temperature,
    maxTokens: options.maxTokens,
    maxTokensParameter: options.maxTokensParameter ?? "max_completion_tokens"
  }

  const baseRequest = HttpClientRequest.post(url).pipe(
    HttpClientRequest.setHeaders({ ...options.headers, accept: "text/event-stream" }),
    (request) => Option.isSome(apiKey) ? HttpClientRequest.bearerToken(request, apiKey.value) : request
  )

  /** One attempt: send the request and check the status. Does not read a 2xx body. */
  const attempt = Effect.fnUntraced(function*(method: string, body: WireRequestBody) {
    const request = yield* HttpClientRequest.bodyJson(baseRequest, body).pipe(
      Effect.mapError((error) =>
        aiError(
          method,
          new AiError.NetworkError({
            reason: "EncodeError",
            method: "POST",
            url,
            description: scrub(`request body is not JSON-serializable: ${String(error.cause)}`)
          })
        )
      )
    )
    const response = yield* client.execute(request).pipe(
      Effect.mapError((error) =>
        aiError(method, networkReason(error, { method: "POST", url, scrub, phase: "request failed" }))
      )
    )
    if (response.status >= 200 && response.status < 300) {
      const contentType = response.headers["content-type"] ?? ""
      if (!contentType.includes("application/json")) return response
      // a JSON body where an event stream was asked for: an error envelope, or a server that ignored `stream`
      const text = yield* limits.boundedText(response)
      return yield* Effect.fail(aiError(
        method,
        Option.match(parseErrorBody(text), {
          onSome: (error) => reasonFromStreamError(error, scrub),
          onNone: () =>
            new AiError.InvalidResponseError({
              description: scrub(`expected text/event-stream, got ${contentType}: ${text.slice(0, 200)}`)
            })
        })
      ))
    }
    const text = yield* limits.boundedText(response)
    const nowMillis = yield* Clock.currentTimeMillis
    return yield* Effect.fail(aiError(
      method,
      reasonFromResponse({
        response: { status: response.status, headers: response.headers, body: text },
        method: "POST",
        url,
        hasApiKey: Option.isSome(apiKey),
        scrub,
        nowMillis
      })
    ))
  })

  const retrySchedule = Schedule.exponential(retryBaseDelay).pipe(
    Schedule.setInputType<AiError.AiError>(),
    Schedule.modifyDelay(({ duration, input }) => Effect.succeed(input.retryAfter ?? duration))
  )

  const shouldRetry = (error: AiError.AiError): boolean => {
    if (!isRetryableBeforeBody(error)) return false
    const retryAfter = error.retryAfter
    return retryAfter === undefined || Duration.isLessThanOrEqualTo(retryAfter, maxRetryAfter)
  }

  /** Where a retry waits (the schedule's own rule, stated for the log line). */
  const retryDelay = (error: AiError.AiError, retry: number): Duration.Duration =>
    error.retryAfter ?? Duration.times(retryBaseDelay, 2 ** (retry - 1))

  const open = (method: string, body: WireRequestBody) => {
    let failures = 0
    return attempt(method, body).pipe(
      limits.responseTimeout(method),
      Effect.tapError((error) =>
        Effect.logDebug("OpenAiChat request failed").pipe(
          Effect.annotateLogs({
            reason: error.reason._tag,
            retryable: shouldRetry(error),
            message: scrub(error.message)
          })
        )
      ),
      // A retry is visible: one warning line with the reason, the status and the wait.
      Effect.tapError((error) => {
        failures++
        if (failures > maxRetries || !shouldRetry(error)) return Effect.void
        const info = ErrorInfo.fromError(error)
        return Effect.logWarning(`model request failed (${info.reason}${info.status === undefined ? "" : ` ${info.status}`}); retrying in ${Duration.format(retryDelay(error, failures))}`)
      }),
      Effect.retry({ schedule: retrySchedule, times: maxRetries, while: shouldRetry })
    )
  }

  const stream = (method: string, options: LanguageModel.ProviderOptions) =>
    Stream.unwrap(Effect.gen(function*() {
      const body = makeRequestBody(options, settings)
      Telemetry.addGenAIAnnotations(options.span, {
        provider: { name: "openai" },
        operation: { name: "chat" },
        request: { model: settings.model, temperature: settings.temperature, maxTokens: settings.maxTokens }
      })
      const response = yield* open(method, body)
      const text = response.stream.pipe(
        Stream.mapError((error) =>
          aiError(method, networkReason(error, { method: "POST", url, scrub, phase: "response stream failed" }))
        ),
        limits.idleTimeout(method),
        Stream.decodeText(),
        limits.maxAnswer(method)
      )
      return decodeChatStream(text, {
        operation: method,
        method: "POST",
        url,
        scrub,
        onFinish: (summary) =>
          Telemetry.addGenAIAnnotations(options.span, {
            response: { id: summary.id, model: summary.model, finishReasons: [summary.finishReason] },
            usage: {
              inputTokens: summary.usage.inputTokens.total,
              outputTokens: summary.usage.outputTokens.total
            }
          })
      })
    }))

  const streamText = (options: LanguageModel.ProviderOptions) => stream("streamText", options)
  const model = yield* LanguageModel.make({
    streamText,
    generateText: (options) =>
      stream("generateText", options).pipe(Stream.runCollect, Effect.map(collectParts))
  })
  // baton reads the parts directly (services/ModelParts.ts); `streamText` serves everyone else.
  // Call ids the server leaves out come from the same generator `LanguageModel.make` uses.
  const ids = Option.getOrElse(yield* Effect.serviceOption(IdGenerator.IdGenerator), () => IdGenerator.defaultIdGenerator)
  return ModelParts.withParts(model, (options) => streamText(options).pipe(Stream.provideService(IdGenerator.IdGenerator, ids)), {
    provider: "openai",
    model: settings.model
  })
})

/** Folds stream parts into the non-streaming part list used by `generateText`. */
export const collectParts = ModelParts.collectParts

const EnvConfig = Config.all({
  apiKey: Config.option(Config.Redacted("OPENAI_API_KEY")),
  baseUrl: Config.option(Config.String("OPENAI_BASE_URL")),
  model: Config.option(Config.String("OPENAI_MODEL"))
}).pipe(
  Config.flatMap(({ apiKey, baseUrl, model }) => {
    const resolvedBaseUrl = normalizeBaseUrl(Option.getOrUndefined(baseUrl))
    if (!URL.canParse(resolvedBaseUrl)) {
      return Config.fail(new ConfigProvider.SourceError({ message: "OPENAI_BASE_URL is not a valid URL" }))
    }
    const key = normalizeKey(Option.getOrUndefined(apiKey))
    if (Option.isNone(key) && isOpenAiHost(resolvedBaseUrl)) {
      return Config.fail(
        new ConfigProvider.SourceError({
          message: `OPENAI_API_KEY is required for ${resolvedBaseUrl}; ` +
            "set OPENAI_BASE_URL to use a keyless OpenAI-compatible server"
        })
      )
    }
    const resolvedModel = Option.getOrUndefined(model)?.trim()
    return Config.succeed({
      apiKey: Option.getOrUndefined(key),
      baseUrl: resolvedBaseUrl,
      model: resolvedModel === undefined || resolvedModel === "" ? DEFAULT_MODEL : resolvedModel
    })
  })
)

const layerWith = (options: Options) =>
  Layer.merge(
    Layer.effect(LanguageModel.LanguageModel, make(options)),
    Layer.succeed(OpenAiChat, {
      model: options.model,
      baseUrl: normalizeBaseUrl(options.baseUrl),
      hasApiKey: Option.isSome(normalizeKey(options.apiKey))
    })
  )

const layerConfigWith = (tuning: TuningOptions = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const env = yield* EnvConfig
    return layerWith({ ...tuning, ...env })
  }))

/**
 * The OpenAI chat-completions model. The service itself holds the non-secret
 * settings in use; its layers also provide `LanguageModel.LanguageModel`.
 *
 * @since 0.1.0
 * @category services
 */
export class OpenAiChat extends Context.Service<OpenAiChat, Info>()("baton/layers/openai/OpenAiChat") {
  /** Builds the `LanguageModel` service from explicit options (requires `HttpClient`). */
  static readonly make = make

  /** `LanguageModel` (+ `OpenAiChat`) from explicit options; requires `HttpClient`. */
  static readonly layer: (
    options: Options
  ) => Layer.Layer<LanguageModel.LanguageModel | OpenAiChat, never, HttpClient.HttpClient> = layerWith

  /**
   * `LanguageModel` (+ `OpenAiChat`) from `OPENAI_API_KEY` (optional when
   * `OPENAI_BASE_URL` is not api.openai.com), `OPENAI_BASE_URL` (default
   * `https://api.openai.com/v1`) and `OPENAI_MODEL` (default `gpt-4o-mini`),
   * with tuning options; requires `HttpClient`.
   */
  static readonly layerConfigWith: (
    tuning?: TuningOptions
  ) => Layer.Layer<LanguageModel.LanguageModel | OpenAiChat, Config.ConfigError, HttpClient.HttpClient> =
    layerConfigWith

  /** {@link OpenAiChat.layerConfigWith} with default tuning; requires `HttpClient`. */
  static readonly layerConfig: Layer.Layer<
    LanguageModel.LanguageModel | OpenAiChat,
    Config.ConfigError,
    HttpClient.HttpClient
  > = layerConfigWith()

  /** {@link OpenAiChat.layerConfig} over the global `fetch` (`FetchHttpClient.layer`). */
  static readonly layerConfigFetch: Layer.Layer<LanguageModel.LanguageModel | OpenAiChat, Config.ConfigError> =
    OpenAiChat.layerConfig.pipe(Layer.provide(FetchHttpClient.layer))

  /** {@link OpenAiChat.layerConfig} over an undici agent (`NodeHttpClient.layerUndici`). */
  static readonly layerConfigNode: Layer.Layer<LanguageModel.LanguageModel | OpenAiChat, Config.ConfigError> =
    OpenAiChat.layerConfig.pipe(Layer.provide(NodeHttpClient.layerUndici))
}
