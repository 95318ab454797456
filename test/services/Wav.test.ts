import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { VoiceError } from "../../services/VoiceError.ts"
import * as Wav from "../../services/Wav.ts"

const tone = AudioFrame.make(Int16Array.from({ length: 1600 }, (_, i) => Math.round(8000 * Math.sin(i / 5))), 16000)

const descriptionOf = (bytes: Uint8Array) => {
  const r = Wav.decodeSync(bytes)
  assert.isString(r)
  return r as string
}

/** A RIFF file of the given chunks. */
const riff = (...chunks: ReadonlyArray<[string, Uint8Array]>) => {
  const size = chunks.reduce((n, [, b]) => n + 8 + b.length + (b.length % 2), 4)
  const out = new Uint8Array(8 + size)
  const view = new DataView(out.buffer)
  const text = (at: number, s: string) => [...s].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)))
  text(0, "RIFF")
  view.setUint32(4, size, true)
  text(8, "WAVE")
  let at = 12
  for (const [id, body] of chunks) {
    text(at, id)
    view.setUint32(at + 4, body.length, true)
    out.set(body, at + 8)
    at += 8 + body.length + (body.length % 2)
  }
  return out
}

const fmt = (format: number, channels: number, rate: number, bits: number) => {
  const b = new Uint8Array(16)
  const v = new DataView(b.buffer)
  v.setUint16(0, format, true)
  v.setUint16(2, channels, true)
  v.setUint32(4, rate, true)
  v.setUint32(8, rate * channels * (bits / 8), true)
  v.setUint16(12, channels * (bits / 8), true)
  v.setUint16(14, bits, true)
  return b
}

describe("Wav", () => {
  it.effect("encodes and decodes a frame to the same samples, rate and channels", () =>
    Effect.gen(function*() {
      const stereo = AudioFrame.make(Int16Array.from({ length: 800 }, (_, i) => i * 7 - 2000), 24000, 2)
      for (const frame of [tone, stereo]) {
        const back = yield* Wav.decode(Wav.encode(frame))
        assert.deepStrictEqual([back.sampleRate, back.channels], [frame.sampleRate, frame.channels])
        assert.deepStrictEqual(Array.from(back.data), Array.from(frame.data))
      }
    }))

  it("skips chunks before data (LIST), reads a streamed size to the end, drops a torn last sample", () => {
    const pcm = AudioFrame.toPcm16(tone)
    const withList = Wav.decodeSync(riff(["fmt ", fmt(1, 1, 16000, 16)], ["LIST", new Uint8Array(5)], ["data", pcm]))
    assert.deepStrictEqual(Array.from((withList as AudioFrame.AudioFrame).data), Array.from(tone.data))
    const streamed = riff(["fmt ", fmt(1, 1, 16000, 16)], ["data", pcm])
    new DataView(streamed.buffer).setUint32(40, 0xffffffff, true)
    const torn = new Uint8Array(streamed.length + 1)
    torn.set(streamed)
    assert.strictEqual((Wav.decodeSync(torn) as AudioFrame.AudioFrame).data.length, tone.data.length)
  })

  it("says what is wrong with a file it cannot use", () => {
    assert.include(descriptionOf(new Uint8Array(4)), "shorter than a RIFF header")
    assert.include(descriptionOf(new TextEncoder().encode("ID3\u0004 this is an mp3 file")), "RIFF....WAVE")
    assert.include(descriptionOf(riff(["fmt ", fmt(3, 1, 16000, 32)], ["data", new Uint8Array(8)])), "format 3")
    assert.include(descriptionOf(riff(["fmt ", fmt(1, 1, 16000, 8)], ["data", new Uint8Array(8)])), "8-bit")
    assert.include(descriptionOf(riff(["data", new Uint8Array(8)])), "before any fmt")
    assert.include(descriptionOf(riff(["fmt ", fmt(1, 1, 16000, 16)])), "no data chunk")
  })

  it.effect("reads and writes files; a bad file fails with its path and reason", () =>
    Effect.gen(function*() {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "wav-"))
      const file = Path.join(dir, "tone.wav")
      yield* Wav.writeFile(file, tone)
      assert.deepStrictEqual(Array.from((yield* Wav.readFile(file)).data), Array.from(tone.data))
      Fs.writeFileSync(file, "not audio at all")
      const exit = yield* Wav.readFile(file).pipe(Effect.exit)
      const missing = yield* Wav.readFile(Path.join(dir, "nope.wav")).pipe(Effect.exit)
      Fs.rmSync(dir, { recursive: true })
      for (const e of [exit, missing]) {
        assert.isTrue(Exit.isFailure(e))
        const error = Exit.isFailure(e) ? e.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
        assert.instanceOf(error, VoiceError)
        assert.strictEqual((error as VoiceError).reason, "InvalidAudio")
      }
      assert.include(String(Exit.isFailure(exit) && exit.cause.reasons[0]), "tone.wav")
    }))
})
