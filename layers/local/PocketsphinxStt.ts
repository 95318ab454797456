/**
 * Offline speech to text with pocketsphinx, in-process through koffi (see PocketsphinxFfi.ts).
 * A stream feeds its decoder 16 kHz mono audio in whole 20 ms chunks as it arrives, emits an
 * `Interim` when the partial hypothesis changes (checked every `interimEveryMs` of audio), and a
 * `Final` when the pipeline ends the utterance (without the second pass over the whole utterance
 * unless `secondPass`, so the final is quick). Decoders are pooled by the Layer (loading the
 * model takes ~0.3 s): a stream takes one and gives it back when its Scope closes.
 *
 * `PocketsphinxStt.layer()` or `PocketsphinxStt.layerConfig` (env `POCKETSPHINX_MODEL_DIR`)
 * provide `Stt`. Building the Layer loads the library and one decoder: a missing package fails
 * there with the `apt-get` line. There is no fallback engine.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Cause, Config, Effect, Layer, Queue, Semaphore, Stream } from "effect"
import * as Fs from "node:fs"
import type * as AudioFrame from "../../services/AudioFrame.ts"
import { Stt, type SttEvent, type SttService, type SttStream } from "../../services/Stt.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import * as Ffi from "./PocketsphinxFfi.ts"

/**
 * Options of pocketsphinx: where its library and model files are, and how often interim text is
 * read.
 *
 * @since 0.1.0
 * @category models
 */
export interface PocketsphinxSttOptions extends Ffi.LibraryPaths {
  /** Folder with `en-us/`, `en-us.lm.bin`, `cmudict-en-us.dict`. Default Debian's. */
  readonly modelDir?: string
  /** How much audio between checks of the partial hypothesis. Default 250 ms. */
  readonly interimEveryMs?: number
  /**
   * Run pocketsphinx's second, flat-lexicon pass over the whole utterance when it ends (its
   * `-fwdflat`). Default false: the final comes from the pass that decoded the audio as it came
   * (and its best-path search): the user does not wait for a pass over all of it when they stop
   * (bench/voice-pipeline.ts's "STT final" column). About as accurate on flite's sentences.
   */
  readonly secondPass?: boolean
}

const sampleRate = 16000
const chunk = 320 // 20 ms at 16 kHz

const invalidAudio = (frame: AudioFrame.AudioFrame) =>
  new VoiceError({
    source: "stt",
    reason: "InvalidAudio",
    description: `pocketsphinx takes 16000 Hz mono, got ${frame.sampleRate} Hz × ${frame.channels} (resample first)`
  })

const checkModel = (model: Ffi.ModelPaths) =>
  Effect.gen(function*() {
    // sphinxbase exits the process on a missing model file, so each one is checked first.
    for (const path of [`${model.hmm}/mdef`, model.lm, model.dict]) {
      if (!Fs.existsSync(path)) {
        return yield* new VoiceError({
          source: "stt",
          reason: "Unavailable",
          description: `pocketsphinx model file ${path} is missing; install it: ${Ffi.installLine}`
        })
      }
    }
  })

/** The stream over one decoder; `close` ends an open utterance and the events. */
const makeStream = (
  lib: Ffi.Library,
  ps: unknown,
  interimEveryMs: number
) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<SttEvent, VoiceError | Cause.Done>()
    const lock = yield* Semaphore.make(1)
    let inUtterance = false
    let pending = new Int16Array(0)
    let sinceInterim = 0
    let lastInterim = ""
    const interimSamples = (interimEveryMs / 1000) * sampleRate

    const hypothesis = Effect.sync(() => (lib.getHyp(ps, [0]) as string | null) ?? "")
    const check = (rc: number, name: string) =>
      rc < 0
        ? Effect.fail(new VoiceError({ source: "stt", reason: "Transport", description: `${name} returned ${rc}` }))
        : Effect.void

    const decode = (samples: Int16Array) =>
      Effect.gen(function*() {
        if (!inUtterance) {
          const rc = lib.startUtt(ps) as number
          inUtterance = rc >= 0
          lastInterim = ""
          sinceInterim = 0
          yield* check(rc, "ps_start_utt")
        }
        yield* check(
          yield* Ffi.callAsync<number>(lib.processRaw, "ps_process_raw", ps, samples, samples.length, 0, 0),
          "ps_process_raw"
        )
        sinceInterim += samples.length
        if (sinceInterim >= interimSamples) {
          sinceInterim = 0
          const text = yield* hypothesis
          if (text !== "" && text !== lastInterim) {
            lastInterim = text
            yield* Queue.offer(queue, { _tag: "Interim", text })
          }
        }
      })

    const push = (frame: AudioFrame.AudioFrame) =>
      frame.sampleRate !== sampleRate || frame.channels !== 1
        ? Effect.fail(invalidAudio(frame))
        : lock.withPermits(1)(Effect.suspend(() => {
          const all = new Int16Array(pending.length + frame.data.length)
          all.set(pending)
          all.set(frame.data, pending.length)
          const whole = all.length - (all.length % chunk)
          pending = all.slice(whole)
          return whole === 0 ? Effect.void : decode(all.subarray(0, whole))
        }))

    const finish = Effect.gen(function*() {
      if (pending.length > 0) {
        const rest = pending
        pending = new Int16Array(0)
        yield* decode(rest)
      }
      if (!inUtterance) return ""
      inUtterance = false
      yield* check(yield* Ffi.callAsync<number>(lib.endUtt, "ps_end_utt", ps), "ps_end_utt")
      const score = [0]
      return (yield* Ffi.callAsync<string | null>(lib.getHyp, "ps_get_hyp", ps, score)) ?? ""
    })

    const endUtterance = lock.withPermits(1)(
      finish.pipe(Effect.flatMap((text) => Queue.offer(queue, { _tag: "Final", text })))
    ).pipe(Effect.asVoid, Effect.withSpan("PocketsphinxStt.endUtterance"))

    const close = lock.withPermits(1)(
      Effect.gen(function*() {
        if (inUtterance) {
          inUtterance = false
          yield* Ffi.callAsync<number>(lib.endUtt, "ps_end_utt", ps).pipe(Effect.ignore)
        }
        yield* Queue.end(queue)
      })
    )

    const stream: SttStream = { push, endUtterance, events: Stream.fromQueue(queue) }
    return { stream, close }
  })

/**
 * The `Stt` service over pocketsphinx (loaded with koffi), with interim text while the user speaks
 * and a final per utterance; its decoders are freed when the Scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("PocketsphinxStt.make")(function*(options: PocketsphinxSttOptions = {}) {
  const model = Ffi.modelPaths(options.modelDir ?? Ffi.defaultModelDir)
  const interimEveryMs = options.interimEveryMs ?? 250
  const lib = yield* Ffi.load(options)
  yield* checkModel(model)
  const free: Array<unknown> = []
  const all: Array<unknown> = []
  yield* Effect.addFinalizer(() => Effect.sync(() => all.splice(0).forEach((ps) => lib.psFree(ps))))
  const take = Effect.suspend(() => {
    const ps = free.pop()
    return ps !== undefined
      ? Effect.succeed(ps)
      : Ffi.makeDecoder(lib, model, options.secondPass === true ? [] : ["-fwdflat", "no"]).pipe(Effect.tap((ps) => Effect.sync(() => all.push(ps))))
  })
  // One decoder now: a broken install fails the Layer, and the first stream starts warm.
  free.push(yield* take)

  const stream = Effect.fn("PocketsphinxStt.stream")(function*() {
    const ps = yield* Effect.acquireRelease(take, (ps) => Effect.sync(() => void free.push(ps)))
    const { close, stream } = yield* makeStream(lib, ps, interimEveryMs)
    yield* Effect.addFinalizer(() => close)
    return stream
  })

  return { sampleRate, stream } satisfies SttService
})

/**
 * `Stt` by pocketsphinx (offline, no key).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: PocketsphinxSttOptions = {}): Layer.Layer<Stt, VoiceError> =>
  Layer.effect(Stt, make(options))

/**
 * {@link layer} from the environment: `POCKETSPHINX_MODEL_DIR` (default Debian's en-us).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<Stt, VoiceError | Config.ConfigError> = Layer.effect(
  Stt,
  Effect.gen(function*() {
    const modelDir = yield* Config.String("POCKETSPHINX_MODEL_DIR").pipe(Config.withDefault(Ffi.defaultModelDir))
    return yield* make({ modelDir })
  })
)
