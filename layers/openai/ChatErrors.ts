/**
 * Mapping of chat-completions failures (HTTP status codes, error bodies,
 * in-stream error events, transport failures) to `effect/ai` `AiError`
 * reasons, plus `retry-after` parsing and API-key scrubbing.
 *
 * Every text that comes from the server or the transport goes through a
 * scrubber that removes the API key, so a server that echoes the key (in an
 * error message, say) cannot leak it into errors or logs.
 *
 * @since 0.1.0
 */
import { Duration, Option, Predicate, Redacted } from "effect"
import { AiError } from "effect/ai"
import type { HttpClientError } from "effect/http"
import { type ErrorObject, parseErrorBody } from "./ChatWire.ts"

/** Module name used in every `AiError` raised by this provider. */
export const MODULE = "OpenAiChat"

/** Removes the API key (if any) from a text. */
export type Scrub = (text: string) => string

export const makeScrub = (apiKey: Option.Option<Redacted.Redacted<string>>): Scrub => {
  if (Option.isNone(apiKey)) return (text) => text
  const key = Redacted.value(apiKey.value)
  if (key.length === 0) return (text) => text
  return (text) => text.split(key).join("<redacted>")
}

export const aiError = (method: string, reason: AiError.AiErrorReason): AiError.AiError =>
  AiError.make({ module: MODULE, method, reason })

const MAX_BODY_CHARS = 2_000

/** Response headers kept in the error's HTTP context (never request headers). */
const KEPT_HEADERS = ["content-type", "retry-after", "retry-after-ms", "x-request-id", "openai-processing-ms"]

/** Minimal view of an HTTP response used for error mapping. */
export interface ErrorResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: string
}

/**
 * Parses `retry-after-ms` (milliseconds) or `retry-after` (seconds, or an
 * HTTP date relative to `nowMillis`).
 */
export const parseRetryAfter = (
  headers: Readonly<Record<string, string | undefined>>,
  nowMillis: number
): Duration.Duration | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && /^\s*\d+(\.\d+)?\s*$/.test(ms)) {
    return Duration.millis(Number(ms))
  }
  const value = headers["retry-after"]
  if (value === undefined) return undefined
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Duration.millis(Number(value) * 1000)
  const date = Date.parse(value)
  if (Number.isNaN(date)) return undefined
  return Duration.millis(Math.max(0, date - nowMillis))
}

const codeString = (error: ErrorObject | undefined): string =>
  `${error?.code ?? ""} ${error?.type ?? ""}`.toLowerCase()

/**
 * Maps a non-2xx response to an `AiError` reason:
 * 401/403 -> AuthenticationError, 429 -> RateLimitError (with retry-after) or
 * QuotaExhaustedError (`insufficient_quota`), other 4xx -> InvalidRequestError,
 * 5xx -> InternalProviderError.
 */
export const reasonFromResponse = (params: {
  readonly response: ErrorResponse
  readonly method: string
  readonly url: string
  readonly hasApiKey: boolean
  readonly scrub: Scrub
  readonly nowMillis: number
}): AiError.AiErrorReason => {
  const { response, scrub } = params
  const status = response.status
  const body = scrub(response.body)
  const error = Option.getOrUndefined(parseErrorBody(body))
  const headers: Record<string, string> = {}
  for (const name of KEPT_HEADERS) {
    const value = response.headers[name]
    if (value !== undefined) headers[name] = scrub(value)
  }
  const http = {
    response: { status, headers },
    body: body.length > MAX_BODY_CHARS ? body.slice(0, MAX_BODY_CHARS) + "..." : body
  }
  const description = scrub(AiError.buildErrorDescription({
    status,
    message: error?.message ?? undefined,
    method: params.method,
    url: params.url,
    errorCode: error?.code,
    errorType: error?.type,
    requestId: response.headers["x-request-id"],
    body
  }))
  const codes = codeString(error)
  if (status === 401) {
    return new AiError.AuthenticationError({ kind: params.hasApiKey ? "InvalidKey" : "MissingKey", description, http })
  }
  if (status === 403) {
    return new AiError.AuthenticationError({ kind: "InsufficientPermissions", description, http })
  }
  if (status === 429) {
    if (codes.includes("insufficient_quota")) {
      return new AiError.QuotaExhaustedError({ http })
    }
    const retryAfter = parseRetryAfter(response.headers, params.nowMillis)
    return new AiError.RateLimitError(retryAfter === undefined ? { http } : { retryAfter, http })
  }
  if (status >= 500) {
    return new AiError.InternalProviderError({ description, http })
  }
  if (status >= 400) {
    const parameter = error?.param ?? undefined
    return new AiError.InvalidRequestError(parameter === undefined ? { description, http } : { description, parameter, http })
  }
  return new AiError.UnknownError({ description, http })
}

/** Maps an in-stream `{"error": ...}` payload (or `event: error`) to a reason. */
export const reasonFromStreamError = (error: ErrorObject, scrub: Scrub): AiError.AiErrorReason => {
  const description = scrub(
    [error.message ?? "stream error", error.code ? `[code: ${error.code}]` : error.type ? `[type: ${error.type}]` : ""]
      .filter((s) => s.length > 0)
      .join(" ")
  )
  const codes = codeString(error)
  if (codes.includes("insufficient_quota")) return new AiError.QuotaExhaustedError({})
  if (codes.includes("rate_limit")) return new AiError.RateLimitError({})
  if (codes.includes("invalid_api_key") || codes.includes("authentication")) {
    return new AiError.AuthenticationError({ kind: "InvalidKey", description })
  }
  if (codes.includes("content_filter") || codes.includes("content_policy")) {
    return new AiError.ContentPolicyError({ description })
  }
  if (codes.includes("invalid_request")) return new AiError.InvalidRequestError({ description })
  return new AiError.InternalProviderError({ description })
}

const causeText = (cause: unknown, depth = 0): string | undefined => {
  if (depth > 3 || cause === undefined || cause === null) return undefined
  if (Predicate.isString(cause)) return cause
  if (cause instanceof Error) {
    const inner = causeText((cause as { cause?: unknown }).cause, depth + 1)
    return inner === undefined || inner === cause.message ? cause.message : `${cause.message}: ${inner}`
  }
  return undefined
}

/**
 * Maps an `HttpClientError` (connection refused, reset, body stream aborted,
 * ...) to a `NetworkError`. The `HttpClientError` itself (which holds the
 * request and its headers) is not attached; its text is, scrubbed.
 */
export const networkReason = (
  error: HttpClientError.HttpClientError,
  params: { readonly method: string; readonly url: string; readonly scrub: Scrub; readonly phase: string }
): AiError.NetworkError => {
  const reason = error.reason
  const kind = reason._tag === "EncodeError" || reason._tag === "InvalidUrlError" ? reason._tag : "TransportError"
  const detail = reason.description ?? causeText(reason.cause) ?? reason._tag
  return new AiError.NetworkError({
    reason: kind,
    method: params.method,
    url: params.url,
    description: params.scrub(`${params.phase}: ${detail}`)
  })
}

/** Retryable before the response body has been read: 429, 5xx and transport failures. */
export const isRetryableBeforeBody = (error: AiError.AiError): boolean => {
  const reason = error.reason
  switch (reason._tag) {
    case "RateLimitError":
    case "InternalProviderError":
      return true
    case "NetworkError":
      return reason.reason === "TransportError"
    default:
      return false
  }
}
