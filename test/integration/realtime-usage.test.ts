/**
 * Realtime usage is kept: through the real OpenAI Realtime and Gemini Live layers against their
 * protocol mocks (127.0.0.1, live clock), the tokens each `response.done` / `usageMetadata`
 * reports reach the session's usage (per model and per agent) and its `model_call` events, and
 * the connection's moves are events (OpenAI: opened for the greeter, reused by the weather agent;
 * Gemini, whose setup is fixed: a fresh one for each) that the timeline draws as markers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { GeminiLive } from "../../layers/google/GeminiLive.ts"
import { OpenAiRealtime } from "../../layers/openai/OpenAiRealtime.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { AgentSession } from "../../src/index.ts"
import * as OpenAIRealtimeMock from "../mocks/openai-realtime/index.ts"
import { Plan, type ScriptContext } from "../mocks/openai-realtime/index.ts"
import * as GeminiLiveMock from "../mocks/gemini-live/index.ts"
import { GeminiPlan, type GeminiScriptContext } from "../mocks/gemini-live/index.ts"
import { byClass, parse } from "../src/timeline/svgTree.ts"
import { INTRODUCE, pair, run } from "./fixtures.ts"

const script = (c: ScriptContext) => {
  if (c.instructions.includes(INTRODUCE)) return Plan.say("Sunny here, which city?")
  const text = (c.lastUserText ?? "").toLowerCase()
  if (text.includes("weather") && c.tools.some((t) => t.name === "transfer_to_weather")) {
    return Plan.sayThenCall("Transferring you.", "transfer_to_weather", {})
  }
  return Plan.say("Sorry?")
}

describe("realtime usage (OpenAI mock)", () => {
  it.live("the tokens of every response.done reach session.usage; the connection's moves are events", () => {
    const { greeter } = pair()
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ script })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        const result = yield* run(session, "what's the weather?")
        result.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
        const server = yield* mock.awaitConnection(0)
        const done = server.sent().filter((f) => f.type === "response.done").map((f) => (f.json as any).response.usage)
        const sum = (key: string) => done.reduce((n, u) => n + (u?.[key] ?? 0), 0)
        assert.isAbove(sum("output_tokens"), 0, "the mock reports usage")

        const usage = yield* session.usage
        assert.deepStrictEqual(usage.byModel.map((m) => m.provider), ["openai"])
        assert.strictEqual(usage.total.inputTokens, sum("input_tokens"))
        assert.strictEqual(usage.total.outputTokens, sum("output_tokens"))
        assert.deepStrictEqual(usage.byAgent.map((a) => a.agent), ["greeter", "weather"])
        const events = yield* session.eventLog
        const calls = events.filter((e) => e.type === "model_call")
        assert.isTrue(calls.every((e) => e.type === "model_call" && e.kind === "realtime" && e.outcome === "ok"))
        assert.deepStrictEqual(
          events.flatMap((e) => (e.type === "realtime_connection" && e.action !== "updated" ? [`${e.agent}:${e.action}`] : [])),
          ["greeter:opened", "weather:reused"]
        )
        const svg = parse(result.timeline())
        // The run's picture shows the connection reused in the weather agent's lane.
        assert.include(byClass(svg, "marker realtime").map((m) => m.attributes["data-lane"]), "weather")
      }).pipe(Effect.provide(Layer.mergeAll(
        OpenAiRealtime.layer({ url: mock.url, apiKey: Redacted.make("sk-test-usage"), turnDetection: null }),
        TextCapture.layer
      )))
    })
  })

  it.live("Gemini: usageMetadata reaches session.usage with the model's audio seconds; each agent opens its own connection", () => {
    const { greeter } = pair()
    const script = (c: GeminiScriptContext) => {
      const text = (c.lastUserText ?? "").toLowerCase()
      if (text.includes(INTRODUCE)) return GeminiPlan.say("Sunny here, which city?")
      if (text.includes("weather") && c.tools.some((t) => t.name === "transfer_to_weather")) {
        return GeminiPlan.sayThenCall("Transferring you.", "transfer_to_weather", {})
      }
      return GeminiPlan.say("Sorry?")
    }
    return Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script })
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter })
        const result = yield* run(session, "what's the weather?")
        result.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
        const usage = yield* session.usage
        assert.deepStrictEqual(usage.byModel.map((m) => m.provider), ["google"])
        assert.isAbove(usage.total.inputTokens, 0)
        assert.isAbove(usage.total.outputTokens, 0)
        assert.isAbove(usage.total.audioOutputSeconds, 0)
        assert.deepStrictEqual(usage.byAgent.map((a) => a.agent), ["greeter", "weather"])
        const events = yield* session.eventLog
        assert.deepStrictEqual(
          events.flatMap((e) => (e.type === "realtime_connection" ? [`${e.agent}:${e.action}`] : [])),
          ["greeter:opened", "weather:opened"]
        )
      }).pipe(Effect.provide(Layer.mergeAll(GeminiLive.layer({ url: mock.url, apiKey: Redacted.make("AIza-test-usage") }), TextCapture.layer)))
    })
  })
})
