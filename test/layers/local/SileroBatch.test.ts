import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as FliteTts from "../../../layers/local/FliteTts.ts"
import { makeBatcher, makeMemory, type Run, STATE } from "../../../layers/local/SileroBatch.ts"
import * as SileroVad from "../../../layers/local/SileroVad.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { Vad, type VadEvent } from "../../../services/Vad.ts"
import { VoiceError } from "../../../services/VoiceError.ts"
import { pad, speak } from "./helpers.ts"

/** A stand-in model: each row's probability is its first input sample plus its layer-0 state;
 * the next state is the state plus the row's last sample (layer 0) and plus 1 (layer 1). */
const fakeModel = () => {
  const batches: Array<number> = []
  const run: Run = (input, state, batch, width) => {
    batches.push(batch)
    const probabilities = new Float32Array(batch)
    const next = new Float32Array(state)
    for (let j = 0; j < batch; j++) {
      probabilities[j] = input[j * width]! + state[j * STATE]!
      for (let k = 0; k < STATE; k++) {
        next[j * STATE + k] = state[j * STATE + k]! + input[j * width + width - 1]!
        next[(batch + j) * STATE + k] = state[(batch + j) * STATE + k]! + 1
      }
    }
    return Promise.resolve({ probabilities, state: next })
  }
  return { run, batches }
}

/** A memory whose window is `value` everywhere but its last sample, `last`. */
const windowOf = (memory: ReturnType<typeof makeMemory>, value: number, last: number) => {
  memory.input.fill(value, memory.contextSize)
  memory.input[memory.input.length - 1] = last
}

describe("SileroBatch", () => {
  it.effect("the windows of one event-loop turn run as one batch, each stream with its own state and context", () =>
    Effect.gen(function*() {
      const model = fakeModel()
      const batcher = makeBatcher(model.run)
      const memories = [0, 1, 2].map(() => makeMemory(4, 8))
      memories.forEach((m, i) => windowOf(m, 0.1 * (i + 1), i + 1))
      const first = yield* Effect.all(memories.map((m) => batcher.infer(m, 16000)), { concurrency: "unbounded" })
      assert.deepStrictEqual(model.batches, [3])
      // no context yet: each row starts with zeros
      assert.deepStrictEqual(first, [0, 0, 0])
      memories.forEach((m, i) => {
        assert.strictEqual(m.state[0], i + 1, "layer 0 moved by the stream's own last sample")
        assert.strictEqual(m.state[STATE], 1, "layer 1 is the stream's own")
        // the window's last 4 samples are the next context
        assert.deepStrictEqual(Array.from(m.input.subarray(0, 4)), [0.1 * (i + 1), 0.1 * (i + 1), 0.1 * (i + 1), i + 1].map(Math.fround))
      })
      // the second turn: the context (0.1 * (i + 1)) plus the state (i + 1)
      const second = yield* Effect.all(memories.map((m) => batcher.infer(m, 16000)), { concurrency: "unbounded" })
      assert.deepStrictEqual(model.batches, [3, 3])
      second.forEach((p, i) => assert.approximately(p, 0.1 * (i + 1) + (i + 1), 1e-6))
      // one stream alone is a batch of one
      yield* batcher.infer(memories[0]!, 16000)
      assert.deepStrictEqual(model.batches, [3, 3, 1])
    }))

  it.effect("a failed inference fails every window of its batch with a VoiceError, and the state stays", () =>
    Effect.gen(function*() {
      const batcher = makeBatcher(() => Promise.reject(new Error("bad input")))
      const memories = [makeMemory(4, 8), makeMemory(4, 8)]
      const exits = yield* Effect.all(memories.map((m) => Effect.exit(batcher.infer(m, 16000))), { concurrency: "unbounded" })
      for (const exit of exits) {
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
        assert.instanceOf(error, VoiceError)
        assert.include((error as VoiceError).message, "bad input")
      }
      for (const m of memories) assert.isTrue(m.state.every((x) => x === 0))
    }))

  it.effect("Silero streams pushed together hear what each hears alone", () =>
    Effect.gen(function*() {
      const callers = [
        pad(yield* speak("I would like to book a table for two."), 300, 900),
        pad(yield* speak("Can you hear me?"), 1100, 1500),
        pad(yield* speak("No, thank you."), 700, 1600)
      ]
      const vad = yield* Vad
      const frames = callers.map((audio) => AudioFrame.split(audio, 20))
      const alone: Array<ReadonlyArray<VadEvent>> = []
      for (const own of frames) {
        const stream = yield* vad.stream()
        const events: Array<VadEvent> = []
        for (const frame of own) events.push(...(yield* stream.push(frame)))
        alone.push(events)
      }
      const streams = yield* Effect.all(frames.map(() => vad.stream()))
      const together: Array<Array<VadEvent>> = frames.map(() => [])
      const longest = Math.max(...frames.map((f) => f.length))
      for (let k = 0; k < longest; k++) {
        yield* Effect.all(
          frames.map((own, i) => k < own.length ? Effect.map(streams[i]!.push(own[k]!), (e) => void together[i]!.push(...e)) : Effect.void),
          { concurrency: "unbounded" }
        )
      }
      for (const events of alone) assert.deepStrictEqual(events.map((e) => e._tag), ["SpeechStarted", "SpeechEnded"])
      assert.deepStrictEqual(together, alone)
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(SileroVad.layer(), FliteTts.layer()))), 30_000)
})
