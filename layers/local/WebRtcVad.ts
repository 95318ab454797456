/**
 * The default VAD: WebRTC's voice activity detector (libfvad) compiled to WASM by
 * `@echogarden/fvad-wasm` (56 KB, no native code). It decides per 20 ms window at 8, 16, 32 or
 * 48 kHz; `VadSmoothing` turns decisions into events. `threshold` in [0, 1] maps to libfvad's
 * aggressiveness 0..3 (default 2): higher drops more non-speech.
 *
 * libfvad keeps calling up to 100 ms of windows after speech "speech" (WebRTC's own hangover,
 * at 20 ms windows and modes 2 and 3). That delays the end of speech, the moment the STT is asked
 * for its final, by that much, on top of the stream's `minSilenceMs`. By default the hangover's
 * windows count as silence here (the raw decision is read from the detector: 1 is speech, 2 and
 * up a window of hangover), so `minSilenceMs` alone says how long a pause ends speech; the
 * pipeline's endpointing decides whether the turn is over. `hangover: true` keeps libfvad's.
 *
 * `WebRtcVad.layer()` / `WebRtcVad.layerConfig` (env `WEBRTC_VAD_MODE`, 0..3) provide `Vad`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Config, Effect, Layer } from "effect"
import { Vad, type VadEvent, type VadOptions, type VadService, type VadStream } from "../../services/Vad.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import { makeSmoother, makeWindower } from "./VadSmoothing.ts"

interface FvadModule {
  readonly _fvad_new: () => number
  readonly _fvad_free: (inst: number) => void
  readonly _fvad_set_mode: (inst: number, mode: number) => number
  readonly _fvad_set_sample_rate: (inst: number, rate: number) => number
  readonly _fvad_process: (inst: number, frame: number, length: number) => number
  readonly _malloc: (bytes: number) => number
  readonly _free: (ptr: number) => void
  readonly HEAP16: Int16Array
  readonly HEAP32: Int32Array
}

/**
 * Options of WebRTC VAD: libfvad's aggressiveness.
 *
 * @since 0.1.0
 * @category models
 */
export interface WebRtcVadOptions {
  /** libfvad aggressiveness 0..3 for streams that give no `threshold`. Default 2. */
  readonly mode?: number
  /** Keep WebRTC's own hangover (windows after speech still called speech). Default false:
   * they count as silence, and the stream's `minSilenceMs` is the only hangover. */
  readonly hangover?: boolean
}

const rates = [8000, 16000, 32000, 48000]
const windowMs = 20

const unavailable = (description: string) => new VoiceError({ source: "vad", reason: "Unavailable", description })

const loadModule = Effect.tryPromise({
  try: () => import("@echogarden/fvad-wasm").then((m) => m.default().then((mod) => mod as FvadModule)),
  catch: (e) => unavailable(`cannot load @echogarden/fvad-wasm (${(e as Error).message}); run npm ci`)
})

/**
 * The window's decision before libfvad folds WebRTC's hangover into "speech": libfvad's detector
 * begins with WebRTC's `VadInstT`, whose first field (`int vad`) holds the last raw decision:
 * 0 no speech, 1 speech, 2 and more a window of hangover. A value outside that range (a libfvad
 * laid out otherwise) leaves libfvad's own decision.
 */
const withoutHangover = (mod: FvadModule, inst: number, decision: number): boolean => {
  if (decision !== 1) return false
  const raw = mod.HEAP32[inst >> 2]!
  return !(raw >= 2 && raw <= 32)
}

const streamOn = (mod: FvadModule, defaultMode: number, hangover: boolean) =>
  Effect.fn("WebRtcVad.stream")(function*(options: VadOptions = {}) {
    const mode = options.threshold === undefined ? defaultMode : Math.round(Math.min(1, Math.max(0, options.threshold)) * 3)
    const inst = yield* Effect.acquireRelease(
      Effect.sync(() => mod._fvad_new()),
      (inst) => Effect.sync(() => inst !== 0 && mod._fvad_free(inst))
    )
    if (inst === 0) return yield* unavailable("fvad_new could not allocate a detector")
    mod._fvad_set_mode(inst, mode)
    // 48 kHz × 20 ms is the largest window.
    const buffer = yield* Effect.acquireRelease(
      Effect.sync(() => mod._malloc(2 * 960)),
      (ptr) => Effect.sync(() => mod._free(ptr))
    )
    const smoother = makeSmoother(options)
    const windower = makeWindower(rates, (rate) => (rate / 1000) * windowMs, "WebRTC VAD")
    let rateSet = false

    const push: VadStream["push"] = (frame) =>
      Effect.suspend(() => {
        const windows = windower.add(frame)
        if (windows instanceof VoiceError) return Effect.fail(windows)
        if (!rateSet && windows.length > 0) {
          mod._fvad_set_sample_rate(inst, windower.rate()!)
          rateSet = true
        }
        const events: Array<VadEvent> = []
        for (const window of windows) {
          mod.HEAP16.set(window, buffer >> 1)
          const decision = mod._fvad_process(inst, buffer, window.length)
          if (decision < 0) {
            return Effect.fail(new VoiceError({ source: "vad", reason: "InvalidAudio", description: "fvad refused a window" }))
          }
          const event = smoother.decide(hangover ? decision === 1 : withoutHangover(mod, inst, decision), windowMs)
          if (event !== undefined) events.push(event)
        }
        return Effect.succeed(events)
      })

    return { push, speaking: smoother.speaking } satisfies VadStream
  })

/**
 * The `Vad` service over libfvad compiled to WebAssembly (`@echogarden/fvad-wasm`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("WebRtcVad.make")(function*(options: WebRtcVadOptions = {}) {
  const mod = yield* loadModule
  return { sampleRates: rates, stream: streamOn(mod, options.mode ?? 2, options.hangover === true) } satisfies VadService
})

/**
 * `Vad` by WebRTC's VAD (offline, the default VAD).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: WebRtcVadOptions = {}): Layer.Layer<Vad, VoiceError> => Layer.effect(Vad, make(options))

/**
 * {@link layer} from the environment: `WEBRTC_VAD_MODE` (0..3, default 2).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Vad, VoiceError | Config.ConfigError> = Layer.effect(
  Vad,
  Effect.gen(function*() {
    const mode = yield* Config.Int("WEBRTC_VAD_MODE").pipe(Config.withDefault(2))
    return yield* make({ mode })
  })
)
