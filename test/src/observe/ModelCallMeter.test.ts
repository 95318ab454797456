import { assert, describe, it } from "@effect/vitest"
import { Cause, Exit } from "effect"
import { AiError } from "effect/ai"
import type { ModelCallInfo } from "../../../services/ModelCall.ts"
import { ModelCallMeter } from "../../../src/observe/index.ts"

const base = { agent: "Greeter", speechId: "speech_1", kind: "llm" as const, provider: "openai", model: "gpt-4o-mini" }

describe("ModelCallMeter", () => {
  it("times the first text from the call's start and adds up usage", () => {
    let now = 1_000
    const meter = ModelCallMeter.start(base, () => now)
    now = 1_120
    meter.text()
    now = 1_500
    meter.text()
    meter.usage({ inputTokens: 10, outputTokens: 3 })
    meter.usage({ outputTokens: 4 })
    meter.model("gpt-4o-mini-2024")
    const event = meter.end(Exit.void)
    assert.deepInclude(event, {
      type: "model_call",
      agent: "Greeter",
      speechId: "speech_1",
      kind: "llm",
      provider: "openai",
      model: "gpt-4o-mini-2024",
      startedAt: 1_000,
      firstTextMs: 120,
      inputTokens: 10,
      outputTokens: 7,
      outcome: "ok"
    })
    assert.isUndefined(event.errorReason)
    assert.isFalse("failedOver" in event)
  })

  it("is the call's ModelCallInfo: a fallback names the model that served and those that failed, called on it", () => {
    const meter = ModelCallMeter.start(base, () => 0)
    // As ModelFallback calls them: methods of the info it reads from the context.
    const info: ModelCallInfo = meter
    assert.strictEqual(info.agent, "Greeter")
    assert.strictEqual(info.speechId, "speech_1")
    info.failedOver?.({ provider: "openai", model: "gpt-4o-mini" }, "RateLimitError")
    info.served?.({ provider: "groq", model: "llama-3.3" })
    const event = meter.end(Exit.void)
    assert.strictEqual(event.provider, "groq")
    assert.strictEqual(event.model, "llama-3.3")
    assert.deepStrictEqual(event.failedOver, [{ provider: "openai", model: "gpt-4o-mini", reason: "RateLimitError" }])
  })

  it("says how a call ended: interrupted, failed with a reason, or died", () => {
    const interrupted = ModelCallMeter.start(base, () => 0).end(Exit.interrupt(1))
    assert.strictEqual(interrupted.outcome, "interrupted")
    assert.isUndefined(interrupted.errorReason)
    const error = AiError.make({ module: "test", method: "streamText", reason: new AiError.RateLimitError({}) })
    const failed = ModelCallMeter.start(base, () => 0).end(Exit.fail(error))
    assert.strictEqual(failed.outcome, "error")
    assert.strictEqual(failed.errorReason, "RateLimitError")
    const died = ModelCallMeter.start(base, () => 0).end(Exit.failCause(Cause.die(new Error("boom"))))
    assert.strictEqual(died.outcome, "error")
    assert.strictEqual(died.errorReason, "defect")
  })
})
