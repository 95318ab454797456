/**
 * A `LanguageModel` that answers with the first of several models that can. A provider goes
 * down, rate-limits a whole account, or hangs before its first token: a phone caller should hear
 * the next model's answer, not silence.
 *
 * - A model that fails before its answer starts is left for the next, asked the same request:
 *   any `AiError` (a 5xx after the provider's own retries, a bad key, a rate limit, a lost
 *   connection) or no first part within `attemptTimeout`.
 * - Once an answer has started, its failure is the reply's: words may have been heard.
 * - A content-policy refusal is the answer, not a fault; it is never asked of another model.
 * - A model that failed is passed over for `recoverAfter`, then asked first again. When every
 *   model is passed over, all are asked in order: a request never fails for that alone.
 * - Each failover is one warning in the log. The call's `model_call` event (its metrics, its
 *   usage) names the model that answered, and lists those that failed before it (`failedOver`,
 *   each counted in `baton_model_errors_total` with its reason).
 *
 * The models must carry their provider's part stream (`ModelParts`: baton's `OpenAiChat` and
 * `ScriptedModel`, or a model made with `ModelParts.withParts`), so a fallback keeps baton's
 * direct path; one that does not is refused when the layer is built.
 *
 * ```ts
 * const model = ModelFallback.layer([
 *   OpenAiChat.layer({ model: "gpt-4o-mini", apiKey, maxRetries: 0 }),
 *   OpenAiChat.layer({ model: "llama-3.3-70b", apiKey: other, baseUrl: "https://api.groq.com/openai/v1" })
 * ]).pipe(Layer.provide(FetchHttpClient.layer))
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Context, Duration, Effect, Layer, Option, Stream } from "effect"
import { AiError, LanguageModel } from "effect/ai"
import * as Fallback from "./Fallback.ts"
import { ModelCall } from "./ModelCall.ts"
import * as ModelParts from "./ModelParts.ts"

/**
 * Options of the fallback model: when to move on (as for every fallback) and how long a model may
 * take to its first part.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Fallback.Options {
  /** How long a model may take to its first part before the next is asked (default 10 s). */
  readonly attemptTimeout?: Duration.Input | undefined
}

interface Candidate extends Fallback.Engine {
  readonly parts: ModelParts.StreamParts
  readonly info: ModelParts.ModelInfo
}

type Models<E, R> = readonly [Layer.Layer<LanguageModel.LanguageModel, E, R>, ...Array<Layer.Layer<LanguageModel.LanguageModel, E, R>>]

/**
 * One `LanguageModel` over `models`, asked in order (see the module's comment).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E, R>(models: Models<E, R>, options: Options = {}): Layer.Layer<LanguageModel.LanguageModel, E, R> =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.gen(function*() {
      const attemptTimeout = Duration.fromInputUnsafe(options.attemptTimeout ?? "10 seconds")
      const recoverAfterMs = Fallback.recoverAfterMs(options)
      const candidates: Array<Candidate> = []
      for (const [i, layer] of models.entries()) {
        const built = Context.get(yield* Layer.build(layer), LanguageModel.LanguageModel)
        const parts = ModelParts.partsOf(built)
        if (parts === undefined) {
          return yield* Effect.die(
            new Error(`ModelFallback: model ${i + 1} carries no part stream; use baton's model layers (OpenAiChat, ScriptedModel) or ModelParts.withParts`)
          )
        }
        const info = ModelParts.infoOf(built) ?? { provider: "unknown", model: `model ${i + 1}` }
        candidates.push({ parts, info, name: `ModelFallback: ${info.provider}/${info.model}`, downUntil: 0 })
      }
      const streamText: ModelParts.StreamParts = (request) =>
        Stream.unwrap(Effect.map(Effect.service(ModelCall), (call) =>
          Fallback.firstToAnswer({
            engines: candidates,
            attempt: (candidate) => candidate.parts(request),
            fault,
            noAnswer,
            attemptTimeout,
            recoverAfterMs,
            answered: (candidate) => call?.served?.(candidate.info),
            failedOver: (candidate, reason) => call?.failedOver?.(candidate.info, reason)
          })))
      const made = yield* LanguageModel.make({
        streamText,
        generateText: (request) => streamText(request).pipe(Stream.runCollect, Effect.map(ModelParts.collectParts))
      })
      return ModelParts.withParts(made, streamText, candidates[0]!.info)
    })
  )

/** A model's fault (any `AiError` but a refusal, which is the answer): its reason. */
const fault = (cause: Cause.Cause<AiError.AiError>): string | undefined => {
  const error = Cause.findErrorOption(cause)
  if (Option.isNone(error) || !AiError.isAiError(error.value)) return undefined
  return error.value.reason._tag === "ContentPolicyError" ? undefined : error.value.reason._tag
}

/** No first part in time: a transport timeout, as the providers report theirs. */
const noAnswer = (candidate: Candidate, timeout: Duration.Duration) =>
  AiError.make({
    module: "ModelFallback",
    method: "streamText",
    reason: new AiError.NetworkError({
      reason: "TransportError",
      method: "POST",
      url: `${candidate.info.provider}/${candidate.info.model}`,
      description: `timeout: no answer within ${Duration.format(timeout)}`
    })
  })
