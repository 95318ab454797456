/**
 * The one observability layer: with BATON_RECORD_DIR and OTEL_EXPORTER_OTLP_ENDPOINT set, one
 * session is recorded to JSONL, counted in the metrics (exported over OTLP to the local
 * receiver), and traced; every observer of the chain is active.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, FileSystem, Layer, Metric } from "effect"
import * as Runs from "../../../examples/timeline/runs.ts"
import * as Observe from "../../../src/observe/Observe.ts"
import { start as startReceiver } from "./otlpReceiver.ts"

describe("Observe", () => {
  it.live("BATON_RECORD_DIR and OTEL_EXPORTER_OTLP_ENDPOINT: recorded, counted and traced", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped()
      const receiver = yield* startReceiver
      const env = ConfigProvider.layer(ConfigProvider.fromEnv({ env: { BATON_RECORD_DIR: dir, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } }))
      yield* Runs.seed002.pipe(Effect.scoped, Effect.provide(Layer.merge(Runs.seed002Model(), Observe.layerConfig.pipe(Layer.provide(env)))))

      const files = yield* fs.readDirectory(dir)
      assert.strictEqual(files.length, 1)
      assert.match(files[0]!, /^session_.*\.jsonl$/)
      assert.isTrue(receiver.spans().some((s) => s.name === "baton.handoff"))
      const metricNames = receiver.received.filter((r) => r.path === "/v1/metrics").flatMap((r) =>
        r.body.resourceMetrics.flatMap((rm: any) => rm.scopeMetrics.flatMap((sm: any) => sm.metrics.map((m: any) => m.name)))
      )
      assert.include(metricNames, "baton_handoffs_total")
      assert.include(metricNames, "baton_tool_call_seconds")
    }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer), Effect.provideService(Metric.MetricRegistry, new Map())))
})
