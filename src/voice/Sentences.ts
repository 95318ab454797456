/**
 * Cuts a reply's streamed text into sentences for TTS as it arrives, so the first audio waits
 * for the first sentence, not the whole reply. A sentence ends at `.`, `!`, `?` or `…` followed
 * by whitespace, or at a line break; abbreviations and decimals ("Dr. Smith", "3.5") do not end
 * one, and a fragment shorter than `minChars` is joined to the next sentence (flite and cloud
 * engines sound unnatural on two-word chunks).
 */

export interface Chunker {
  /** Adds streamed text; returns the sentences it completed. */
  readonly push: (text: string) => ReadonlyArray<string>
  /** The rest, at the end of the reply (may be empty). */
  readonly flush: () => string
}

const ABBREVIATIONS = new Set(["mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "no", "approx"])

/** Index just after the first sentence end in `text` at or after `from`, or -1. */
const sentenceEnd = (text: string, from: number): number => {
  for (let i = from; i < text.length; i++) {
    const c = text[i]!
    if (c === "\n") return i + 1
    if (c !== "." && c !== "!" && c !== "?" && c !== "…") continue
    const next = text[i + 1]
    if (next === undefined) return -1 // the next delta decides
    if (!/\s/.test(next)) continue // "3.5", "e.g."
    if (c === ".") {
      const word = /([\p{L}.]+)$/u.exec(text.slice(0, i))?.[1]?.toLowerCase()
      if (word !== undefined && ABBREVIATIONS.has(word)) continue
    }
    return i + 1
  }
  return -1
}

export const make = (minChars = 20): Chunker => {
  let buffer = ""
  let scanned = 0
  let held = ""
  return {
    push: (text) => {
      buffer += text
      const out: Array<string> = []
      for (;;) {
        const end = sentenceEnd(buffer, scanned)
        if (end < 0) {
          scanned = Math.max(0, buffer.length - 1)
          break
        }
        const sentence = [held, buffer.slice(0, end).trim()].filter((part) => part !== "").join(" ")
        buffer = buffer.slice(end)
        scanned = 0
        if (sentence.length < minChars) {
          held = sentence
          continue
        }
        held = ""
        if (sentence !== "") out.push(sentence)
      }
      return out
    },
    flush: () => {
      const rest = [held, buffer.trim()].filter((part) => part !== "").join(" ")
      buffer = ""
      held = ""
      scanned = 0
      return rest
    }
  }
}
