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
 */
import { Cause, Channel, Clock, Context, Duration, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import { AiError, LanguageModel } from "effect/ai"
import { ModelCall } from "./ModelCall.ts"
import * as ModelParts from "./ModelParts.ts"

export interface Options {
  /** How long a model may take to its first part before the next is asked (default 10 s). */
  readonly attemptTimeout?: Duration.Input | undefined
  /** How long a model that failed is passed over (default 30 s). */
  readonly recoverAfter?: Duration.Input | undefined
}

interface Candidate {
  readonly parts: ModelParts.StreamParts
  readonly info: ModelParts.ModelInfo
  /** Passed over until then (ms, the Effect clock). */
  downUntil: number
}

type Models<E, R> = readonly [Layer.Layer<LanguageModel.LanguageModel, E, R>, ...Array<Layer.Layer<LanguageModel.LanguageModel, E, R>>]

/** One `LanguageModel` over `models`, asked in order (see the module's comment). */
export const layer = <E, R>(models: Models<E, R>, options: Options = {}): Layer.Layer<LanguageModel.LanguageModel, E, R> =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.gen(function*() {
      const attemptTimeout = Duration.fromInputUnsafe(options.attemptTimeout ?? "10 seconds")
      const recoverAfterMs = Duration.toMillis(Duration.fromInputUnsafe(options.recoverAfter ?? "30 seconds"))
      const candidates: Array<Candidate> = []
      for (const [i, layer] of models.entries()) {
        const built = Context.get(yield* Layer.build(layer), LanguageModel.LanguageModel)
        const parts = ModelParts.partsOf(built)
        if (parts === undefined) {
          return yield* Effect.die(
            new Error(`ModelFallback: model ${i + 1} carries no part stream; use baton's model layers (OpenAiChat, ScriptedModel) or ModelParts.withParts`)
          )
        }
        candidates.push({ parts, info: ModelParts.infoOf(built) ?? { provider: "unknown", model: `model ${i + 1}` }, downUntil: 0 })
      }
      const streamText: ModelParts.StreamParts = (request) =>
        Stream.fromChannel(Channel.fromTransform((_, scope) => firstAnswer(candidates, request, scope, attemptTimeout, recoverAfterMs)))
      const made = yield* LanguageModel.make({
        streamText,
        generateText: (request) => streamText(request).pipe(Stream.runCollect, Effect.map(ModelParts.collectParts))
      })
      return ModelParts.withParts(made, streamText, candidates[0]!.info)
    })
  )

const nameOf = (info: ModelParts.ModelInfo) => `${info.provider}/${info.model}`

/** The pull of the first model whose answer starts; the others' attempts are closed. */
const firstAnswer = (
  candidates: ReadonlyArray<Candidate>,
  request: Parameters<ModelParts.StreamParts>[0],
  scope: Scope.Scope,
  attemptTimeout: Duration.Duration,
  recoverAfterMs: number
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const order = [...candidates.filter((c) => c.downUntil <= now), ...candidates.filter((c) => c.downUntil > now)]
    const call = yield* ModelCall
    for (let k = 0; ; k++) {
      const candidate = order[k]!
      const attempt = yield* Scope.fork(scope)
      const pull = yield* Stream.toPull(candidate.parts(request)).pipe(Scope.provide(attempt))
      const first = yield* pull.pipe(
        Effect.timeoutOrElse({ duration: attemptTimeout, orElse: () => Effect.fail(noAnswer(candidate, attemptTimeout)) }),
        Effect.exit
      )
      if (Exit.isSuccess(first)) {
        candidate.downUntil = 0
        call?.served?.(candidate.info)
        let pending: typeof first.value | undefined = first.value
        return Effect.suspend(() => {
          if (pending === undefined) return pull
          const chunk = pending
          pending = undefined
          return Effect.succeed(chunk)
        })
      }
      const error = Cause.findErrorOption(first.cause)
      const fault = Option.isSome(error) && !Cause.isDone(error.value) && AiError.isAiError(error.value) ? error.value : undefined
      // It ended without a part, or not with a model's fault (a defect): as it is.
      // A refusal is the answer: the model is not down for it.
      if (fault === undefined || fault.reason._tag === "ContentPolicyError") return Effect.failCause(first.cause)
      candidate.downUntil = now + recoverAfterMs
      const next = order[k + 1]
      if (next === undefined) return Effect.failCause(first.cause)
      call?.failedOver?.(candidate.info, fault.reason._tag)
      yield* Scope.close(attempt, Exit.void)
      yield* Effect.logWarning(`ModelFallback: ${nameOf(candidate.info)} failed before answering (${fault.message}); asking ${nameOf(next.info)}`)
    }
  })

/** No first part in time: a transport timeout, as the providers report theirs. */
const noAnswer = (candidate: Candidate, timeout: Duration.Duration) =>
  AiError.make({
    module: "ModelFallback",
    method: "streamText",
    reason: new AiError.NetworkError({
      reason: "TransportError",
      method: "POST",
      url: nameOf(candidate.info),
      description: `timeout: no answer within ${Duration.format(timeout)}`
    })
  })
