/**
 * The C functions of Debian's pocketsphinx (0.8+5prealpha: `libpocketsphinx.so.3` over
 * `libsphinxbase.so.3`) bound through `koffi`, and one decoder made from them. Kept apart from
 * the Stt layer so the layer reads as streaming logic, and so the one place that knows C
 * signatures is small. The slow calls (`ps_end_utt`, the final `ps_get_hyp`, `ps_init`) run on
 * koffi's worker threads so the event loop keeps serving other sessions while a decoder works.
 */
import { Effect } from "effect"
import type { LibraryHandle } from "koffi"
import { VoiceError } from "../../services/VoiceError.ts"

export const installLine = "apt-get install -y pocketsphinx pocketsphinx-en-us"

export interface LibraryPaths {
  /** Default `libpocketsphinx.so.3` (found by the dynamic linker). */
  readonly pocketsphinx?: string
  /** Default `libsphinxbase.so.3`. */
  readonly sphinxbase?: string
}

export interface ModelPaths {
  readonly hmm: string
  readonly lm: string
  readonly dict: string
}

export const defaultModelDir = "/usr/share/pocketsphinx/model/en-us"

export const modelPaths = (dir: string): ModelPaths => ({
  hmm: `${dir}/en-us`,
  lm: `${dir}/en-us.lm.bin`,
  dict: `${dir}/cmudict-en-us.dict`
})

/** The one missing piece and how to add it (the Debian packages unless said otherwise). */
const unavailable = (description: string, install: string = installLine) =>
  new VoiceError({ source: "stt", reason: "Unavailable", description: `${description}; install it: ${install}` })

type Fn = ReturnType<LibraryHandle["func"]>

/** The bound functions; `ps` pointers are opaque. */
export interface Library {
  readonly psArgs: Fn
  readonly cmdLnParse: Fn
  readonly psInit: Fn
  readonly psFree: Fn
  readonly startUtt: Fn
  readonly processRaw: Fn
  readonly endUtt: Fn
  readonly getHyp: Fn
}

// Loaded here, not at import: `koffi` is an optional peer of the package.
export const load = (paths: LibraryPaths = {}): Effect.Effect<Library, VoiceError> =>
  Effect.tryPromise({
    try: (): Promise<typeof import("koffi")> => import("koffi"),
    catch: () => unavailable("pocketsphinx in-process needs the koffi package", "npm install koffi")
  }).pipe(Effect.flatMap((module) => loadWith(module.default, paths)))

const loadWith = (koffi: typeof import("koffi").default, paths: LibraryPaths): Effect.Effect<Library, VoiceError> =>
  Effect.try({
    try: () => {
      const base = koffi.load(paths.sphinxbase ?? "libsphinxbase.so.3")
      const lib = koffi.load(paths.pocketsphinx ?? "libpocketsphinx.so.3")
      return {
        psArgs: lib.func("void *ps_args()"),
        cmdLnParse: base.func("void *cmd_ln_parse_r(void *inout, void *defn, int argc, const char **argv, int strict)"),
        psInit: lib.func("void *ps_init(void *config)"),
        psFree: lib.func("int ps_free(void *ps)"),
        startUtt: lib.func("int ps_start_utt(void *ps)"),
        processRaw: lib.func("int ps_process_raw(void *ps, const int16_t *data, size_t n, int no_search, int full_utt)"),
        endUtt: lib.func("int ps_end_utt(void *ps)"),
        getHyp: lib.func("const char *ps_get_hyp(void *ps, _Out_ int32_t *score)")
      }
    },
    catch: (e) => unavailable(`cannot load pocketsphinx (${(e as Error).message.split("\n")[0]})`)
  })

/**
 * Runs `fn(args)` on a koffi worker thread. Uninterruptible: an interrupted caller waits for the
 * native call to return (milliseconds), so no other call can touch the decoder while it runs.
 */
export const callAsync = <A>(fn: Fn, name: string, ...args: ReadonlyArray<unknown>): Effect.Effect<A, VoiceError> =>
  Effect.uninterruptible(Effect.callback<A, VoiceError>((resume) => {
    fn.async(...args, (error: unknown, result: A) => {
      resume(
        error
          ? Effect.fail(new VoiceError({ source: "stt", reason: "Transport", description: `${name} failed: ${String(error)}` }))
          : Effect.succeed(result)
      )
    })
  }))

/** A decoder for the model, built off the event loop (loading the model takes ~0.3 s). */
export const makeDecoder = (lib: Library, model: ModelPaths, extraArgs: ReadonlyArray<string> = []): Effect.Effect<unknown, VoiceError> =>
  Effect.gen(function*() {
    const argv = ["-hmm", model.hmm, "-lm", model.lm, "-dict", model.dict, "-logfn", "/dev/null", ...extraArgs]
    const config = lib.cmdLnParse(null, lib.psArgs(), argv.length, argv, 1)
    if (config === null) return yield* unavailable(`pocketsphinx refused its arguments ${argv.slice(0, 6).join(" ")}`)
    const ps = yield* callAsync<unknown>(lib.psInit, "ps_init", config)
    if (ps === null) {
      return yield* unavailable(`pocketsphinx could not load the model in ${model.hmm}, ${model.lm}, ${model.dict}`)
    }
    return ps
  })
