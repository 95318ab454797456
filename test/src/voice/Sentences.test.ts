import { assert, describe, it } from "@effect/vitest"
import { heard } from "../../../src/voice/Heard.ts"
import * as Sentences from "../../../src/voice/Sentences.ts"

const chunk = (deltas: ReadonlyArray<string>, minChars = 1) => {
  const chunker = Sentences.make(minChars)
  const out = deltas.flatMap((d) => chunker.push(d))
  const rest = chunker.flush()
  return rest === "" ? out : [...out, rest]
}

describe("voice: sentences for TTS", () => {
  it("cuts at sentence ends as the text streams, not before the next delta decides", () => {
    const chunker = Sentences.make(1)
    assert.deepStrictEqual(chunker.push("Hello there"), [])
    assert.deepStrictEqual(chunker.push("."), [])
    assert.deepStrictEqual(chunker.push(" How are"), ["Hello there."])
    assert.deepStrictEqual(chunker.push(" you? I am"), ["How are you?"])
    assert.strictEqual(chunker.flush(), "I am")
  })

  it("keeps abbreviations and decimals inside a sentence; a line break ends one", () => {
    assert.deepStrictEqual(chunk(["Dr. Smith paid 3.5 dollars. Then", " he left!\nBye"]), [
      "Dr. Smith paid 3.5 dollars.",
      "Then he left!",
      "Bye"
    ])
  })

  it("joins fragments shorter than minChars to the next sentence", () => {
    assert.deepStrictEqual(chunk(["Ok. Sure. The weather in Paris is sunny today. Bye."], 20), [
      "Ok. Sure. The weather in Paris is sunny today.",
      "Bye."
    ])
  })
})

describe("voice: what was heard of a cut reply", () => {
  const sentences = [
    { text: "The weather in Paris is sunny.", startMs: 0, durationMs: 2000 },
    { text: "Tomorrow it will rain all day long.", startMs: 2000, durationMs: 2800 }
  ]
  it("whole sentences played, then the share of the words of the one playing", () => {
    assert.strictEqual(heard(sentences, 0), "")
    assert.strictEqual(heard(sentences, 1000), "The weather in")
    assert.strictEqual(heard(sentences, 2000), "The weather in Paris is sunny.")
    assert.strictEqual(heard(sentences, 3400), "The weather in Paris is sunny. Tomorrow it will")
    assert.strictEqual(heard(sentences, 9999), "The weather in Paris is sunny. Tomorrow it will rain all day long.")
  })
})
