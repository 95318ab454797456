import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { LanguageModel } from "effect/ai"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Judge } from "../../src/index.ts"

const support = Agent.make({ name: "support", instructions: "Help with orders." })

/** The agent under test answers by these rules. */
const agentModel = ScriptedModel.layer([
  { when: { user: "change my order" }, reply: { text: "Sure, what is your order number?" } },
  { when: { user: "weather" }, reply: { text: "I like turtles." } }
])

const verdict = (v: unknown) => ({ text: JSON.stringify(v) })

/** The judge answers by the intent it is asked about. */
const judgeModel = ScriptedModel.layer([
  { when: { user: "asks for the order number" }, reply: verdict({ verdict: "pass", reason: "It asks for the order number." }) },
  { when: { user: "answers the weather question" }, reply: verdict({ verdict: "fail", reason: "It talks about turtles." }) },
  { when: { user: "is polite" }, reply: { text: "Yes, it is polite." } },
  { when: { user: "is short" }, reply: verdict({ verdict: "maybe", reason: "hard to say" }) }
])

const run = (input: string) =>
  Effect.gen(function*() {
    const session = yield* AgentSession.start({ agent: support })
    return yield* session.run(input)
  }).pipe(Effect.provide(agentModel))

describe("Judge", () => {
  it.effect("judge: a pass verdict succeeds with the message, and the judge saw the intent, the message and the turn", () =>
    Effect.gen(function*() {
      const result = yield* run("I want to change my order")
      result.expect.nextEvent().isMessage({ role: "user" })
      const message = yield* result.expect.nextEvent().isMessage({ role: "assistant" })
        .judge(judgeModel, { intent: "asks for the order number" })
      assert.strictEqual(message.content, "Sure, what is your order number?")
    }))

  it.effect("judge: the judge's prompt carries the intent, the conversation before and the message", () =>
    Effect.gen(function*() {
      const result = yield* run("I want to change my order")
      const model = yield* LanguageModel.LanguageModel
      const recorder = yield* ScriptedModel.ScriptedModel
      yield* result.expect.containsMessage({ role: "assistant" }).judge(model, { intent: "asks for the order number" })
      const asked = recorder.requests[0]!
      assert.strictEqual(asked.last.kind, "user")
      const text = asked.last.kind === "user" ? asked.last.text : ""
      assert.include(text, "Intent: asks for the order number")
      assert.include(text, "user (support): I want to change my order")
      assert.include(text, "Message to judge:\nSure, what is your order number?")
      assert.include(asked.instructions ?? "", `"verdict"`)
    }).pipe(Effect.provide(judgeModel)))

  it.effect("judge: a fail verdict fails with JudgeFailed carrying the verdict, the reason, the message and the run", () =>
    Effect.gen(function*() {
      const result = yield* run("what is the weather?")
      const exit = yield* result.expect.containsMessage({ role: "assistant" })
        .judge(judgeModel, { intent: "answers the weather question" }).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      const failed = error && error._tag === "Fail" ? error.error : undefined
      assert.instanceOf(failed, Judge.JudgeFailed)
      const judged = failed as Judge.JudgeFailed
      assert.strictEqual(judged.verdict, "fail")
      assert.strictEqual(judged.reason, "It talks about turtles.")
      assert.strictEqual(judged.judged, "I like turtles.")
      assert.strictEqual(judged.intent, "answers the weather question")
      assert.include(judged.message, "does not meet the intent \"answers the weather question\": It talks about turtles.")
      assert.include(judged.message, ">  1  message          assistant support: \"I like turtles.\"")
    }))

  it.effect("judge: an answer that is not JSON is a JudgeError (malformed_verdict) that quotes it", () =>
    Effect.gen(function*() {
      const result = yield* run("I want to change my order")
      const error = yield* result.expect.containsMessage({ role: "assistant" })
        .judge(judgeModel, { intent: "is polite" }).pipe(Effect.flip)
      assert.instanceOf(error, Judge.JudgeError)
      const e = error as Judge.JudgeError
      assert.strictEqual(e.reason, "malformed_verdict")
      assert.strictEqual(e.answer, "Yes, it is polite.")
      assert.include(e.message, "The judge's answer is not a verdict")
      assert.include(e.message, "Yes, it is polite.")
    }))

  it.effect("judge: a verdict outside pass | fail is a JudgeError (malformed_verdict), not a pass", () =>
    Effect.gen(function*() {
      const result = yield* run("I want to change my order")
      const error = yield* result.expect.containsMessage({ role: "assistant" })
        .judge(judgeModel, { intent: "is short" }).pipe(Effect.flip)
      assert.instanceOf(error, Judge.JudgeError)
      assert.strictEqual((error as Judge.JudgeError).reason, "malformed_verdict")
      assert.include((error as Judge.JudgeError).message, "maybe")
    }))

  it.effect("judge: a model that fails is a JudgeError (model_failed)", () =>
    Effect.gen(function*() {
      const result = yield* run("I want to change my order")
      const error = yield* result.expect.containsMessage({ role: "assistant" })
        .judge(ScriptedModel.layer([]), { intent: "anything" }).pipe(Effect.flip)
      assert.instanceOf(error, Judge.JudgeError)
      assert.strictEqual((error as Judge.JudgeError).reason, "model_failed")
      assert.include((error as Judge.JudgeError).message, "The judge's model failed")
    }))
})
