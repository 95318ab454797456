/**
 * Traces over OTLP: with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP receiver
 * (started here, on 127.0.0.1), one seed 002 run arrives as one trace whose tree follows the
 * actors: the session, an agent span per activation, the model and tool calls under the agent
 * that made them, the handoff under the outgoing agent linked to the incoming one (which links
 * back), the user turn linked to the agent that heard it. Without the variable nothing is sent.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import * as Runs from "../../../examples/timeline/runs.ts"
import * as Tracing from "../../../src/observe/Tracing.ts"
import { attr, type OtlpSpan, start as startReceiver } from "./otlpReceiver.ts"

const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env }))

/** Runs seed 002 with the tracing layer built from `env`; the layer's Scope closes (flushing). */
const runTraced = (env: Record<string, string>) =>
  Runs.seed002.pipe(
    Effect.scoped,
    Effect.provide(Layer.merge(Runs.seed002Model(), Tracing.layerConfig.pipe(Layer.provide(withEnv(env)))))
  )

describe("Tracing", () => {
  it.live("OTLP: one run with a handoff arrives as one trace, its tree following the actors", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver
      yield* runTraced({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "baton-test" })
      // The public entry points are named spans of their own (Effect.fn), so a program's own
      // trace shows where it called baton.
      const entryPoints = new Set(receiver.spans().map((s) => s.name).filter((name) => name.startsWith("AgentSession.")))
      assert.deepStrictEqual([...entryPoints], ["AgentSession.run"])
      // Each model call is also effect/ai's client span (baton builds it only when a tracing
      // backend is installed, as here): as many as baton's model_call spans.
      const modelCalls = receiver.spans().filter((s) => s.name === "LanguageModel.streamText")
      assert.isAbove(modelCalls.length, 0)
      assert.strictEqual(modelCalls.length, receiver.spans().filter((s) => s.name === "baton.model_call").length)
      // baton's spans
      const spans = receiver.spans().filter((s) => s.name.startsWith("baton."))
      assert.isAbove(spans.length, 0, "no span reached the receiver")
      assert.isTrue(receiver.received.some((r) => r.path === "/v1/traces" && r.contentType?.includes("json")))
      assert.deepStrictEqual([...new Set(spans.map((s) => s.service))], ["baton-test"])
      assert.strictEqual(new Set(spans.map((s) => s.traceId)).size, 1)

      const byId = new Map(spans.map((s) => [s.spanId, s]))
      const parentOf = (s: OtlpSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined)
      const named = (name: string) => spans.filter((s) => s.name === name)
      const [session] = named("baton.session")
      assert.isDefined(session)
      assert.isUndefined(parentOf(session!))

      const agents = named("baton.agent")
      assert.deepStrictEqual(agents.map((a) => attr(a, "baton.agent")).sort(), ["billing", "front"])
      for (const a of agents) assert.strictEqual(parentOf(a)?.name, "baton.session")
      const agent = (name: string) => agents.find((a) => attr(a, "baton.agent") === name)!
      // The incoming agent's span follows from the outgoing one.
      assert.deepStrictEqual(agent("billing").links?.map((l) => l.spanId), [agent("front").spanId])

      const [handoff] = named("baton.handoff").filter((h) => attr(h, "baton.handoff.from") === "front")
      assert.isDefined(handoff)
      assert.strictEqual(parentOf(handoff!)?.spanId, agent("front").spanId)
      assert.strictEqual(attr(handoff!, "baton.handoff.to"), "billing")
      assert.strictEqual(attr(handoff!, "baton.handoff.kind"), "handoff")
      assert.deepStrictEqual(handoff!.links?.map((l) => l.spanId), [agent("billing").spanId])

      // Each call under the agent that made it; the parallel tools both under front.
      const tools = named("baton.tool_call")
      assert.deepStrictEqual(tools.map((t) => [attr(t, "baton.tool.name"), parentOf(t)?.spanId]).sort(), [
        ["save_note", agent("front").spanId],
        ["transfer_to_billing", agent("front").spanId]
      ].sort())
      assert.deepStrictEqual(tools.map((t) => attr(t, "baton.tool.status")).sort(), ["handoff", "ok"])
      const models = named("baton.model_call")
      assert.deepStrictEqual(models.map((m) => attr(parentOf(m)!, "baton.agent")).sort(), ["billing", "front"])
      for (const m of models) {
        assert.strictEqual(attr(m, "gen_ai.provider.name"), "scripted")
        assert.strictEqual(attr(m, "gen_ai.request.model"), "scripted")
      }
      // The billing agent's model call started after the handoff ended.
      const billingCall = models.find((m) => parentOf(m)?.spanId === agent("billing").spanId)!
      assert.isTrue(BigInt(billingCall.startTimeUnixNano) >= BigInt(handoff!.endTimeUnixNano))

      const turns = named("baton.user_turn")
      assert.strictEqual(turns.length, 1)
      assert.strictEqual(parentOf(turns[0]!)?.spanId, session!.spanId)
      assert.deepStrictEqual(turns[0]!.links?.map((l) => l.spanId), [agent("front").spanId])
      // Every span ended no earlier than it started.
      for (const s of spans) assert.isTrue(BigInt(s.endTimeUnixNano) >= BigInt(s.startTimeUnixNano), s.name)
    }))

  it.live("without OTEL_EXPORTER_OTLP_ENDPOINT nothing is exported", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver
      yield* runTraced({ OTEL_SERVICE_NAME: "baton-test" })
      assert.deepStrictEqual(receiver.received, [])
    }))
})
