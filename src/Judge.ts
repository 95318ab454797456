/**
 * A judge for tests: asks a language model whether an agent's message meets an intent ("greets
 * the caller and asks for the order number"), for answers a text match cannot check. The model
 * answers with a structured verdict (`{ verdict: "pass" | "fail", reason }`, by `effect/ai`'s
 * `generateObject`); a `fail` is a `JudgeFailed` carrying the verdict, the reason and the message
 * judged, and an answer that is no verdict (or a model that failed) is a `JudgeError`. Reach it
 * from a run's message assertion: `result.expect.nextEvent().isMessage(...).judge(model, { intent })`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Layer, Schema } from "effect"
import { AiError, LanguageModel } from "effect/ai"

/**
 * The judge's answer: whether the message meets the intent, and why in one or two sentences.
 *
 * @since 0.1.0
 * @category models
 */
export const Verdict = Schema.Struct({
  verdict: Schema.Literals(["pass", "fail"]),
  reason: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export type Verdict = typeof Verdict.Type

/**
 * What to judge a message against: the intent, in words (what the message should do or say).
 *
 * @since 0.1.0
 * @category models
 */
export interface JudgeOptions {
  readonly intent: string
}

/**
 * The judge's model: a `LanguageModel` service value, or a Layer that builds one (built for the
 * one question and closed after it).
 *
 * @since 0.1.0
 * @category models
 */
export type JudgeModel<E = never, R = never> = LanguageModel.LanguageModel | Layer.Layer<LanguageModel.LanguageModel, E, R>

/**
 * The judge's verdict was `fail`: the message does not meet the intent. `reason` is the judge's;
 * `message` also lists the run's events, with a marker at the message judged.
 *
 * @since 0.1.0
 * @category errors
 */
export class JudgeFailed extends Schema.TaggedError<JudgeFailed>()("JudgeFailed", {
  intent: Schema.String,
  verdict: Schema.Literal("fail"),
  /** Why the judge says the message does not meet the intent. */
  reason: Schema.String,
  /** The text of the message judged. */
  judged: Schema.String,
  message: Schema.String
}) {}

/**
 * The judge gave no verdict: it answered something that is not `{ verdict: "pass" | "fail",
 * reason }` (`malformed_verdict`, with its `answer`), or the model failed (`model_failed`).
 *
 * @since 0.1.0
 * @category errors
 */
export class JudgeError extends Schema.TaggedError<JudgeError>()("JudgeError", {
  reason: Schema.Literals(["malformed_verdict", "model_failed"]),
  intent: Schema.String,
  judged: Schema.String,
  /** What the model answered, when it answered text that is not a verdict. */
  answer: Schema.optional(Schema.String),
  message: Schema.String,
  cause: Schema.optional(Schema.Unknown)
}) {}

/**
 * The message to judge and what surrounds it: its text, and the conversation of the run before
 * it (lines such as `user: ...`), which the judge reads as context.
 *
 * @since 0.1.0
 * @category models
 */
export interface Judged {
  readonly text: string
  readonly before: ReadonlyArray<string>
  /** The run's events, with a marker at the message, for the failure's message. */
  readonly listing: string
}

const instructions = "You judge a message an AI agent said in a conversation. Decide whether the message meets the " +
  "intent given. Judge the message itself; the conversation before it is context only. Answer with a JSON object " +
  `and nothing else: {"verdict": "pass" or "fail", "reason": "one or two sentences saying why"}.`

const question = (judged: Judged, intent: string) =>
  [
    `Intent: ${intent}`,
    ...(judged.before.length > 0 ? ["", "Conversation before the message:", ...judged.before] : []),
    "",
    "Message to judge:",
    judged.text
  ].join("\n")

const modelOf = <E, R>(model: JudgeModel<E, R>) => (Layer.isLayer(model) ? Effect.provide(model) : Effect.provideService(LanguageModel.LanguageModel, model))

/**
 * Asks `model` whether `judged` meets `options.intent`: succeeds on `pass`, fails with
 * `JudgeFailed` on `fail`, and with `JudgeError` when the answer is no verdict or the model fails.
 *
 * @since 0.1.0
 * @category judging
 */
export const judge = <E = never, R = never>(
  model: JudgeModel<E, R>,
  judged: Judged,
  options: JudgeOptions
): Effect.Effect<Verdict, JudgeFailed | JudgeError | E, R> => {
  const { intent } = options
  const asked = LanguageModel.generateObject({
    prompt: [{ role: "system", content: instructions }, { role: "user", content: question(judged, intent) }],
    schema: Verdict,
    objectName: "verdict"
  })
  return asked.pipe(
    modelOf(model) as <A>(effect: Effect.Effect<A, AiError.AiError, LanguageModel.LanguageModel>) => Effect.Effect<A, AiError.AiError | E, R>,
    Effect.catchIf(AiError.isAiError, (error) => Effect.fail(judgeError(error, judged, intent))),
    Effect.flatMap((response) => {
      const verdict = response.value
      if (verdict.verdict === "pass") return Effect.succeed(verdict)
      return Effect.fail(
        new JudgeFailed({
          intent,
          verdict: "fail",
          reason: verdict.reason,
          judged: judged.text,
          message: `The judge says the message does not meet the intent ${JSON.stringify(intent)}: ${verdict.reason}\n` +
            `Message judged: ${JSON.stringify(judged.text)}\n${judged.listing}`
        })
      )
    })
  )
}


const judgeError = (error: AiError.AiError, judged: Judged, intent: string): JudgeError => {
  const reason = error.reason
  if (reason._tag === "StructuredOutputError") {
    return new JudgeError({
      reason: "malformed_verdict",
      intent,
      judged: judged.text,
      answer: reason.responseText,
      message: `The judge's answer is not a verdict (expected {"verdict": "pass" | "fail", "reason": string}); it answered ` +
        `${JSON.stringify(reason.responseText.slice(0, 300))}: ${reason.description}`,
      cause: error
    })
  }
  return new JudgeError({
    reason: "model_failed",
    intent,
    judged: judged.text,
    message: `The judge's model failed: ${error.message}`,
    cause: error
  })
}
