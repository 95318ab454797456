/**
 * Seeing what happened: metrics, traces (OTLP), usage, the event recorder (JSONL per session),
 * the audio recorder (WAV, both sides), and the building blocks they share. `Observe.layerConfig`
 * turns on what the environment asks for. The package maps `baton/observe` here.
 *
 * @module @baton-voice/baton/observe
 */
export * as AudioRecorder from "./AudioRecorder.ts"
export * as Follow from "./Follow.ts"
export * as Metrics from "./Metrics.ts"
export * as ModelCallMeter from "./ModelCallMeter.ts"
export * as Observe from "./Observe.ts"
export * as Recorder from "./Recorder.ts"
export * as Tracing from "./Tracing.ts"
export * as Usage from "./Usage.ts"
export * as SessionObserver from "../SessionObserver.ts"
