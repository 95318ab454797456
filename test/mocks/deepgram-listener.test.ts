/**
 * The Deepgram mock's listener on the audio clock alone (no socket): how a stream whose client
 * never sends `Finalize` (agents-js's plugin) moves from one scripted utterance to the next.
 */
import { assert, describe, it } from "@effect/vitest"
import { Listener, type ServerMessage } from "./deepgram/listen.ts"

const RATE = 16000
/** 20 ms frames of PCM16: a loud tone for `ms`, or silence. */
const frames = (ms: number, loud: boolean): Array<Uint8Array> =>
  Array.from({ length: ms / 20 }, () => {
    const samples = Int16Array.from({ length: (RATE / 1000) * 20 }, (_, i) => (loud ? Math.round(8000 * Math.sin((2 * Math.PI * 220 * i) / RATE)) : 0))
    return new Uint8Array(samples.buffer)
  })

const finals = (plan: ReadonlyArray<readonly [number, boolean]>) => {
  const listener = new Listener(new URLSearchParams({ interim_results: "true", endpointing: "25", sample_rate: String(RATE) }), {
    scripts: ["first words here", "second words here"],
    msPerWord: 100,
    segmentMs: 5000,
    requestId: "test"
  })
  const sent: Array<ServerMessage> = []
  for (const [ms, loud] of plan) for (const frame of frames(ms, loud)) sent.push(...listener.audio(frame))
  return sent.flatMap((m) => (m.type === "Results" && m.speech_final ? [m.channel.alternatives[0]!.transcript] : []))
}

describe("Deepgram mock, a stream without Finalize", () => {
  it("speech after a second of silence, once the script was said and finalized, is the next script", () => {
    assert.deepStrictEqual(finals([[400, true], [1200, false], [400, true], [400, false]]), ["first words here", "second words here"])
  })

  it("a shorter pause does not start the next script: its speech adds no words", () => {
    assert.deepStrictEqual(finals([[400, true], [600, false], [400, true], [400, false]]), ["first words here", ""])
  })
})
