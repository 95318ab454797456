import { assert, describe, it } from "@effect/vitest"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { VoiceError } from "../../../services/VoiceError.ts"
import { makeSmoother, makeWindower } from "../../../layers/local/VadSmoothing.ts"

/** Feeds a pattern of 10 ms decisions ("s" speech, "." silence); the events with their index. */
const run = (pattern: string, minSpeechMs: number, minSilenceMs: number) => {
  const smoother = makeSmoother({ minSpeechMs, minSilenceMs })
  return [...pattern].flatMap((c) => {
    const event = smoother.decide(c === "s", 10)
    return event === undefined ? [] : [event]
  })
}

describe("VadSmoothing", () => {
  it("starts after minSpeechMs of speech in a row, dated from its first window", () => {
    assert.deepStrictEqual(run("..ss.sss.....", 30, 50), [
      { _tag: "SpeechStarted", atMs: 50 },
      { _tag: "SpeechEnded", atMs: 80, speechMs: 30 }
    ])
  })

  it("a pause shorter than minSilenceMs does not end the speech", () => {
    assert.deepStrictEqual(run("sss..sss....", 30, 30).map((e) => e._tag), ["SpeechStarted", "SpeechEnded"])
    assert.deepStrictEqual(run("sss..sss....", 30, 20).map((e) => e._tag), [
      "SpeechStarted",
      "SpeechEnded",
      "SpeechStarted",
      "SpeechEnded"
    ])
  })

  it("windows gather across pushes of any length, and the rest waits", () => {
    const windower = makeWindower([16000], () => 320, "test")
    const sizes = [100, 500, 50, 310].map((n) => windower.add(AudioFrame.silence((n / 16000) * 1000, 16000)))
    assert.deepStrictEqual(sizes.map((w) => (w as ReadonlyArray<Int16Array>).length), [0, 1, 1, 1]) // 100 | 600 -> 1 + 280 | 330 -> 1 + 10 | 320 -> 1
    assert.instanceOf(windower.add(AudioFrame.silence(10, 16000, 2)), VoiceError)
  })

  it("a window spanning pushes has their samples in order, whatever the push sizes", () => {
    const samples = Int16Array.from({ length: 2000 }, (_, i) => i)
    for (const sizes of [[320, 320, 320, 320, 320, 400], [100, 700, 1, 319, 880], [512, 512, 976], [2000]]) {
      const windower = makeWindower([16000], () => 512, "test")
      const got: Array<number> = []
      let at = 0
      for (const n of sizes) {
        const windows = windower.add(AudioFrame.make(samples.slice(at, at + n), 16000)) as ReadonlyArray<Int16Array>
        for (const w of windows) {
          assert.strictEqual(w.length, 512)
          got.push(...w)
        }
        at += n
      }
      // three whole windows of 2000 samples; the 464 left wait for more
      assert.deepStrictEqual(got, Array.from({ length: 1536 }, (_, i) => i), JSON.stringify(sizes))
    }
  })
})
