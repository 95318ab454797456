/**
 * Measures one model call where it runs (an LLM step in Reply, a realtime response in
 * realtime/Reply.ts): the time to its first text and audio, the tokens and audio it used, how it
 * ended, as one `model_call` event. The runtime calls three functions; the metrics, traces and
 * usage are derived from the event.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Exit, Option } from "effect"
import type { ModelCallEvent } from "../Events.ts"

type Fields = Omit<ModelCallEvent, "seq" | "at">

/**
 * What a model call reports as it runs: text and audio arriving, usage, the model name, a fallback
 * answering, and how it ended. It becomes the call's `model_call` event.
 *
 * @since 0.1.0
 * @category models
 */
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

/**
 * The reason of a failure: an `AiError`'s reason tag, a tagged error's `reason`, or its tag.
 *
 * @since 0.1.0
 * @category utils
 */
export const reasonOf = (error: unknown): string => {
  if (typeof error !== "object" || error === null) return "unknown"
  const e = error as { readonly reason?: unknown; readonly _tag?: unknown }
  if (typeof e.reason === "string") return e.reason
  if (typeof e.reason === "object" && e.reason !== null && typeof (e.reason as { _tag?: unknown })._tag === "string") {
    return (e.reason as { _tag: string })._tag
  }
  return typeof e._tag === "string" ? e._tag : error instanceof Error ? error.name : "unknown"
}

type Base = { readonly agent: string; readonly speechId: string; readonly kind: "llm" | "realtime"; readonly provider: string; readonly model: string }

/**
 * A meter is also the call's `ModelCallInfo` (agent, speech, `served`, `failedOver`), so a model
 * step makes one object for both. Methods, not closures: one is made on every model call; call
 * them on the meter (`meter.text()`), as `ModelFallback` does. (Plain fields, not `#` ones: those
 * measured about 1.5% slower on a handoff's path. An output handed the meter as its `SpeechInfo`
 * reads `agent` and `speechId`, as every output in the project does.)
 */
class CallMeter implements Meter {
  readonly agent: string
  readonly speechId: string
  private readonly kind: Base["kind"]
  private readonly now: () => number
  private readonly startedAt: number
  private firstTextMs: number | undefined = undefined
  private firstAudioMs: number | undefined = undefined
  private inputTokens: number | undefined = undefined
  private outputTokens: number | undefined = undefined
  private audioSeconds = 0
  private provider: string
  private modelName: string
  private failures: Array<{ readonly provider: string; readonly model: string; readonly reason: string }> | undefined = undefined

  constructor(base: Base, now: () => number) {
    this.agent = base.agent
    this.speechId = base.speechId
    this.kind = base.kind
    this.now = now
    this.startedAt = now()
    this.provider = base.provider
    this.modelName = base.model
  }

  text(): void {
    this.firstTextMs ??= this.now() - this.startedAt
  }

  audio(bytes: number, sampleRate: number): void {
    this.firstAudioMs ??= this.now() - this.startedAt
    this.audioSeconds += bytes / 2 / sampleRate
  }

  usage(usage: { readonly inputTokens?: number | undefined; readonly outputTokens?: number | undefined } | undefined): void {
    if (usage?.inputTokens !== undefined) this.inputTokens = (this.inputTokens ?? 0) + usage.inputTokens
    if (usage?.outputTokens !== undefined) this.outputTokens = (this.outputTokens ?? 0) + usage.outputTokens
  }

  model(id: string | undefined): void {
    if (id) this.modelName = id
  }

  served(by: { readonly provider: string; readonly model: string }): void {
    this.provider = by.provider
    this.modelName = by.model
  }

  failedOver(by: { readonly provider: string; readonly model: string }, reason: string): void {
    ;(this.failures ??= []).push({ provider: by.provider, model: by.model, reason })
  }

  end(exit: Exit.Exit<unknown, unknown>): Fields {
    const outcome = Exit.isSuccess(exit) ? "ok" : Cause.hasInterruptsOnly(exit.cause) ? "interrupted" : "error"
    let errorReason: string | undefined
    if (outcome === "error" && Exit.isFailure(exit)) {
      const failure = Cause.findErrorOption(exit.cause)
      errorReason = Option.isSome(failure) ? reasonOf(failure.value) : "defect"
    }
    const fields: Fields = {
      type: "model_call",
      agent: this.agent,
      speechId: this.speechId,
      kind: this.kind,
      provider: this.provider,
      model: this.modelName,
      startedAt: this.startedAt,
      firstTextMs: this.firstTextMs,
      firstAudioMs: this.firstAudioMs,
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
      audioOutputSeconds: this.audioSeconds > 0 ? this.audioSeconds : undefined,
      outcome,
      errorReason
    }
    return this.failures ? { ...fields, failedOver: this.failures } : fields
  }
}

/**
 * Starts metering one model call of `base`'s agent and speech, timed by `now`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = (base: Base, now: () => number): Meter & { readonly agent: string; readonly speechId: string } => new CallMeter(base, now)
