/**
 * Silero VAD (v5, `silero_vad.onnx`) run by `onnxruntime-node` on the CPU: a speech probability
 * per 32 ms window (512 samples at 16 kHz, 256 at 8 kHz), fed the last 64 (32) samples of the
 * previous window as context and its recurrent state, as the model expects. `threshold` (default
 * 0.5) cuts the probability; `VadSmoothing` turns decisions into events.
 *
 * The streams of one Layer share one model session, and the windows they push during one turn of
 * the event loop run as one batched inference (`SileroBatch.ts`): the same probabilities as one
 * run per window, for about a third of the CPU. The batches run on a worker thread the Layer
 * owns (`SileroWorker.ts`; `inference: "event-loop"` runs them on the main thread instead).
 *
 * The model file is not in git: `npm run setup` (scripts/fetch-silero.sh) takes it from the npm
 * tarball of `@livekit/agents-plugin-silero@1.9.0` (MIT; it ships the upstream snakers4/silero-vad
 * model), checks its sha256 and puts it at `.cache/models/silero_vad.onnx`. Without the file the
 * Layer fails with that command.
 *
 * `SileroVad.layer({ modelPath })` / `SileroVad.layerConfig` (env `SILERO_VAD_MODEL`) provide `Vad`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Config, Effect, Layer, Schema } from "effect"
import * as Fs from "node:fs"
import { fileURLToPath } from "node:url"
import { Vad, type VadEvent, type VadOptions, type VadService, type VadStream } from "../../services/Vad.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import { type Batcher, makeBatcher, makeMemory, type Memory } from "./SileroBatch.ts"
import * as SileroSession from "./SileroSession.ts"
import { runOnWorker } from "./SileroWorker.ts"
import { makeSmoother, makeWindower } from "./VadSmoothing.ts"

/**
 * Where `npm run setup` puts the Silero model (`.cache/models/silero_vad.onnx`).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultModelPath = fileURLToPath(new URL("../../.cache/models/silero_vad.onnx", import.meta.url))
/**
 * The command that fetches the Silero model (shown when it is missing).
 *
 * @since 0.1.0
 * @category constants
 */
export const fetchCommand = "npm run setup (or: bash scripts/fetch-silero.sh)"

/**
 * Options of Silero VAD: the path of its ONNX model.
 *
 * @since 0.1.0
 * @category models
 */
export interface SileroVadOptions {
  readonly modelPath?: string
  /**
   * Where the model runs: `"worker"` (the default), a worker thread of the Layer's own, so a
   * batch of many calls' windows never holds up the event loop that moves their audio; or
   * `"event-loop"`, onnxruntime's synchronous run on the main thread (no thread, a little less CPU
   * per batch; each batch delays every call's frames by its length).
   */
  readonly inference?: "worker" | "event-loop"
}

const rates = [8000, 16000]
const windowOf = (rate: number) => (rate === 16000 ? 512 : 256)
const contextOf = (rate: number) => (rate === 16000 ? 64 : 32)

const fail = (reason: VoiceError["reason"], description: string) => new VoiceError({ source: "vad", reason, description })

const noEvents: Effect.Effect<ReadonlyArray<VadEvent>> = Effect.succeed([])

const streamOn = (batcher: Batcher) =>
  Effect.fn("SileroVad.stream")(function*(options: VadOptions = {}) {
    const threshold = options.threshold ?? 0.5
    const smoother = makeSmoother(options)
    const windower = makeWindower(rates, windowOf, "Silero VAD")
    let memory: Memory | undefined

    /** Runs `windows` from `index` on, one at a time (each waits for its batch), adding their events. */
    const runFrom = (
      windows: ReadonlyArray<Int16Array>,
      index: number,
      rate: number,
      events: Array<VadEvent>
    ): Effect.Effect<ReadonlyArray<VadEvent>, VoiceError> => {
      if (index === windows.length) return Effect.succeed(events)
      const window = windows[index]!
      memory ??= makeMemory(contextOf(rate), window.length)
      for (let i = 0; i < window.length; i++) memory.input[memory.contextSize + i] = window[i]! / 32768
      return Effect.flatMap(batcher.infer(memory, rate), (probability) => {
        const event = smoother.decide(probability >= threshold, (window.length / rate) * 1000)
        if (event !== undefined) events.push(event)
        return runFrom(windows, index + 1, rate, events)
      })
    }
    // (per 20 ms frame of every call: no generator, and no effect at all for a frame that
    // completes no window)
    const push: VadStream["push"] = (frame) => {
      const windows = windower.add(frame)
      if (windows instanceof VoiceError) return Effect.fail(windows)
      if (windows.length === 0) return noEvents
      return runFrom(windows, 0, windower.rate()!, [])
    }

    return { push, speaking: smoother.speaking } satisfies VadStream
  })

/**
 * The `Vad` service over the Silero ONNX model, run by `onnxruntime-node` (an optional peer,
 * loaded here). Fails `Unavailable` when the model or the runtime is missing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("SileroVad.make")(function*(options: SileroVadOptions = {}) {
  const modelPath = options.modelPath ?? defaultModelPath
  if (!Fs.existsSync(modelPath)) {
    return yield* fail("Unavailable", `the Silero model ${modelPath} is missing; get it with: ${fetchCommand}`)
  }
  // Loaded here, not at import: `onnxruntime-node` is an optional peer of the package.
  const ort = yield* Effect.tryPromise({
    try: (): Promise<SileroSession.OrtModule> => import("onnxruntime-node"),
    catch: () => fail("Unavailable", "Silero VAD needs onnxruntime-node: npm install onnxruntime-node (ONNXRUNTIME_NODE_INSTALL=skip for CPU only)")
  })
  const unavailable = (message: string) =>
    fail("Unavailable", `onnxruntime cannot load ${modelPath} (${message}); get it again with: ${fetchCommand}`)
  if ((options.inference ?? "worker") === "worker") {
    const run = yield* runOnWorker(modelPath, unavailable)
    return { sampleRates: rates, stream: streamOn(makeBatcher(run)) } satisfies VadService
  }
  const session = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => SileroSession.create(ort, modelPath),
      catch: (e) => unavailable((e as Error).message)
    }),
    // a release that fails is logged: the Layer is closing either way
    (session) =>
      Effect.tryPromise({
        try: () => session.release(),
        catch: (e) => fail("Transport", `onnxruntime did not release the Silero session: ${(e as Error).message}`)
      }).pipe(Effect.catch((error) => Effect.logWarning(error.message)))
  )
  return { sampleRates: rates, stream: streamOn(makeBatcher(SileroSession.runOn(ort, session))) } satisfies VadService
})

/**
 * `Vad` by Silero (offline, needs its model file and `onnxruntime-node`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: SileroVadOptions = {}): Layer.Layer<Vad, VoiceError> => Layer.effect(Vad, make(options))

/**
 * {@link layer} from the environment: `SILERO_VAD_MODEL` (default `.cache/models/silero_vad.onnx`) and
 * `SILERO_VAD_INFERENCE` (`worker`, the default, or `event-loop`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Vad, VoiceError | Config.ConfigError> = Layer.effect(
  Vad,
  Effect.gen(function*() {
    const modelPath = yield* Config.String("SILERO_VAD_MODEL").pipe(Config.withDefault(defaultModelPath))
    const inference = yield* Config.schema(Schema.Literals(["worker", "event-loop"]), "SILERO_VAD_INFERENCE").pipe(Config.withDefault("worker" as const))
    return yield* make({ modelPath, inference })
  })
)
