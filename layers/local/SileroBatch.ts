/**
 * Silero VAD's windows of every stream of one model session, run together: the windows pushed
 * during one turn of the event loop go into one inference over the model's batch dimension
 * (input `[batch, context + window]`, state `[2, batch, 128]`), each stream keeping its own state
 * and context. One run per window costs about three times the CPU per window of a batch of 16 or
 * more (onnxruntime's fixed cost per run), and the calls of a service push their frames in the
 * same turns.
 */
import { Effect } from "effect"
import { VoiceError } from "../../services/VoiceError.ts"

/** The model's recurrent state per stream and layer (2 layers). */
export const STATE = 128
/** Windows run in one inference at most (more in one turn are split). */
export const MAX_BATCH = 256

/** One inference of the model over `batch` rows of `width` samples at `rate`. */
export type Run = (
  input: Float32Array,
  state: Float32Array,
  batch: number,
  width: number,
  rate: number
) => Promise<{ readonly probabilities: Float32Array; readonly state: Float32Array }>

/** One stream's model memory: its state (layer 0, then layer 1) and its input (context, then the window). */
export interface Memory {
  readonly state: Float32Array
  readonly input: Float32Array
  readonly contextSize: number
}

export const makeMemory = (contextSize: number, windowSize: number): Memory => ({
  state: new Float32Array(2 * STATE),
  input: new Float32Array(contextSize + windowSize),
  contextSize
})

interface Job {
  readonly memory: Memory
  readonly rate: number
  readonly done: (result: number | VoiceError) => void
}

export interface Batcher {
  /**
   * The speech probability of the window now in `memory.input` (after its context); then the
   * state has moved on and the window's last samples are the context. A stream asks for one
   * window at a time (it waits for each), so a batch has at most one window of each stream.
   */
  readonly infer: (memory: Memory, rate: number) => Effect.Effect<number, VoiceError>
}

export const makeBatcher = (run: Run): Batcher => {
  let waiting: Array<Job> = []

  const runBatch = async (jobs: ReadonlyArray<Job>, rate: number) => {
    const batch = jobs.length
    const width = jobs[0]!.memory.input.length
    const input = new Float32Array(batch * width)
    const state = new Float32Array(2 * batch * STATE)
    for (let j = 0; j < batch; j++) {
      const memory = jobs[j]!.memory
      input.set(memory.input, j * width)
      state.set(memory.state.subarray(0, STATE), j * STATE)
      state.set(memory.state.subarray(STATE), (batch + j) * STATE)
    }
    const out = await run(input, state, batch, width, rate)
    for (let j = 0; j < batch; j++) {
      const { done, memory } = jobs[j]!
      memory.state.set(out.state.subarray(j * STATE, (j + 1) * STATE), 0)
      memory.state.set(out.state.subarray((batch + j) * STATE, (batch + j + 1) * STATE), STATE)
      memory.input.copyWithin(0, memory.input.length - memory.contextSize)
      done(out.probabilities[j]!)
    }
  }

  const flush = () => {
    const jobs = waiting
    waiting = []
    const byShape = new Map<string, Array<Job>>()
    for (const job of jobs) {
      const key = `${job.rate}/${job.memory.input.length}`
      const group = byShape.get(key)
      if (group === undefined) byShape.set(key, [job])
      else group.push(job)
    }
    for (const group of byShape.values()) {
      for (let at = 0; at < group.length; at += MAX_BATCH) {
        const part = group.slice(at, at + MAX_BATCH)
        runBatch(part, part[0]!.rate).catch((e: unknown) => {
          const error = new VoiceError({ source: "vad", reason: "Transport", description: `silero inference failed: ${(e as Error).message}` })
          for (const job of part) job.done(error)
        })
      }
    }
  }

  return {
    infer: (memory, rate) =>
      Effect.callback<number, VoiceError>((resume) => {
        if (waiting.length === 0) setImmediate(flush)
        waiting.push({ memory, rate, done: (result) => resume(typeof result === "number" ? Effect.succeed(result) : Effect.fail(result)) })
      })
  }
}
