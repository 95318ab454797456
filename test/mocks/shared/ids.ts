/**
 * Realistic identifiers for the mock servers.
 *
 * OpenAI ids look like `event_C9G5RJeJ2gF77mV7f2B1j` (prefix + 21 base62 characters, docs/protocols.md
 * OA-REF examples); call ids like `call_9UoYr1iIQM8DltFx` (16 characters).
 */
import { randomBytes } from "node:crypto"

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

export const randomBase62 = (length: number): string => {
  const bytes = randomBytes(length)
  let out = ""
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i]! % ALPHABET.length]
  return out
}

export type IdPrefix = "event" | "item" | "resp" | "conv" | "sess" | "call" | "fc" | "handle"

export const makeId = (prefix: IdPrefix): string =>
  prefix === "call" ? `call_${randomBase62(16)}` : `${prefix}_${randomBase62(21)}`
