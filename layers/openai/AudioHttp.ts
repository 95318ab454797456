/**
 * What OpenAI's two audio endpoints share (`/v1/audio/transcriptions`, `/v1/audio/speech`): the
 * connection settings read from the environment, the request (Bearer key, abortable `fetch`, a
 * timeout), and the mapping of HTTP failures to `VoiceError` reasons. The key is `Redacted` and
 * only ever written into the `Authorization` header; error messages quote the provider's own
 * message, never the request.
 */
import { Config, Duration, Effect, Option, Redacted } from "effect"
import { VoiceError } from "../../services/VoiceError.ts"

export interface OpenAiAudioConnection {
  readonly apiKey: Redacted.Redacted<string>
  /** Default `https://api.openai.com/v1`. */
  readonly baseUrl?: string | undefined
  /** Time for the response headers. Default 30 s. */
  readonly timeout?: Duration.Input | undefined
}

export const defaultBaseUrl = "https://api.openai.com/v1"

/** `OPENAI_API_KEY` (required) and `OPENAI_BASE_URL`. */
export const connectionConfig = Config.all({
  apiKey: Config.Redacted("OPENAI_API_KEY"),
  baseUrl: Config.option(Config.String("OPENAI_BASE_URL"))
}).pipe(Config.map(({ apiKey, baseUrl }) => ({ apiKey, baseUrl: Option.getOrUndefined(baseUrl) })))

type Source = VoiceError["source"]

/** The provider's `{"error":{"message"}}`, or the start of the body. */
const providerMessage = (body: string): string => {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string }
    const message = typeof parsed.error === "string" ? parsed.error : parsed.error?.message
    if (typeof message === "string") return message
  } catch {
    // not JSON: the text itself
  }
  return body.slice(0, 200)
}

export const statusError = (source: Source, status: number, body: string, retryAfter: string | null) => {
  const said = providerMessage(body)
  const after = retryAfter === null ? "" : ` (retry after ${retryAfter} s)`
  const reason = status === 429 || status >= 500 ? "ProviderError" : status === 408 ? "Timeout" : "InvalidRequest"
  const hint = status === 401 ? " (check OPENAI_API_KEY)" : ""
  return new VoiceError({ source, reason, status, description: `OpenAI answered ${status}${hint}: ${said}${after}` })
}

/**
 * POSTs `body` to `baseUrl + path`; succeeds with a response whose status is 2xx. The request is
 * aborted when the Effect is interrupted or the headers take longer than `timeout`.
 */
export const post = (
  source: Source,
  connection: OpenAiAudioConnection,
  path: string,
  body: FormData | string,
  headers: Record<string, string> = {}
): Effect.Effect<Response, VoiceError> => {
  const url = `${(connection.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "")}${path}`
  const timeout = connection.timeout ?? Duration.seconds(30)
  return Effect.tryPromise({
    try: (signal) =>
      fetch(url, {
        method: "POST",
        body,
        signal,
        headers: { ...headers, Authorization: `Bearer ${Redacted.value(connection.apiKey)}` }
      }),
    catch: (e) => new VoiceError({ source, reason: "Transport", description: `POST ${path} failed: ${errorText(e)}` })
  }).pipe(
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () =>
        Effect.fail(new VoiceError({ source, reason: "Timeout", description: `POST ${path}: no answer in ${Duration.toMillis(timeout)} ms` }))
    }),
    Effect.flatMap((response) =>
      response.ok
        ? Effect.succeed(response)
        // cannot reject: a body that fails to arrive is read as empty
        : Effect.promise(() => response.text().catch(() => "")).pipe(
          Effect.flatMap((text) => Effect.fail(statusError(source, response.status, text, response.headers.get("retry-after"))))
        )
    )
  )
}

/** A fetch failure's cause ("ECONNREFUSED", "other side closed"), not just "fetch failed". */
export const errorText = (e: unknown): string => {
  const error = e as Error & { cause?: { code?: string; message?: string } }
  const cause = error.cause?.code ?? error.cause?.message
  return cause === undefined ? error.message : `${error.message} (${cause})`
}
