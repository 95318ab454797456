/**
 * ModelFallback: the next model answers when one fails before its answer starts; an answer that
 * started is not asked again elsewhere; a failed model is passed over, then tried again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Stream } from "effect"
import { AiError, LanguageModel } from "effect/ai"
import { TestClock } from "effect/testing"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import * as ModelFallback from "../../services/ModelFallback.ts"
import * as ModelParts from "../../services/ModelParts.ts"
import { Agent, AgentSession, type ModelCallEvent } from "../../src/index.ts"
import * as Mock from "../layers/openai/MockChatServer.ts"
import { liveTimeout, modelLayer, textReply } from "../layers/openai/helpers.ts"

const desk = Agent.make({ name: "desk", instructions: "You are the front desk." })

/** A scripted model named `name` that answers every request with `reply` (counted in `asked`). */
const scripted = (name: string, reply: ScriptedModel.ScriptedResponse, asked: { count: number }) =>
  ScriptedModel.layer([{ when: () => true, reply: () => (asked.count++, reply) }], { model: name })

/** A session on `desk` whose first turn has been answered: what the desk said, and the session. */
const firstTurn = Effect.gen(function*() {
  const text = yield* TextCapture.TextCapture
  const session = yield* AgentSession.start({ agent: desk })
  yield* drive(session.run("hello"))
  return { said: text.textOf("desk"), session }
})

const modelCalls = (session: AgentSession.AgentSession) =>
  Effect.map(session.eventLog, (events) => events.filter((e): e is ModelCallEvent => e.type === "model_call"))

describe("ModelFallback", () => {
  it.effect("a model that fails before answering is left for the next; it is passed over for recoverAfter, then asked first again", () => {
    const primary = { count: 0 }
    const backup = { count: 0 }
    return Effect.gen(function*() {
      const { said, session } = yield* firstTurn
      assert.strictEqual(said, "Backup here.")
      assert.deepStrictEqual([primary.count, backup.count], [1, 1])
      const [first] = yield* modelCalls(session)
      assert.strictEqual(first?.model, "backup")
      assert.strictEqual(first?.outcome, "ok")
      assert.deepStrictEqual(first?.failedOver, [{ provider: "scripted", model: "primary", reason: "InternalProviderError" }])
      // Within recoverAfter the failed model is not asked.
      yield* drive(session.run("again"))
      assert.deepStrictEqual([primary.count, backup.count], [1, 2])
      // After it, it is asked first again.
      yield* TestClock.adjust("31 seconds")
      yield* drive(session.run("and again"))
      assert.deepStrictEqual([primary.count, backup.count], [2, 3])
    }).pipe(Effect.provide([
      ModelFallback.layer([scripted("primary", { error: "overloaded" }, primary), scripted("backup", { text: "Backup here." }, backup)]),
      TextCapture.layer
    ]))
  })

  it.effect("no first part within attemptTimeout: the next model answers", () => {
    const slow = { count: 0 }
    const backup = { count: 0 }
    return Effect.gen(function*() {
      const { said } = yield* firstTurn
      assert.strictEqual(said, "Backup here.")
      assert.deepStrictEqual([slow.count, backup.count], [1, 1])
    }).pipe(Effect.provide([
      ModelFallback.layer([scripted("slow", { text: "Too late.", delay: "1 minute" }, slow), scripted("backup", { text: "Backup here." }, backup)], {
        attemptTimeout: "2 seconds"
      }),
      TextCapture.layer
    ]))
  })

  it.effect("an answer that started is not asked again elsewhere: its failure is the reply's", () => {
    const primary = { count: 0 }
    const backup = { count: 0 }
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: desk })
      yield* drive(session.run("hello"))
      assert.deepStrictEqual([primary.count, backup.count], [1, 0])
      const [call] = yield* modelCalls(session)
      assert.strictEqual(call?.model, "primary")
      assert.strictEqual(call?.outcome, "error")
      assert.isUndefined(call?.failedOver)
      const errors = (yield* session.eventLog).filter((e) => e.type === "error")
      assert.isTrue(errors.some((e) => e.type === "error" && e.source === "model" && e.message.includes("cut mid-answer")), JSON.stringify(errors))
    }).pipe(Effect.provide(
      ModelFallback.layer([scripted("primary", { text: "Hel", error: "cut mid-answer" }, primary), scripted("backup", { text: "Backup here." }, backup)])
    ))
  })

  it.effect("a content-policy refusal is the answer: it is not asked of another model", () => {
    const backup = { count: 0 }
    const refusing = Layer.effect(
      LanguageModel.LanguageModel,
      Effect.gen(function*() {
        const parts: ModelParts.StreamParts = () =>
          Stream.fail(AiError.make({ module: "Test", method: "streamText", reason: new AiError.ContentPolicyError({ description: "refused" }) }))
        const model = yield* LanguageModel.make({ streamText: parts, generateText: () => Effect.succeed([]) })
        return ModelParts.withParts(model, parts, { provider: "test", model: "refusing" })
      })
    )
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: desk })
      const failed = yield* drive(session.run("hello").pipe(Effect.flip))
      assert.include(failed.message, "ContentPolicy: refused")
      assert.strictEqual(backup.count, 0)
      const [call] = yield* modelCalls(session)
      assert.strictEqual(call?.errorReason, "ContentPolicyError")
    }).pipe(Effect.provide(ModelFallback.layer([refusing, scripted("backup", { text: "Backup here." }, backup)])))
  })

  it.effect("a model without a part stream is refused when the layer is built", () =>
    Effect.gen(function*() {
      const plain = Layer.effect(LanguageModel.LanguageModel, LanguageModel.make({ streamText: () => Stream.empty, generateText: () => Effect.succeed([]) }))
      const exit = yield* Layer.build(ModelFallback.layer([plain])).pipe(Effect.scoped, Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "carries no part stream")
    }))

  it.effect("over HTTP: a provider answering 503 is left for the next one, whose answer the agent speaks", () =>
    Effect.gen(function*() {
      const down = yield* Mock.make
      const up = yield* Mock.make
      down.reply(Mock.errorReply(503, { message: "The engine is overloaded", type: "server_error", code: null }))
      up.reply(textReply("Served ", "by the backup."))
      const models = ModelFallback.layer([modelLayer(down, { maxRetries: 0 }), modelLayer(up)])
      yield* Effect.gen(function*() {
        const text = yield* TextCapture.TextCapture
        const session = yield* AgentSession.start({ agent: desk })
        yield* liveTimeout(session.run("hello"))
        assert.strictEqual(text.textOf("desk"), "Served by the backup.")
        assert.deepStrictEqual([down.requests.length, up.requests.length], [1, 1])
        const [call] = yield* modelCalls(session)
        assert.deepStrictEqual([call?.provider, call?.outcome], ["openai", "ok"])
      }).pipe(Effect.provide([models, TextCapture.layer]))
    }))
})
