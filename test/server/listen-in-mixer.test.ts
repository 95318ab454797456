/**
 * The listen-in mix (server/ListenIn.ts), pure: both sides summed sample by sample, a side with
 * less adds silence, a cut drops only the agents' audio, the backlog is bounded (the oldest go),
 * and the paced stream sends a tick's worth at a time (TestClock), not a burst.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as AudioFrame from "../../services/AudioFrame.ts"
import type { ResamplerService } from "../../services/Resampler.ts"
import * as ListenIn from "../../server/ListenIn.ts"

const samples = (...values: Array<number>) => Int16Array.from(values)
const passThrough: ResamplerService = {
  make: (inputRate, outputRate) =>
    Effect.succeed({ inputRate, outputRate, push: (frame) => [frame], flush: () => [] })
}

describe("listen-in mix", () => {
  it("sums both sides, the shorter padded with silence, clipped to PCM16", () => {
    const mix = ListenIn.mixer(8000)
    ListenIn.push(mix, "caller", samples(100, 200, 30000))
    ListenIn.push(mix, "agent", samples(1, 2, 30000, 4))
    assert.deepStrictEqual([...ListenIn.take(mix, 10)!], [101, 202, 32767, 4])
    assert.isUndefined(ListenIn.take(mix, 10))
  })

  it("takes at most n samples of each side; the rest waits", () => {
    const mix = ListenIn.mixer(8000)
    ListenIn.push(mix, "agent", samples(1, 2, 3, 4, 5))
    assert.deepStrictEqual([...ListenIn.take(mix, 2)!], [1, 2])
    ListenIn.push(mix, "caller", samples(10))
    assert.deepStrictEqual([...ListenIn.take(mix, 2)!], [13, 4])
    assert.deepStrictEqual([...ListenIn.take(mix, 2)!], [5])
  })

  it("a cut drops the agents' audio waiting, not the caller's", () => {
    const mix = ListenIn.mixer(8000)
    ListenIn.push(mix, "agent", samples(7, 7, 7))
    ListenIn.push(mix, "caller", samples(1, 1))
    ListenIn.drop(mix, "agent")
    assert.deepStrictEqual([...ListenIn.take(mix, 10)!], [1, 1])
  })

  it("a side keeps at most its capacity: the oldest samples go first", () => {
    const mix = ListenIn.mixer(4, 1)
    ListenIn.push(mix, "caller", samples(1, 2, 3))
    ListenIn.push(mix, "caller", samples(4, 5, 6))
    assert.deepStrictEqual([...ListenIn.take(mix, 10)!], [3, 4, 5, 6])
  })

  it.effect("the stream is paced by the clock: agent audio written ahead comes a tick's worth at a time; nobody listening, nothing is kept", () =>
    Effect.gen(function*() {
      const tap = ListenIn.make()
      ListenIn.hear(tap, "agent", AudioFrame.make(new Int16Array(2400).fill(5), ListenIn.SAMPLE_RATE)) // before anyone listens
      const sent: Array<number> = []
      const fiber = yield* Effect.forkChild(ListenIn.stream(tap, passThrough, (pcm) => Effect.sync(() => void sent.push(pcm.byteLength / 2))), { startImmediately: true })
      yield* Effect.yieldNow
      assert.strictEqual(tap.listeners.size, 1)
      // one second of the agent's speech, written at once
      ListenIn.hear(tap, "agent", AudioFrame.make(new Int16Array(ListenIn.SAMPLE_RATE).fill(1000), ListenIn.SAMPLE_RATE))
      yield* TestClock.adjust("20 millis")
      assert.deepStrictEqual(sent, [480])
      yield* TestClock.adjust("100 millis")
      assert.strictEqual(sent.reduce((a, b) => a + b, 0), 480 * 6)
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(tap.listeners.size, 0)
    }).pipe(Effect.scoped))
})
