/**
 * The call's audio, both sides, to WAV files: what the agents sent to the `AudioOutput`
 * (`<prefix>.agent.wav`) and what the user's `AudioInput` carried (`<prefix>.user.wav`). Each
 * side is one mono track at the rate of its first frame; a frame is placed at the time it
 * arrived (silence fills the gaps, so the two files line up and a reply's latency can be heard),
 * or right after the previous one when audio comes faster than real time (a realtime model
 * streams its answer in bursts). Samples go to disk as they come; the header gets its sizes when
 * the Scope closes. On with `BATON_RECORD_DIR`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Clock, Config, Context, Effect, FileSystem, Layer, Option, Scope, Semaphore, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { AudioInput, type AudioInputService } from "../../services/AudioInput.ts"
import { AudioOutput, type AudioOutputService } from "../../services/AudioOutput.ts"
import * as Wav from "../../services/Wav.ts"

/**
 * Mono samples of `frame` at `rate` (channels averaged, linear interpolation between rates).
 *
 * @since 0.1.0
 * @category utils
 */
export const toMono = (frame: AudioFrame.AudioFrame, rate: number): Int16Array => {
  const n = AudioFrame.samplesPerChannel(frame)
  const mono = new Int16Array(n)
  for (let i = 0; i < n; i++) {
    let sum = 0
    for (let c = 0; c < frame.channels; c++) sum += frame.data[i * frame.channels + c]!
    mono[i] = Math.round(sum / frame.channels)
  }
  if (frame.sampleRate === rate) return mono
  const out = new Int16Array(Math.round((n * rate) / frame.sampleRate))
  const ratio = frame.sampleRate / rate
  for (let i = 0; i < out.length; i++) {
    const at = i * ratio
    const j = Math.floor(at)
    const a = mono[Math.min(j, n - 1)] ?? 0
    const b = mono[Math.min(j + 1, n - 1)] ?? a
    out[i] = Math.round(a + (b - a) * (at - j))
  }
  return out
}

interface Track {
  readonly append: (frame: AudioFrame.AudioFrame) => Effect.Effect<void>
}

const bytesOf = (samples: Int16Array) => new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength)

/** One side's WAV file, opened at its first frame, finished when the Scope closes. */
const makeTrack = (path: string, startedAt: number): Effect.Effect<Track, never, Scope.Scope | FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const scope = yield* Effect.scope
    const lock = yield* Semaphore.make(1)
    let file: FileSystem.File | undefined
    let rate = 0
    let written = 0 // samples
    let broken = false
    const fail = (what: string) => (error: { readonly message: string }) =>
      Effect.suspend(() => {
        broken = true
        return Effect.logWarning(`audio recorder: ${what} ${path} failed (${error.message}); this side is not recorded further`)
      })
    const open = (sampleRate: number) =>
      fs.open(path, { flag: "w" }).pipe(
        Effect.tap((f) => f.writeAll(Wav.header(sampleRate, 1, 0))),
        Effect.tap((f) =>
          Effect.addFinalizer(() =>
            f.seek(0n, "start").pipe(
              Effect.andThen(f.writeAll(Wav.header(rate, 1, written * 2))),
              Effect.andThen(f.sync),
              Effect.catch(fail("finishing"))
            )
          )
        ),
        Scope.provide(scope)
      )
    const append = (frame: AudioFrame.AudioFrame) =>
      lock.withPermit(Effect.gen(function*() {
        if (broken || frame.data.length === 0) return
        if (!file) {
          rate = frame.sampleRate
          const opened = yield* open(rate).pipe(Effect.catch((e) => Effect.as(fail("opening")(e), undefined)))
          if (!opened) return
          file = opened
        }
        const now = yield* Clock.currentTimeMillis
        const due = Math.round(((now - startedAt) / 1000) * rate)
        const gap = Math.max(0, due - written)
        const samples = toMono(frame, rate)
        const chunk = new Int16Array(gap + samples.length)
        chunk.set(samples, gap)
        yield* file.writeAll(bytesOf(chunk)).pipe(Effect.catch(fail("writing")))
        written += chunk.length
      }))
    return { append }
  })

/**
 * Records a call's audio, both sides: wraps an output or an input so what passes through is
 * recorded, or takes the user's frames directly.
 *
 * @since 0.1.0
 * @category models
 */
export interface AudioRecorder {
  /** `inner` with everything written to it also recorded as the agent's side. */
  readonly output: (inner: AudioOutputService) => AudioOutputService
  /** `inner` with every frame read from it also recorded as the user's side. */
  readonly input: (inner: AudioInputService) => AudioInputService
  /** Records one frame of the user's side (for transports that hand audio on themselves). */
  readonly user: (frame: AudioFrame.AudioFrame) => Effect.Effect<void>
}

/**
 * A recorder writing `<prefix>.agent.wav` and `<prefix>.user.wav` until the Scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("AudioRecorder.make")(function*(prefix: string) {
  const startedAt = yield* Clock.currentTimeMillis
  const agent = yield* makeTrack(`${prefix}.agent.wav`, startedAt)
  const user = yield* makeTrack(`${prefix}.user.wav`, startedAt)
  const recorder: AudioRecorder = {
    output: (inner) => ({
      write: (pcm, sampleRate, info) =>
        Effect.suspend(() =>
          pcm.byteLength % 2 === 0 ? agent.append(AudioFrame.fromPcm16(pcm, sampleRate)) : Effect.void
        ).pipe(Effect.andThen(inner.write(pcm, sampleRate, info))),
      clear: (info) => inner.clear(info)
    }),
    input: (inner) => ({ frames: inner.frames.pipe(Stream.tap((frame) => user.append(frame))) }),
    user: (frame) => user.append(frame)
  }
  return recorder
})

/**
 * Wraps the context's `AudioOutput` (and `AudioInput`, when there is one) with a recorder
 * writing `<prefix>.agent.wav` / `<prefix>.user.wav`; the files are finished when the layer's
 * Scope closes.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (prefix: string): Layer.Layer<never, never, FileSystem.FileSystem> =>
  Layer.effectContext(Effect.gen(function*() {
    const recorder = yield* make(prefix)
    const output = Context.make(AudioOutput, recorder.output(yield* AudioOutput))
    const input = yield* Effect.serviceOption(AudioInput)
    return Option.isSome(input) ? Context.add(output, AudioInput, recorder.input(input.value)) : output
  }))

let calls = 0
/**
 * `layer(<BATON_RECORD_DIR>/call-<time>-<n>)` when the variable is set; nothing otherwise.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<never, Config.ConfigError, FileSystem.FileSystem> = Layer.unwrap(
  Effect.gen(function*() {
    const dir = yield* Config.option(Config.String("BATON_RECORD_DIR"))
    if (Option.isNone(dir) || dir.value.trim() === "") return Layer.empty
    const fs = yield* FileSystem.FileSystem
    yield* fs.makeDirectory(dir.value.trim(), { recursive: true }).pipe(Effect.ignore)
    const stamp = new Date(yield* Clock.currentTimeMillis).toISOString().replace(/[:.]/g, "-")
    return layer(`${dir.value.trim().replace(/\/+$/, "")}/call-${stamp}-${++calls}`)
  })
)
