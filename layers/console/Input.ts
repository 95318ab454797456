/**
 * What the console does with the bytes a person types (or pipes) before they reach a session,
 * and with the text it prints.
 *
 * - Lines end at `\n` or `\r\n`. The last line counts even without a final newline.
 * - At most {@link MAX_READ_CHARS} characters of one line are kept in memory; the rest of the
 *   line is discarded (so a multi-megabyte line without a newline cannot exhaust memory).
 * - ANSI escape sequences and control characters (Unicode `Cc`: C0, DEL, C1) are removed, as are
 *   the bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069), which can make a
 *   line display differently from what it says. A tab becomes a space. Everything else (accents,
 *   CJK, emoji with their joiners and variation selectors) is kept.
 * - Surrounding whitespace is trimmed; a line with nothing left is ignored.
 * - A line is cut at {@link MAX_LINE_CHARS} characters (code points, counted after cleaning) and
 *   the console says so.
 */
import { Stream } from "effect"

/** The longest line sent to a session, in characters (code points). */
export const MAX_LINE_CHARS = 2000

/** The most characters of one line held in memory while reading it. */
export const MAX_READ_CHARS = MAX_LINE_CHARS * 4

export interface RawLine {
  readonly text: string
  /** Characters beyond {@link MAX_READ_CHARS} were discarded while reading. */
  readonly overflow: boolean
}

export type InputLine =
  | { readonly _tag: "Empty" }
  | {
    readonly _tag: "Text"
    readonly text: string
    /** The line was longer than {@link MAX_LINE_CHARS} and was cut. */
    readonly cut: boolean
    /** How many control characters or escape sequences were removed. */
    readonly removed: number
  }

// CSI (ESC [ ... final), OSC (ESC ] ... BEL | ESC \), and two-character escapes.
const ANSI = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])/g
const C1_CSI = /\u009b[0-?]*[ -/]*[@-~]/g
const CONTROL = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/gu
const CONTROL_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g

const countMatches = (text: string, pattern: RegExp) => text.match(pattern)?.length ?? 0

/** Removes escape sequences and control characters; `keepNewlines` keeps `\n`. */
export const stripControl = (text: string, keepNewlines = false): { readonly text: string; readonly removed: number } => {
  const tabs = text.toWellFormed().replace(/\t/g, " ")
  const escapes = countMatches(tabs, ANSI) + countMatches(tabs, C1_CSI)
  const noEscapes = tabs.replace(ANSI, "").replace(C1_CSI, "")
  const pattern = keepNewlines ? CONTROL_BUT_NEWLINE : CONTROL
  const controls = countMatches(noEscapes, pattern)
  return { text: noEscapes.replace(pattern, ""), removed: escapes + controls }
}

/** Cleans one line read from the input (see the module documentation). */
export const clean = (raw: RawLine | string): InputLine => {
  const line = typeof raw === "string" ? { text: raw, overflow: false } : raw
  const stripped = stripControl(line.text)
  const text = stripped.text.trim()
  if (text === "") return { _tag: "Empty" }
  const chars = Array.from(text)
  const cut = line.overflow || chars.length > MAX_LINE_CHARS
  return {
    _tag: "Text",
    text: chars.length > MAX_LINE_CHARS ? chars.slice(0, MAX_LINE_CHARS).join("").trimEnd() : text,
    cut,
    removed: stripped.removed
  }
}

/** Text for the screen: no escape sequences or control characters, newlines kept. */
export const forDisplay = (text: string): string => stripControl(text, true).text

interface SplitState {
  readonly buffer: string
  readonly overflow: boolean
}

/**
 * Splits decoded text into lines, holding at most {@link MAX_READ_CHARS} characters of a line
 * in memory.
 */
export const splitLines = <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<RawLine, E, R> =>
  text.pipe(
    Stream.mapAccum(
      (): SplitState => ({ buffer: "", overflow: false }),
      (state, chunk: string) => {
        const out: Array<RawLine> = []
        let buffer = state.buffer
        let overflow = state.overflow
        const parts = chunk.split("\n")
        parts.forEach((part, i) => {
          const room = MAX_READ_CHARS - buffer.length
          if (part.length > room) overflow = true
          buffer += part.slice(0, Math.max(0, room))
          if (i < parts.length - 1) {
            out.push({ text: buffer.endsWith("\r") ? buffer.slice(0, -1) : buffer, overflow })
            buffer = ""
            overflow = false
          }
        })
        return [{ buffer, overflow }, out] as const
      },
      { onHalt: (state) => (state.buffer === "" && !state.overflow ? [] : [{ text: state.buffer, overflow: state.overflow }]) }
    )
  )

/** Bytes (UTF-8, possibly split anywhere) to lines. */
export const lines = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<RawLine, E, R> =>
  splitLines(Stream.decodeText(bytes))
