/**
 * Measures one model call where it runs (an LLM step in Reply, a realtime response in
 * realtime/Reply.ts): the time to its first text and audio, the tokens and audio it used, how it
 * ended, as one `model_call` event. The runtime calls three functions; the metrics, traces and
 * usage are derived from the event.
 */
import { Cause, Exit, Option } from "effect"
import type { ModelCallEvent } from "../Events.ts"

type Fields = Omit<ModelCallEvent, "seq" | "at">

export interface Meter {
  /** Text arrived (the first call sets the time to first text). */
  readonly text: () => void
  /** Audio arrived: `bytes` of PCM16 mono at `sampleRate`. */
  readonly audio: (bytes: number, sampleRate: number) => void
  readonly usage: (usage: { readonly inputTokens?: number | undefined; readonly outputTokens?: number | undefined } | undefined) => void
  readonly model: (model: string | undefined) => void
  /** Another model answers the call (a fallback): its provider and model are the call's. */
  readonly served: (by: { readonly provider: string; readonly model: string }) => void
  /** A model failed before the one that answers: kept with the reason. */
  readonly failedOver: (by: { readonly provider: string; readonly model: string }, reason: string) => void
  /** The event for the call's end. */
  readonly end: (exit: Exit.Exit<unknown, unknown>) => Fields
}

/** The reason of a failure: an `AiError`'s reason tag, a tagged error's `reason`, or its tag. */
export const reasonOf = (error: unknown): string => {
  if (typeof error !== "object" || error === null) return "unknown"
  const e = error as { readonly reason?: unknown; readonly _tag?: unknown }
  if (typeof e.reason === "string") return e.reason
  if (typeof e.reason === "object" && e.reason !== null && typeof (e.reason as { _tag?: unknown })._tag === "string") {
    return (e.reason as { _tag: string })._tag
  }
  return typeof e._tag === "string" ? e._tag : error instanceof Error ? error.name : "unknown"
}

export const start = (
  base: { readonly agent: string; readonly speechId: string; readonly kind: "llm" | "realtime"; readonly provider: string; readonly model: string },
  now: () => number
): Meter => {
  const startedAt = now()
  let firstTextMs: number | undefined
  let firstAudioMs: number | undefined
  let inputTokens: number | undefined
  let outputTokens: number | undefined
  let audioSeconds = 0
  let provider = base.provider
  let failedOver: Array<{ readonly provider: string; readonly model: string; readonly reason: string }> | undefined
  let model = base.model
  return {
    text: () => {
      firstTextMs ??= now() - startedAt
    },
    audio: (bytes, sampleRate) => {
      firstAudioMs ??= now() - startedAt
      audioSeconds += bytes / 2 / sampleRate
    },
    usage: (usage) => {
      if (usage?.inputTokens !== undefined) inputTokens = (inputTokens ?? 0) + usage.inputTokens
      if (usage?.outputTokens !== undefined) outputTokens = (outputTokens ?? 0) + usage.outputTokens
    },
    model: (id) => {
      if (id) model = id
    },
    served: (by) => {
      provider = by.provider
      model = by.model
    },
    failedOver: (by, reason) => {
      ;(failedOver ??= []).push({ provider: by.provider, model: by.model, reason })
    },
    end: (exit) => {
      const failure = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
      const outcome = Exit.isSuccess(exit) ? "ok" : Cause.hasInterruptsOnly(exit.cause) ? "interrupted" : "error"
      return {
        type: "model_call",
        ...base,
        provider,
        model,
        startedAt,
        firstTextMs,
        firstAudioMs,
        inputTokens,
        outputTokens,
        audioOutputSeconds: audioSeconds > 0 ? audioSeconds : undefined,
        outcome,
        errorReason: outcome === "error" ? (failure && Option.isSome(failure) ? reasonOf(failure.value) : "defect") : undefined,
        ...(failedOver ? { failedOver } : {})
      }
    }
  }
}
