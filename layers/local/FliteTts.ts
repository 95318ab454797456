/**
 * Offline text to speech with Debian's flite (voice `rms` by default: the one the offline STT
 * understands best), in one of two engines:
 *
 * - `library` (the default when it loads): libflite in this process through `koffi`
 *   (`FliteFfi.ts`). A sentence is synthesized on a worker thread, one at a time in the process;
 *   no process, no file. Interrupting the stream returns at once (a synthesis in flight finishes
 *   unheard).
 * - `program`: the `flite` program spawned per synthesis, its WAV file read back
 *   (`FliteProgram.ts`). Interrupting the stream kills the process. Used when libflite or
 *   `koffi` cannot be loaded, or for a voice given as a `.flitevox` file.
 *
 * Either way the audio streams as frames of `frameMs` once the sentence is synthesized, at the
 * voice's own rate. `FliteTts.layer({ voice: "rms" })` or `FliteTts.layerConfig` (env
 * `FLITE_ENGINE`, `FLITE_BINARY`, `FLITE_VOICE`) provide `Tts`. Building the Layer synthesizes
 * one word: a missing engine or voice fails there, with the `apt-get` line, not on the first reply.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Config, Effect, Layer, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Tts, type TtsOptions, type TtsService } from "../../services/Tts.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import * as FliteFfi from "./FliteFfi.ts"
import * as FliteProgram from "./FliteProgram.ts"

/**
 * How to install flite on Debian or Ubuntu (shown when it is missing).
 *
 * @since 0.1.0
 * @category constants
 */
export const installLine = FliteProgram.installLine

/**
 * Options of flite: the engine, the voice and the frame length.
 *
 * @since 0.1.0
 * @category models
 */
export interface FliteTtsOptions {
  /**
   * `library` (libflite in process) or `program` (a `flite` process per synthesis). Default:
   * `library` when libflite and the voice's library load, else `program`.
   */
  readonly engine?: "library" | "program"
  /** The flite program (engine `program`); default `flite` on PATH. */
  readonly binary?: string
  /** libflite (engine `library`); default `libflite.so.1` by the dynamic linker. */
  readonly library?: string
  /** Default voice (`flite -lv` lists them; `rms`, `slt`, `awb` are 16 kHz, `kal` 8 kHz). */
  readonly voice?: string
  /** Length of the frames the stream emits. Default 20 ms. */
  readonly frameMs?: number
}

/** What each engine gives: its voices checked, a text synthesized whole. */
interface Engine {
  readonly checkVoice: (voice: string) => Effect.Effect<void, VoiceError>
  readonly synthesize: (text: string, voice: string, speed: number | undefined) => Effect.Effect<AudioFrame.AudioFrame, VoiceError>
}

const fail = (reason: VoiceError["reason"], description: string) =>
  new VoiceError({ source: "tts", reason, description })

/** libflite as an engine; each voice's library is loaded and registered on its first use. */
const libraryEngine = (path: string | undefined): Effect.Effect<Engine, VoiceError> =>
  Effect.map(FliteFfi.load(path), (lib) => {
    const loaded = new Map<string, FliteFfi.Voice>()
    const voiceNamed = (name: string) => {
      const known = loaded.get(name)
      return known !== undefined
        ? Effect.succeed(known)
        : Effect.tap(FliteFfi.loadVoice(lib, name), (voice) => Effect.sync(() => loaded.set(name, voice)))
    }
    return {
      checkVoice: (voice) =>
        voice.includes("/")
          ? Effect.fail(fail("InvalidRequest", `flite's library engine has the voices ${FliteFfi.voices.join(", ")}; a voice file (${voice}) needs engine: "program"`))
          : FliteFfi.voices.includes(voice)
          ? Effect.void
          : Effect.fail(fail("InvalidRequest", `flite has no voice ${voice}; it has ${FliteFfi.voices.join(", ")}`)),
      synthesize: (text, voice, speed) => Effect.flatMap(voiceNamed(voice), (v) => FliteFfi.synthesize(lib, v, text, speed))
    }
  })

/** `engine` with the default voice checked and one word synthesized (which gives its rate). */
const ready = <R>(name: "library" | "program", engine: Effect.Effect<Engine, VoiceError, R>, voice: string) =>
  Effect.gen(function*() {
    const built = yield* engine
    yield* built.checkVoice(voice)
    const probe = yield* built.synthesize("ok", voice, undefined)
    return { name, engine: built, sampleRate: probe.sampleRate }
  })

/**
 * The Tts service over flite (its `engine` says which one runs), in a Scope that owns what the
 * engine holds (the program's temp directory).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("FliteTts.make")(function*(options: FliteTtsOptions = {}) {
  const defaultVoice = options.voice ?? "rms"
  const frameMs = options.frameMs ?? 20
  const program = ready("program", FliteProgram.make(options.binary ?? "flite"), defaultVoice)
  const library = ready("library", libraryEngine(options.library), defaultVoice)
  const chosen: { name: "library" | "program"; engine: Engine; sampleRate: number } = yield* (
    options.engine === "program"
      ? program
      : options.engine === "library"
      ? library
      : defaultVoice.includes("/")
      ? program
      : library.pipe(Effect.catchIf((e: VoiceError) => e.reason === "Unavailable", () => program))
  )
  const { engine } = chosen

  const synthesize = (text: string, options?: TtsOptions): Stream.Stream<AudioFrame.AudioFrame, VoiceError> =>
    text.trim() === ""
      ? Stream.empty
      : Stream.unwrap(
        engine.checkVoice(options?.voice ?? defaultVoice).pipe(
          Effect.andThen(Effect.suspend(() => engine.synthesize(text, options?.voice ?? defaultVoice, options?.speed))),
          Effect.map((audio) => Stream.fromIterable(AudioFrame.split(audio, frameMs))),
          Effect.withSpan("FliteTts.synthesize", { attributes: { engine: chosen.name } })
        )
      )

  const service: TtsService & { readonly engine: "library" | "program" } = {
    sampleRate: chosen.sampleRate,
    synthesize,
    engine: chosen.name
  }
  return service
})

/**
 * `Tts` by flite (offline, no key).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: FliteTtsOptions = {}): Layer.Layer<Tts, VoiceError> =>
  Layer.effect(Tts, make(options))

/**
 * {@link layer} from the environment: `FLITE_ENGINE` (`library` or `program`; unset: the
 * default), `FLITE_BINARY`, `FLITE_VOICE`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Tts, VoiceError | Config.ConfigError> = Layer.effect(
  Tts,
  Effect.gen(function*() {
    const engine = yield* Config.Literals(["library", "program"], "FLITE_ENGINE").pipe(Config.option)
    const binary = yield* Config.String("FLITE_BINARY").pipe(Config.withDefault("flite"))
    const voice = yield* Config.String("FLITE_VOICE").pipe(Config.withDefault("rms"))
    return yield* make({ binary, voice, ...(engine._tag === "Some" ? { engine: engine.value } : {}) })
  })
)
