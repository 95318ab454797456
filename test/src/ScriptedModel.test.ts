import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { LanguageModel, Prompt, type Response } from "effect/ai"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as ModelParts from "../../services/ModelParts.ts"

describe("ScriptedModel", () => {
  it.effect("answers by the last input, records requests, and waits under TestClock", () =>
    Effect.gen(function*() {
      const recorder = yield* ScriptedModel.ScriptedModel
      const fiber = yield* LanguageModel.streamText({ prompt: [{ role: "user", content: "hello there" }] }).pipe(
        Stream.runCollect,
        Effect.forkChild
      )
      yield* TestClock.adjust("999 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      const parts = yield* Fiber.join(fiber)
      const text = parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")
      assert.strictEqual(text, "Hi!")
      assert.strictEqual(recorder.requests.length, 1)
      assert.deepStrictEqual(recorder.requests[0]!.last, { kind: "user", text: "hello there" })
      const failed = yield* LanguageModel.streamText({ prompt: [{ role: "user", content: "unscripted" }] }).pipe(
        Stream.runCollect,
        Effect.flip
      )
      assert.include(String(failed), "no scripted response")
      const once = yield* LanguageModel.streamText({ prompt: [{ role: "user", content: "once" }] }).pipe(Stream.runCollect)
      assert.isTrue(once.some((p) => p.type === "text-delta"))
      const twice = yield* LanguageModel.streamText({ prompt: [{ role: "user", content: "once" }] }).pipe(Stream.runCollect, Effect.flip)
      assert.include(String(twice), "no scripted response")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "hello" }, reply: { text: "Hi!", delay: "1 second" } },
      { when: { user: "once" }, reply: { text: "only once" }, times: 1 }
    ]))))

  it.effect("generateText folds the streamed answer: its text in one part, the finish after it", () =>
    Effect.gen(function*() {
      const response = yield* LanguageModel.generateText({ prompt: [{ role: "user", content: "hello" }] })
      assert.strictEqual(response.text, "Hello there.")
      assert.strictEqual(response.finishReason, "stop")
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { user: "hello" }, reply: { text: ["Hello ", "there."] } }]))))

  it.effect("with record: false it answers the same and keeps no request (load benchmarks)", () =>
    Effect.gen(function*() {
      const recorder = yield* ScriptedModel.ScriptedModel
      for (let i = 0; i < 3; i++) {
        const parts = yield* LanguageModel.streamText({ prompt: [{ role: "user", content: "hello" }] }).pipe(Stream.runCollect)
        assert.strictEqual(parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join(""), "Hi!")
      }
      const limited = yield* LanguageModel.streamText({ prompt: [{ role: "user", content: "once" }] }).pipe(Stream.runCollect)
      assert.isTrue(limited.some((p) => p.type === "text-delta"))
      const again = yield* LanguageModel.streamText({ prompt: [{ role: "user", content: "once" }] }).pipe(Stream.runCollect, Effect.flip)
      assert.include(String(again), "no scripted response")
      assert.strictEqual(recorder.requests.length, 0)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "hello" }, reply: { text: "Hi!" } },
      { when: { user: "once" }, reply: { text: "only once" }, times: 1 }
    ], { record: false }))))

  it.effect("a response answered again streams the same parts, each tool call with an id of its own", () =>
    Effect.gen(function*() {
      // The provider's own parts, as baton reads them (`LanguageModel.streamText` would want a
      // toolkit to decode the call).
      const parts = ModelParts.partsOf(yield* LanguageModel.LanguageModel)!
      const ask = Effect.suspend(() => {
        const got: Array<Response.StreamPartEncoded> = []
        return ModelParts.run(parts, { prompt: Prompt.make("call it"), tools: [], toolChoice: "auto" }, (part) =>
          Effect.sync(() => {
            got.push(part)
          })).pipe(Effect.as(got))
      })
      const first = yield* ask
      const second = yield* ask
      const summary = (parts: ReadonlyArray<Response.StreamPartEncoded>) =>
        parts.map((p) => (p.type === "tool-call" ? `call ${p.name}` : p.type === "finish" ? `finish ${p.reason}` : p.type))
      assert.deepStrictEqual(summary(first), summary(second))
      assert.deepStrictEqual(summary(first).filter((p) => p.startsWith("call") || p.startsWith("finish")), ["call lookup", "finish tool-calls"])
      const ids = [...first, ...second].flatMap((p) => (p.type === "tool-call" ? [p.id] : []))
      assert.strictEqual(new Set(ids).size, 2)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "call it" }, reply: { text: "Looking.", toolCalls: [{ name: "lookup" }] } }
    ]))))
})
