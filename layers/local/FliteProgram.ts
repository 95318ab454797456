/**
 * flite as a program: Debian's `flite` spawned per synthesis. flite cannot write to `/dev/stdout`
 * when Node spawns it, so each synthesis writes a WAV file into a temp directory (removed with
 * the Scope), is read back through `services/Wav.ts`. Interrupting a synthesis kills the process.
 * FliteTts's `engine: "program"`, and its fallback when libflite cannot be loaded.
 */
import { Effect, type Scope } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import type * as AudioFrame from "../../services/AudioFrame.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import * as Wav from "../../services/Wav.ts"
import * as Process from "./Process.ts"

/** How to install flite on Debian or Ubuntu (shown when it is missing). */
export const installLine = "apt-get install -y flite"

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

/** Removes flite's temp files; `force` skips missing ones, but a permission or busy file still rejects. */
const removeTemp = (remove: () => Promise<unknown>, path: string) =>
  Effect.tryPromise({
    try: remove,
    catch: (e) => fail("Transport", `cannot remove flite's temp file ${path}: ${(e as Error).message}; remove it by hand: rm -rf ${path}`)
  }).pipe(Effect.catch((error) => Effect.logWarning(error.message)))

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

/**
 * The program `binary` as an engine, in a Scope that owns its temp directory. Fails when the
 * program is missing (with the apt-get line).
 */
export const make = (binary: string): Effect.Effect<
  {
    readonly checkVoice: (voice: string) => Effect.Effect<void, VoiceError>
    readonly synthesize: (text: string, voice: string, speed: number | undefined) => Effect.Effect<AudioFrame.AudioFrame, VoiceError>
  },
  VoiceError,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => Fs.mkdtemp(Path.join(Os.tmpdir(), "baton-flite-")),
        catch: (e) => fail("Unavailable", `cannot make a temp directory for flite: ${(e as Error).message}`)
      }),
      (path) => removeTemp(() => Fs.rm(path, { recursive: true, force: true }), path)
    )
    // flite falls back to its default voice, silently, for a name it does not know: check first.
    const voices = yield* listVoices(binary)
    let counter = 0
    return {
      checkVoice: (voice: string) =>
        voices.has(voice) || voice.includes("/")
          ? Effect.void
          : Effect.fail(fail("InvalidRequest", `flite has no voice ${voice}; it has ${[...voices].join(", ")}`)),
      synthesize: (text: string, voice: string, speed: number | undefined) =>
        Effect.suspend(() => synthesizeFile(binary, Path.join(dir, `${++counter}.wav`), text, voice, speed))
    }
  })
