/**
 * baton's metrics, derived from the session's events by the metrics observer, rendered as
 * Prometheus text by effect's PrometheusMetrics (what the service's /metrics serves): handoffs
 * by from/to, passage time, turns, tool durations, model calls, tokens, errors by reason,
 * realtime connections opened vs reused, time to first audio, audio seconds; and the session's
 * usage summary on `session.usage` and in its `close` event.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { front } from "../../../examples/parallel-handoff/agents.ts"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import * as ScriptedRealtime from "../../../layers/testing/ScriptedRealtime.ts"
import * as ModelFallback from "../../../services/ModelFallback.ts"
import * as Metrics from "../../../src/observe/Metrics.ts"
import * as SessionObserver from "../../../src/SessionObserver.ts"
import { Agent, AgentSession, type SessionEvent, Tool } from "../../../src/index.ts"
import * as Prom from "./prometheus.ts"

const scrape = Effect.map(PrometheusMetrics.format(), Prom.parse)
const observed = SessionObserver.layer(Metrics.observer)
/** A registry of the test's own (metrics are global otherwise). */
const withRegistry = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => Effect.provideService(effect, Metric.MetricRegistry, new Map()))

const seed002Rules: ReadonlyArray<ScriptedModel.Rule> = [
  {
    when: { user: "bill", agent: "front" },
    reply: {
      text: "Let me note that and get billing.",
      usage: { inputTokens: 120, outputTokens: 30 },
      toolCalls: [{ name: "save_note", arguments: { text: "March invoice" } }, { name: "transfer_to_billing" }]
    }
  },
  { when: { instructions: "introduce yourself as billing" }, reply: { text: "Billing here.", usage: { inputTokens: 200, outputTokens: 8 }, delay: "150 millis" } }
]

describe("Metrics", () => {
  it.effect("seed 002: the handoff, its passage, the tools, the turns, the tokens and the usage summary", () =>
    Effect.gen(function*() {
      let closeEvent: SessionEvent | undefined
      const usage = yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: front, userdata: { saved: [] as Array<string> } })
        yield* drive(session.run("I have a question about my bill"))
        const usage = yield* session.usage
        yield* session.close
        closeEvent = (yield* session.eventLog).at(-1)
        return usage
      }).pipe(Effect.scoped)
      const m = yield* scrape

      assert.strictEqual(Prom.value(m, "baton_handoffs_total", { from: "front", to: "billing", kind: "handoff" }), 1)
      assert.strictEqual(Prom.value(m, "baton_handoffs_total", { from: "", to: "front", kind: "start" }), 1)
      assert.strictEqual(Prom.value(m, "baton_floor_passage_seconds_count"), 1)
      // save_note sleeps 300 ms (test clock): its call took that long to be answered.
      assert.strictEqual(Prom.value(m, "baton_tool_call_seconds_count", { tool: "save_note", status: "ok" }), 1)
      assert.closeTo(Prom.value(m, "baton_tool_call_seconds_sum", { tool: "save_note", status: "ok" })!, 0.3, 0.02)
      assert.strictEqual(Prom.value(m, "baton_tool_call_seconds_count", { tool: "transfer_to_billing", status: "handoff" }), 1)
      assert.strictEqual(Prom.value(m, "baton_turns_total", { role: "user" }), 1)
      assert.strictEqual(Prom.value(m, "baton_turns_total", { role: "agent", source: "user_turn" }), 1)
      assert.strictEqual(Prom.value(m, "baton_turns_total", { role: "agent", source: "generate_reply" }), 1)
      const scripted = { provider: "scripted", model: "scripted" }
      assert.strictEqual(Prom.value(m, "baton_model_calls_total", { ...scripted, kind: "llm", outcome: "ok" }), 2)
      assert.strictEqual(Prom.value(m, "baton_tokens_total", { ...scripted, direction: "input" }), 320)
      assert.strictEqual(Prom.value(m, "baton_tokens_total", { ...scripted, direction: "output" }), 38)
      // Billing's reply waited 150 ms for its first text.
      assert.strictEqual(Prom.value(m, "baton_time_to_first_text_seconds_count", { ...scripted, kind: "llm" }), 2)
      assert.closeTo(Prom.value(m, "baton_time_to_first_text_seconds_sum", { ...scripted, kind: "llm" })!, 0.15, 0.02)
      assert.strictEqual(Prom.value(m, "baton_sessions_total", { state: "started" }), 1)
      assert.strictEqual(Prom.value(m, "baton_sessions_total", { state: "closed" }), 1)

      assert.deepStrictEqual(usage.total, { calls: 2, errors: 0, inputTokens: 320, outputTokens: 38, audioOutputSeconds: 0 })
      assert.deepStrictEqual(usage.byModel.map((u) => [u.provider, u.model, u.calls]), [["scripted", "scripted", 2]])
      assert.deepStrictEqual(usage.byAgent.map((u) => [u.agent, u.inputTokens, u.outputTokens]), [["front", 120, 30], ["billing", 200, 8]])
      assert.isTrue(closeEvent?.type === "close")
      assert.deepStrictEqual(closeEvent?.type === "close" ? closeEvent.usage : undefined, usage)
    }).pipe(withRegistry, Effect.provide(Layer.merge(ScriptedModel.layer(seed002Rules), observed))))

  it.effect("model errors are counted by reason", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "You are a." }) })
      yield* drive(session.run("hello"))
      yield* drive(session.run("fail please").pipe(Effect.catchTag("TurnFailed", () => Effect.void)))
      const m = yield* scrape
      const scripted = { provider: "scripted", model: "scripted" }
      assert.strictEqual(Prom.value(m, "baton_model_errors_total", { ...scripted, reason: "InternalProviderError" }), 1)
      assert.strictEqual(Prom.value(m, "baton_model_calls_total", { ...scripted, kind: "llm", outcome: "error" }), 1)
      assert.strictEqual(Prom.value(m, "baton_model_calls_total", { ...scripted, kind: "llm", outcome: "ok" }), 1)
      const usage = yield* session.usage
      assert.strictEqual(usage.total.errors, 1)
    }).pipe(withRegistry, Effect.provide(Layer.merge(ScriptedModel.layer([
      { when: { user: "fail" }, reply: { error: "the provider is down" } },
      { when: { user: "hello" }, reply: { text: "Hi." } }
    ]), observed))))

  it.effect("a model a fallback left counts as an error of that model; the call is the model's that answered", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "You are a." }) })
      yield* drive(session.run("hello"))
      const m = yield* scrape
      assert.strictEqual(Prom.value(m, "baton_model_errors_total", { provider: "scripted", model: "primary", reason: "InternalProviderError" }), 1)
      assert.strictEqual(Prom.value(m, "baton_model_calls_total", { provider: "scripted", model: "backup", kind: "llm", outcome: "ok" }), 1)
      assert.isUndefined(Prom.value(m, "baton_model_calls_total", { provider: "scripted", model: "primary", kind: "llm", outcome: "ok" }))
    }).pipe(withRegistry, Effect.provide(Layer.merge(
      ModelFallback.layer([
        ScriptedModel.layer([{ when: () => true, reply: { error: "overloaded" } }], { model: "primary" }),
        ScriptedModel.layer([{ when: () => true, reply: { text: "Backup here." } }], { model: "backup" })
      ]),
      observed
    ))))

  it.effect("realtime: a connection opened, then reused on the handoff; audio seconds and time to first audio per model", () => {
    const b = Agent.make({ name: "b", instructions: "You are b." })
    const a = Agent.make({ name: "a", instructions: "You are a.", tools: [Tool.handoff("to_b", () => b)] })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("go to b"))
      yield* drive(session.run("talk"))
      const m = yield* scrape
      assert.strictEqual(Prom.value(m, "baton_realtime_connections_total", { action: "opened" }), 1)
      assert.strictEqual(Prom.value(m, "baton_realtime_connections_total", { action: "reused" }), 1)
      const rt = { provider: "scripted-rt", model: "rt-1" }
      assert.strictEqual(Prom.value(m, "baton_tokens_total", { ...rt, direction: "output" }), 11)
      // Two deltas of 10 ms of 24 kHz audio.
      assert.closeTo(Prom.value(m, "baton_audio_seconds_total", { ...rt, direction: "output" })!, 0.02, 1e-9)
      assert.strictEqual(Prom.value(m, "baton_time_to_first_audio_seconds_count", rt), 1)
      const events = yield* session.eventLog
      assert.deepStrictEqual(
        events.flatMap((e) => (e.type === "realtime_connection" ? [`${e.agent}:${e.action}`] : [])),
        ["a:opened", "b:reused", "b:updated"]
      )
      const usage = yield* session.usage
      assert.deepStrictEqual(usage.byModel.map((u) => [u.provider, u.model]), [["scripted-rt", "rt-1"]])
    }).pipe(withRegistry, Effect.provide(Layer.merge(ScriptedRealtime.layer({
      provider: "scripted-rt",
      model: "rt-1",
      audio: true,
      rules: [
        { when: { user: "go to b" }, reply: { toolCalls: [{ name: "to_b" }] } },
        { when: { user: "talk" }, reply: { text: ["Hel", "lo."], usage: { inputTokens: 40, outputTokens: 11 } } }
      ]
    }), observed)))
  })
})
