/**
 * What an `error` event says about a failure, as data a program can branch on: a reason, the
 * provider's status where there is one, whether trying again can help, and one line a person can
 * act on. `effect/ai`'s `AiError` already classifies provider failures (the layers map HTTP
 * statuses and error bodies onto its reasons); this reads them. The pretty cause, with its stack
 * and file paths, goes to the debug log only.
 */
import { Cause, Option } from "effect"

/**
 * Why a model or tool failed, as an `error` event's `reason`: a bad key, rate or quota limits, a
 * refused request or content, the provider's fault, an unreadable answer, the network, a timeout,
 * a failed tool, or unknown. Branch on it to decide whether to retry or tell the user.
 *
 * @since 0.1.0
 * @category models
 */
export type ErrorReason =
  | "InvalidKey"
  | "RateLimited"
  | "QuotaExhausted"
  | "InvalidRequest"
  | "ContentPolicy"
  | "ServerError"
  | "InvalidResponse"
  | "Transport"
  | "Timeout"
  | "ToolFailed"
  | "Unknown"

/**
 * What an `error` event says about a failure, as data: the reason, the provider's status where
 * there is one, whether trying again can help, and one line a person can act on.
 *
 * @since 0.1.0
 * @category models
 */
export interface ErrorInfo {
  readonly reason: ErrorReason
  readonly status?: number | undefined
  readonly retryable: boolean
  /** One line: what failed and, where known, what to do. */
  readonly message: string
}

interface ReasonLike {
  readonly _tag: string
  readonly kind?: string
  readonly reason?: string
  readonly description?: string
  readonly http?: { readonly response?: { readonly status?: number } }
  readonly isRetryable?: boolean
  /** A realtime model's error code (a failed response's, as the provider put it). */
  readonly code?: string
}

const reasonOf = (tag: string, kind: string | undefined): ErrorReason => {
  switch (tag) {
    case "AuthenticationError":
      return "InvalidKey"
    case "RateLimitError":
      return "RateLimited"
    case "QuotaExhaustedError":
      return "QuotaExhausted"
    case "InvalidRequestError":
    case "UnsupportedSchemaError":
      return "InvalidRequest"
    case "ContentPolicyError":
      return "ContentPolicy"
    case "InternalProviderError":
      return "ServerError"
    case "InvalidResponseError":
    case "InvalidOutputError":
      return "InvalidResponse"
    case "NetworkError":
      return kind === "TransportError" ? "Transport" : "InvalidRequest"
    case "RealtimeError":
      return kind === "timeout" ? "Timeout" : kind === "connect" || kind === "closed" ? "Transport" : "Unknown"
    case "Timeout":
      return "Timeout"
    default:
      return "Unknown"
  }
}

/** A response the realtime server failed, by its code (OpenAI's `status_details.error`). */
const failedResponse = (code: string | undefined): ErrorReason => {
  switch (code) {
    case "rate_limit_exceeded":
    case "inference_rate_limit_exceeded":
      return "RateLimited"
    case "insufficient_quota":
      return "QuotaExhausted"
    case "invalid_request_error":
      return "InvalidRequest"
    case "content_policy_violation":
      return "ContentPolicy"
    default:
      // server_error, and codes not known here: the server's side failed
      return "ServerError"
  }
}

const advice: Partial<Record<ErrorReason, string>> = {
  InvalidKey: "check the API key (OPENAI_API_KEY)",
  QuotaExhausted: "the account has no quota left",
  InvalidRequest: "the provider refused the request",
  Transport: "the provider could not be reached (is OPENAI_BASE_URL right, ending in /v1?)"
}

const firstLine = (text: string) => text.split("\n")[0]!.trim()

/** Reads an `AiError` (or its reason) the way an error event states it. */
export const fromError = (error: unknown): ErrorInfo => {
  const candidate = error as { readonly _tag?: string; readonly reason?: unknown; readonly message?: string } | null
  const reason = (candidate?._tag === "AiError" ? candidate.reason : candidate) as ReasonLike | null
  if (reason !== null && typeof reason === "object" && typeof reason._tag === "string" && reason._tag.endsWith("Error")) {
    // a layer's timeout is a transport failure whose description says so
    const failed = reason._tag === "RealtimeError" && reason.reason === "failed"
    const kind = failed
      ? failedResponse(reason.code)
      : reasonOf(reason.description?.startsWith("timeout:") ? "Timeout" : reason._tag, reason.reason)
    const status = reason.http?.response?.status
    const detail = firstLine(reason.description ?? (candidate as { message?: string }).message ?? reason._tag).replace(/^timeout: /, "")
    const hint = advice[kind]
    return {
      reason: kind,
      status,
      retryable: reason.isRetryable ?? (failed && (kind === "ServerError" || kind === "RateLimited")),
      message: `${kind}${status === undefined ? "" : ` (${status})`}: ${detail}${hint && !detail.includes(hint) ? `; ${hint}` : ""}`
    }
  }
  if (candidate !== null && typeof candidate === "object" && candidate._tag === "TimeoutError") {
    return { reason: "Timeout", retryable: true, message: `Timeout: ${firstLine(String(candidate.message ?? "no answer in time"))}` }
  }
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : String(error)
  return { reason: "Unknown", retryable: false, message: firstLine(text) }
}

/** The failure (or, failing that, the defect) of a cause, as an error event states it. */
export const fromCause = (cause: Cause.Cause<unknown>): ErrorInfo =>
  Option.match(Cause.findErrorOption(cause), {
    onSome: fromError,
    onNone: () => fromError(Cause.squash(cause))
  })
