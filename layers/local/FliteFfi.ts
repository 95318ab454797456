/**
 * flite in process: the C functions of Debian's flite 2.2 (`libflite1`: `libflite.so.1` and one
 * library per voice) bound through `koffi`, and a synthesis as an Effect. Kept apart from the Tts
 * layer so the one place that knows C signatures and struct layouts is small.
 *
 * One flite call at a time in the process. flite says it is thread safe after initialization,
 * but (1) a voice's features are shared: the speed is set on them before each synthesis, and a
 * feature written while another thread reads the list is a use after free; (2) its CG voices
 * (rms, slt, awb) draw the excitation noise from libc's `rand()`, one state for the process:
 * each synthesis starts from `srand(1)`, the seed a fresh `flite` process has, so a sentence gives
 * the same samples as the program, every time; (3) registering a voice writes flite's statics.
 * A synthesis runs on a koffi worker thread (the event loop goes on); the next waits for it.
 * An interrupted caller returns at once: a synthesis still queued is dropped, one in flight
 * finishes unheard (its wave freed).
 */
import { Effect } from "effect"
import type { LibraryHandle } from "koffi"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { VoiceError } from "../../services/VoiceError.ts"

/** How to install flite's libraries on Debian or Ubuntu (shown when they are missing). */
export const installLine = "apt-get install -y libflite1"

/** Debian's voices: each one's library (`libflite_<name>.so.1`) and its `register_<name>`. */
const voiceLibraries: Readonly<Record<string, string>> = {
  awb: "cmu_us_awb",
  awb_time: "cmu_time_awb",
  kal: "cmu_us_kal",
  kal16: "cmu_us_kal16",
  rms: "cmu_us_rms",
  slt: "cmu_us_slt"
}

/** The voices the library engine knows. */
export const voices: ReadonlyArray<string> = Object.keys(voiceLibraries)

const fail = (reason: VoiceError["reason"], description: string) =>
  new VoiceError({ source: "tts", reason, description })

const unavailable = (description: string, install: string = installLine) =>
  fail("Unavailable", `${description}; install it: ${install}`)

type Koffi = typeof import("koffi").default
type Fn = ReturnType<LibraryHandle["func"]>

/** libflite's functions, and where the voices' libraries are. */
export interface Library {
  readonly koffi: Koffi
  /** `libflite_<voice>.so.1` for a voice's library name. */
  readonly voicePath: (library: string) => string
  readonly textToWave: Fn
  readonly deleteWave: Fn
  readonly ownString: Fn
  readonly setFloat: Fn
  readonly getFloat: Fn
  readonly srand: Fn
  /** `cst_wave`: type, sample_rate, num_samples, num_channels, samples. */
  readonly wave: ReturnType<Koffi["struct"]>
  /** The head of `cst_voice`: name, features, ... */
  readonly voice: ReturnType<Koffi["struct"]>
}

/** A registered voice (flite keeps one per process: registering again gives the same). */
export interface Voice {
  readonly name: string
  readonly pointer: unknown
  readonly features: unknown
  /** The name `duration_stretch` owned by the voice's features (flite keeps the pointer). */
  readonly stretchKey: unknown
  /** The voice's own `duration_stretch`, set back when no speed is asked. */
  readonly defaultStretch: number
}

/**
 * Loads libflite (`path`, default `libflite.so.1` by the dynamic linker) and initializes it.
 * Voices' libraries are taken from `path`'s directory when it has one.
 */
export const load = (path: string = "libflite.so.1"): Effect.Effect<Library, VoiceError> =>
  Effect.tryPromise({
    try: (): Promise<typeof import("koffi")> => import("koffi"),
    catch: () => unavailable("flite in-process needs the koffi package", "npm install koffi")
  }).pipe(Effect.flatMap((module) => bind(module.default, path)))

/**
 * The libraries loaded, kept for the life of the process: koffi unloads a library once nothing
 * references it, but a registered voice lives in flite's statics and points into its voice
 * library (the names of its features, its model), so unloading one makes the next synthesis
 * read unmapped memory.
 */
const libraries = new Map<string, LibraryHandle>()

/** `path` loaded, the first time only; `first` runs then (flite's one-time initialization). */
const loadOnce = (koffi: Koffi, path: string, first?: (library: LibraryHandle) => void): LibraryHandle => {
  const known = libraries.get(path)
  if (known !== undefined) return known
  const library = koffi.load(path)
  first?.(library)
  libraries.set(path, library)
  return library
}

const bind = (koffi: Koffi, path: string): Effect.Effect<Library, VoiceError> =>
  Effect.try({
    try: () => {
      const flite = loadOnce(koffi, path, (flite) => flite.func("int flite_init()")())
      const libc = loadOnce(koffi, "libc.so.6")
      const slash = path.lastIndexOf("/")
      const dir = slash < 0 ? "" : path.slice(0, slash + 1)
      const library: Library = {
        koffi,
        voicePath: (name) => `${dir}libflite_${name}.so.1`,
        textToWave: flite.func("void *flite_text_to_wave(const char *text, void *voice)"),
        deleteWave: flite.func("void delete_wave(void *wave)"),
        ownString: flite.func("void *feat_own_string(void *features, const char *name)"),
        // `name` is a pointer flite keeps: one from ownString, never a temporary string
        setFloat: flite.func("void flite_feat_set_float(void *features, void *name, float value)"),
        getFloat: flite.func("float flite_get_param_float(void *features, const char *name, float otherwise)"),
        srand: libc.func("void srand(unsigned int seed)"),
        wave: koffi.struct({
          type: "const char *",
          sample_rate: "int",
          num_samples: "int",
          num_channels: "int",
          samples: "void *"
        }),
        voice: koffi.struct({ name: "const char *", features: "void *", ffunctions: "void *", utt_init: "void *" })
      }
      return library
    },
    catch: (e) => unavailable(`cannot load flite's library ${path} (${(e as Error).message.split("\n")[0]})`)
  })

// ---------------------------------------------------------------------------------------------
// One flite call at a time (see the header)

interface Job {
  cancelled: boolean
  readonly run: (finish: () => void) => void
}

const jobs: Array<Job> = []
let running = false

const next = (): void => {
  while (!running && jobs.length > 0) {
    const job = jobs.shift()!
    running = true
    job.run(() => {
      running = false
      next()
    })
  }
}

/** flite calls queued or running in the process. */
export const pending = (): number => jobs.length + (running ? 1 : 0)

/**
 * `run` when the calls before it are done; it calls `finish` when flite is free again, and
 * `resume` with its result. Interrupted: dropped if still queued, otherwise finishes unheard.
 */
const serialized = <A>(
  run: (resume: (result: Effect.Effect<A, VoiceError>) => void, finish: () => void) => void
): Effect.Effect<A, VoiceError> =>
  Effect.callback<A, VoiceError>((resume) => {
    const job: Job = {
      cancelled: false,
      run: (finish) =>
        run((result) => {
          if (!job.cancelled) resume(result)
        }, finish)
    }
    jobs.push(job)
    next()
    return Effect.sync(() => {
      job.cancelled = true
      const queued = jobs.indexOf(job)
      if (queued >= 0) jobs.splice(queued, 1)
    })
  })

/** Runs `f` on the event loop in its turn (registration writes flite's statics). */
const inTurn = <A>(f: () => A, onError: (e: unknown) => VoiceError): Effect.Effect<A, VoiceError> =>
  serialized<A>((resume, finish) => {
    let result: Effect.Effect<A, VoiceError>
    try {
      result = Effect.succeed(f())
    } catch (e) {
      result = Effect.fail(onError(e))
    }
    finish()
    resume(result)
  })

/**
 * Loads and registers `name` (one of {@link voices}); a voice whose library is missing is
 * Unavailable, with the apt-get line.
 */
export const loadVoice = (lib: Library, name: string): Effect.Effect<Voice, VoiceError> => {
  const library = voiceLibraries[name]
  if (library === undefined) {
    return Effect.fail(fail("InvalidRequest", `flite has no voice ${name}; it has ${voices.join(", ")}`))
  }
  const path = lib.voicePath(library)
  return inTurn(() => {
    const register = loadOnce(lib.koffi, path).func(`void *register_${library}(const char *voxdir)`)
    const pointer = register(null)
    if (pointer === null) throw new Error(`register_${library} returned no voice`)
    const features = lib.koffi.decode(pointer, lib.voice).features as unknown
    return {
      name,
      pointer,
      features,
      stretchKey: lib.ownString(features, "duration_stretch"),
      defaultStretch: lib.getFloat(features, "duration_stretch", 1) as number
    } satisfies Voice
  }, (e) => unavailable(`cannot load flite's voice ${name} from ${path} (${(e as Error).message.split("\n")[0]})`))
}

/** The samples of a `cst_wave`, copied out of flite's memory. */
const copyWave = (lib: Library, pointer: unknown): AudioFrame.AudioFrame => {
  const wave = lib.koffi.decode(pointer, lib.wave) as {
    sample_rate: number
    num_samples: number
    num_channels: number
    samples: unknown
  }
  const length = wave.num_samples * wave.num_channels
  const data = length === 0 ? new Int16Array(0) : new Int16Array(lib.koffi.view(wave.samples, length * 2).slice(0))
  return AudioFrame.make(data, wave.sample_rate, wave.num_channels)
}

/**
 * `text` spoken by `voice` as one utterance (`flite_text_to_wave`), on a worker thread. `speed`
 * as the program's `duration_stretch` (1 / speed).
 */
export const synthesize = (
  lib: Library,
  voice: Voice,
  text: string,
  speed: number | undefined
): Effect.Effect<AudioFrame.AudioFrame, VoiceError> =>
  serialized<AudioFrame.AudioFrame>((resume, finish) => {
    const stretch = speed !== undefined && speed > 0 && speed !== 1 ? 1 / speed : voice.defaultStretch
    try {
      lib.setFloat(voice.features, voice.stretchKey, stretch)
      lib.srand(1)
    } catch (e) {
      finish()
      return resume(Effect.fail(fail("Transport", `flite could not be set up: ${(e as Error).message}`)))
    }
    lib.textToWave.async(text, voice.pointer, (error: unknown, pointer: unknown) => {
      let result: Effect.Effect<AudioFrame.AudioFrame, VoiceError>
      if (error) result = Effect.fail(fail("Transport", `flite_text_to_wave failed: ${String(error)}`))
      else if (pointer === null) result = Effect.fail(fail("Transport", `flite made no audio with voice ${voice.name}`))
      else {
        try {
          result = Effect.succeed(copyWave(lib, pointer))
        } catch (e) {
          result = Effect.fail(fail("Transport", `flite gave a bad wave: ${(e as Error).message}`))
        } finally {
          lib.deleteWave(pointer)
        }
      }
      finish()
      resume(result)
    })
  })
