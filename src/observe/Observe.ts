/**
 * Everything observability in one layer, from the environment: the metrics observer (always;
 * the service's `/metrics` renders them), the event recorder (`BATON_RECORD_DIR`), and OTLP
 * export of traces and metrics (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`). The audio
 * recorder wraps a transport's audio, so a transport adds `AudioRecorder.layerConfig` to the
 * layers of each session it serves.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Config, type FileSystem, Layer } from "effect"
import type { OtlpExporter } from "effect/observability"
import * as SessionObserver from "../SessionObserver.ts"
import * as Metrics from "./Metrics.ts"
import * as Recorder from "./Recorder.ts"
import * as Tracing from "./Tracing.ts"

// Each observer layer adds to the observers it is built with, so they are chained (a merge would
// build each from the same empty list and keep one).
/**
 * Everything the environment asks for, in one layer: OTLP traces and metrics
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`), event logs (`BATON_RECORD_DIR`), and the metrics observer on
 * every session. Provide it to a program that starts sessions.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Observe } from "@baton-voice/baton/observe"
 *
 * const observed = program.pipe(Effect.provide(Observe.layerConfig), Effect.provide(NodeFileSystem.layer))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<OtlpExporter.Flusher, Config.ConfigError, FileSystem.FileSystem> = Tracing.layerConfig.pipe(
  Layer.provideMerge(Recorder.layerConfig.pipe(Layer.provideMerge(SessionObserver.layer(Metrics.observer))))
)
