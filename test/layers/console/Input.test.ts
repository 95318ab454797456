import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { clean, forDisplay, lines, MAX_LINE_CHARS, MAX_READ_CHARS, splitLines } from "../../../layers/console/Input.ts"

const text = (raw: string) => {
  const line = clean(raw)
  return line._tag === "Text" ? line.text : undefined
}

describe("console input", () => {
  it("empty and blank lines are ignored", () => {
    assert.deepStrictEqual(clean(""), { _tag: "Empty" })
    assert.deepStrictEqual(clean("  \t  "), { _tag: "Empty" })
    assert.deepStrictEqual(clean("\u0000\u0007\u001b[2J\r"), { _tag: "Empty" })
  })

  it("control characters and escape sequences are removed, and counted", () => {
    assert.deepStrictEqual(clean("\u001b[1;31mhi\u001b[0m there\r"), { _tag: "Text", text: "hi there", cut: false, removed: 3 })
    assert.strictEqual(text("a\u0000b\u0008c\u007fd\u0085e\u009b31mf"), "abcdef")
    assert.strictEqual(text("title \u001b]0;pwned\u0007 done"), "title  done")
    assert.strictEqual(text("col\tumn"), "col umn")
    // Bidirectional overrides and isolates: a line should read as what it says.
    assert.strictEqual(text("abc \u202edcba\u202c \u2066x\u2069"), "abc dcba x")
  })

  it("normal unicode is kept: accents, CJK, right-to-left scripts, emoji with joiners", () => {
    for (const line of ["naïve café", "日本語のテキスト", "مرحبا بالعالم", "👩‍💻 🏳️‍🌈 👍🏽", "Ünïcödé ∑ ≠ ∞"]) {
      assert.strictEqual(text(line), line)
    }
  })

  it(`lines are cut at ${MAX_LINE_CHARS} characters, never inside a character`, () => {
    const long = clean("😀".repeat(MAX_LINE_CHARS + 10))
    assert.strictEqual(long._tag, "Text")
    if (long._tag !== "Text") return
    assert.isTrue(long.cut)
    assert.strictEqual(Array.from(long.text).length, MAX_LINE_CHARS)
    assert.strictEqual(long.text, "😀".repeat(MAX_LINE_CHARS))
    const exact = clean("a".repeat(MAX_LINE_CHARS))
    assert.isTrue(exact._tag === "Text" && !exact.cut)
    // Lone surrogates (not valid text) become U+FFFD.
    assert.strictEqual(text("a\ud800b"), "a\ufffdb")
  })

  it("text for display keeps newlines, drops the rest", () => {
    assert.strictEqual(forDisplay("one\ntwo\u001b[31m\u0007"), "one\ntwo")
  })

  it.effect("splitting: chunks cut anywhere, CRLF, a last line without newline", () =>
    Effect.gen(function*() {
      const out = yield* splitLines(Stream.make("he", "llo\r\nwor", "ld\n\nlast")).pipe(Stream.runCollect)
      assert.deepStrictEqual(out.map((l) => clean(l)), [
        { _tag: "Text", text: "hello", cut: false, removed: 0 },
        { _tag: "Text", text: "world", cut: false, removed: 0 },
        { _tag: "Empty" },
        { _tag: "Text", text: "last", cut: false, removed: 0 }
      ])
    }))

  it.effect(`a huge line holds at most ${MAX_READ_CHARS} characters in memory`, () =>
    Effect.gen(function*() {
      const chunk = "z".repeat(10_000)
      const out = yield* splitLines(Stream.make(chunk, chunk, chunk, "\nnext\n")).pipe(Stream.runCollect)
      assert.strictEqual(out.length, 2)
      assert.strictEqual(out[0]!.text.length, MAX_READ_CHARS)
      assert.isTrue(out[0]!.overflow)
      assert.deepStrictEqual(out[1], { text: "next", overflow: false })
    }))

  it.effect("bytes: a multi-byte character split across chunks, invalid UTF-8", () =>
    Effect.gen(function*() {
      const bytes = new TextEncoder().encode("día 👋\n")
      const out = yield* lines(Stream.make(bytes.slice(0, 2), bytes.slice(2, 6), bytes.slice(6), new Uint8Array([0xc3, 0x28, 0x0a])))
        .pipe(Stream.runCollect)
      assert.deepStrictEqual(out.map((l) => l.text), ["día 👋", "\ufffd("])
    }))
})
