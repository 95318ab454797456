/**
 * Offline text to speech with Debian's `flite` program (voice `rms` by default: the one the
 * offline STT understands best). flite cannot write to `/dev/stdout` when Node spawns it, so each
 * synthesis writes a WAV file into a temp directory the Layer owns (removed with the Layer), is
 * read back through `services/Wav.ts`, and streams as frames of `frameMs`. Interrupting the
 * stream kills the flite process (barge-in, a handoff mid-reply).
 *
 * `FliteTts.layer({ voice: "rms" })` or `FliteTts.layerConfig` (env `FLITE_BINARY`,
 * `FLITE_VOICE`) provide `Tts`. Building the Layer runs flite once on a word: a missing program
 * or voice fails there, with the `apt-get` line, not on the first reply.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Config, Effect, Layer, Stream } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Tts, type TtsOptions, type TtsService } from "../../services/Tts.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import * as Wav from "../../services/Wav.ts"
import * as Process from "./Process.ts"

/**
 * How to install flite on Debian or Ubuntu (shown when it is missing).
 *
 * @since 0.1.0
 * @category constants
 */
export const installLine = "apt-get install -y flite"

/**
 * Options of flite: the program, the voice and the frame length.
 *
 * @since 0.1.0
 * @category models
 */
export interface FliteTtsOptions {
  /** The flite program; default `flite` on PATH. */
  readonly binary?: string
  /** Default voice (`flite -lv` lists them; `rms`, `slt`, `awb` are 16 kHz, `kal` 8 kHz). */
  readonly voice?: string
  /** Length of the frames the stream emits. Default 20 ms. */
  readonly frameMs?: number
}

const fail = (reason: VoiceError["reason"], description: string) =>
  new VoiceError({ source: "tts", reason, description })

const spawnError = (binary: string) => (e: NodeJS.ErrnoException) =>
  e.code === "ENOENT" || e.code === "EACCES"
    ? fail("Unavailable", `flite not found at ${binary} (${e.code}); install it: ${installLine}`)
    : fail("Transport", `flite could not start: ${e.message}`)

/** The voices the program knows (`flite -lv`: "Voices available: kal awb rms slt ..."). */
const listVoices = (binary: string) =>
  Process.run(binary, ["-lv"], spawnError(binary)).pipe(
    Effect.map((done) => new Set(done.stdout.replace(/^.*?:/, "").trim().split(/\s+/).filter((v) => v !== "")))
  )

/**
 * Synthesizes `text` with `voice` into `file`, then decodes it. The text goes in a file next to
 * it (`-f`), not on the command line, which caps one argument at 128 KB.
 */
const synthesizeFile = (binary: string, file: string, text: string, voice: string, speed: number | undefined) =>
  Effect.gen(function*() {
    const textFile = `${file}.txt`
    yield* Effect.tryPromise({
      try: () => Fs.writeFile(textFile, text),
      catch: (e) => fail("Transport", `cannot write flite's input ${textFile}: ${(e as Error).message}`)
    })
    const args = ["-voice", voice, "-f", textFile, "-o", file]
    if (speed !== undefined && speed > 0 && speed !== 1) args.push("--setf", `duration_stretch=${1 / speed}`)
    const done = yield* Process.run(binary, args, spawnError(binary))
    if (done.code !== 0) {
      const said = done.stderr.trim().split("\n").slice(-2).join(" ")
      return yield* fail(
        "Transport",
        `flite exited with ${done.code ?? done.signal} for voice ${voice}${said === "" ? "" : `: ${said}`}`
      )
    }
    const bytes = yield* Effect.tryPromise({
      try: () => Fs.readFile(file),
      catch: (e) => fail("Transport", `cannot read flite's output ${file}: ${(e as Error).message}`)
    })
    return yield* Wav.decode(bytes).pipe(
      Effect.mapError((e) => fail("Transport", `flite wrote a bad file: ${e.description}`))
    )
  }).pipe(
    // a temp file left behind is logged, not a failure of the speech it held
    Effect.ensuring(removeTemp(() => Promise.all([Fs.rm(file, { force: true }), Fs.rm(`${file}.txt`, { force: true })]), file))
  )

/** Removes flite's temp files; `force` skips missing ones, but a permission or busy file still rejects. */
const removeTemp = (remove: () => Promise<unknown>, path: string) =>
  Effect.tryPromise({
    try: remove,
    catch: (e) => fail("Transport", `cannot remove flite's temp file ${path}: ${(e as Error).message}; remove it by hand: rm -rf ${path}`)
  }).pipe(Effect.catch((error) => Effect.logWarning(error.message)))

/**
 * The Tts service over flite, in a Scope that owns its temp directory.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("FliteTts.make")(function*(options: FliteTtsOptions = {}) {
  const binary = options.binary ?? "flite"
  const defaultVoice = options.voice ?? "rms"
  const frameMs = options.frameMs ?? 20
  const dir = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => Fs.mkdtemp(Path.join(Os.tmpdir(), "baton-flite-")),
      catch: (e) => fail("Unavailable", `cannot make a temp directory for flite: ${(e as Error).message}`)
    }),
    (path) => removeTemp(() => Fs.rm(path, { recursive: true, force: true }), path)
  )
  // flite falls back to its default voice, silently, for a name it does not know: check first.
  const voices = yield* listVoices(binary)
  const checkVoice = (voice: string) =>
    voices.has(voice) || voice.includes("/")
      ? Effect.void
      : Effect.fail(fail("InvalidRequest", `flite has no voice ${voice}; it has ${[...voices].join(", ")}`))
  yield* checkVoice(defaultVoice)
  let counter = 0
  const nextFile = () => Path.join(dir, `${++counter}.wav`)
  // One word proves the program and the voice work, and gives the rate of the default voice.
  const probe = yield* synthesizeFile(binary, nextFile(), "ok", defaultVoice, undefined)

  const synthesize = (text: string, options?: TtsOptions): Stream.Stream<AudioFrame.AudioFrame, VoiceError> =>
    text.trim() === ""
      ? Stream.empty
      : Stream.unwrap(
        checkVoice(options?.voice ?? defaultVoice).pipe(
          Effect.andThen(Effect.suspend(() =>
            synthesizeFile(binary, nextFile(), text, options?.voice ?? defaultVoice, options?.speed)
          )),
          Effect.map((audio) => Stream.fromIterable(AudioFrame.split(audio, frameMs))),
          Effect.withSpan("FliteTts.synthesize")
        )
      )

  return { sampleRate: probe.sampleRate, synthesize } satisfies TtsService
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
 * {@link layer} from the environment: `FLITE_BINARY`, `FLITE_VOICE`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Tts, VoiceError | Config.ConfigError> = Layer.effect(
  Tts,
  Effect.gen(function*() {
    const binary = yield* Config.String("FLITE_BINARY").pipe(Config.withDefault("flite"))
    const voice = yield* Config.String("FLITE_VOICE").pipe(Config.withDefault("rms"))
    return yield* make({ binary, voice })
  })
)
