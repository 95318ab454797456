/**
 * A reply's errors are typed (src/internal/Reply.ts, `ReplyError`): a model whose stream reports
 * an error part fails the reply with that error as it is when it is an `AiError`, and as a
 * `ModelStreamError` carrying its message otherwise; the error event says which, and the session
 * goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { AiError, LanguageModel, type Response } from "effect/ai"
import * as ModelParts from "../../services/ModelParts.ts"
import { Agent, AgentSession } from "../../src/index.ts"

/** A model whose every response is `parts`. */
const modelSaying = (parts: ReadonlyArray<Response.StreamPartEncoded>) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.gen(function*() {
      const streamText = () => Stream.fromIterable(parts)
      const made = yield* LanguageModel.make({ streamText, generateText: () => Effect.die("not used") })
      return ModelParts.withParts(made, streamText)
    })
  )

const failedTurn = (parts: ReadonlyArray<Response.StreamPartEncoded>) =>
  Effect.gen(function*() {
    const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A" }) })
    const failed = yield* session.run("hello?").pipe(Effect.flip)
    assert.strictEqual(failed._tag, "TurnFailed")
    const errors = failed._tag === "TurnFailed" ? failed.errors : []
    return errors.filter((e) => e.source === "model")
  }).pipe(Effect.provide(modelSaying(parts)))

describe("reply errors", () => {
  it.effect("an error part that is not an AiError fails the reply as a ModelStreamError with its message", () =>
    Effect.gen(function*() {
      const errors = yield* failedTurn([{ type: "error", error: new Error("the provider hung up mid-stream") }])
      assert.strictEqual(errors.length, 1)
      assert.strictEqual(errors[0]!.reason, "Unknown")
      // Read as a tagged error (its reason, then its message), not as a bare Error.
      assert.strictEqual(errors[0]!.message, "Unknown: the provider hung up mid-stream")
    }))

  it.effect("an error part with no message of its own says that the model's stream reported an error", () =>
    Effect.gen(function*() {
      const errors = yield* failedTurn([{ type: "error", error: { code: 42 } }])
      assert.strictEqual(errors.length, 1)
      assert.strictEqual(errors[0]!.message, "Unknown: the model's stream reported an error")
    }))

  it.effect("an error part that is an AiError fails the reply with it, read by its reason", () =>
    Effect.gen(function*() {
      const error = AiError.make({
        module: "Test",
        method: "streamText",
        reason: new AiError.RateLimitError({})
      })
      const errors = yield* failedTurn([{ type: "error", error }])
      assert.strictEqual(errors.length, 1)
      assert.strictEqual(errors[0]!.reason, "RateLimited")
    }))
})
