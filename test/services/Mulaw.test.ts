import { assert, describe, it } from "@effect/vitest"
import * as Mulaw from "../../services/Mulaw.ts"

describe("Mulaw (G.711)", () => {
  it("matches the reference values at the code points that define the curve", () => {
    // silence encodes to 0xFF; the largest magnitudes to 0x80 / 0x00
    assert.strictEqual(Mulaw.encodeSample(0), 0xff)
    assert.strictEqual(Mulaw.encodeSample(32767), 0x80)
    assert.strictEqual(Mulaw.encodeSample(-32768), 0x00)
    assert.strictEqual(Mulaw.decodeSample(0xff), 0)
    assert.strictEqual(Mulaw.decodeSample(0x80), 32124)
    assert.strictEqual(Mulaw.decodeSample(0x00), -32124)
  })

  it("decoding any byte and encoding it again gives the same byte (except the two zeros)", () => {
    for (let b = 0; b < 256; b++) {
      const again = Mulaw.encodeSample(Mulaw.decodeSample(b))
      if (b === 0x7f) assert.strictEqual(again, 0xff) // -0 and +0 both decode to 0
      else assert.strictEqual(again, b, `byte ${b}`)
    }
  })

  it("keeps a tone within the companding error (under 3% of each sample's magnitude above 256)", () => {
    const samples = new Int16Array(160)
    for (let i = 0; i < samples.length; i++) samples[i] = Math.round(Math.sin((2 * Math.PI * 440 * i) / 8000) * 20000)
    const back = Mulaw.decode(Mulaw.encode(samples))
    for (let i = 0; i < samples.length; i++) {
      const s = samples[i]!
      assert.isAtMost(Math.abs(back[i]! - s), Math.max(16, Math.abs(s) * 0.03), `sample ${i}`)
    }
  })
})
