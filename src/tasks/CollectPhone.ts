/**
 * Collects a phone number, spoken or typed on the keypad: separators dropped, 7 to 15 digits
 * with an optional leading `+`, read back in groups and confirmed. Result: the number (`+` and
 * digits).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Schema } from "effect"
import type { AgentTask } from "../AgentTask.ts"
import * as Collect from "./Collect.ts"

/**
 * A phone number: an optional `+` and 7 to 15 digits.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PhoneNumber = Schema.String.check(Schema.isPattern(/^\+?[0-9]{7,15}$/))

const WORDS: Record<string, string> = { zero: "0", oh: "0", one: "1", two: "2", three: "3", four: "4", five: "5", six: "6", seven: "7", eight: "8", nine: "9", plus: "+" }

/**
 * "plus 1 415 555 0100", "DTMF: 4155550100#", "(415) 555-0100" -> "+14155550100", ...
 *
 * @since 0.1.0
 * @category parsing
 */
export const normalize = (heard: string): string =>
  heard.replace(/^DTMF:\s*/i, "").toLowerCase()
    .split(/[\s,.\-()/]+/)
    .map((word) => WORDS[word] ?? word)
    .join("")
    .replace(/#$/, "")

const grouped = (phone: string) => phone.replace(/(\d{3})(?=\d{4})/g, "$1 ").replace(/(\d)(?=(\d{4})$)/, "$1 ").replace(/\s+/g, " ")

/**
 * The task.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: { readonly name?: string; readonly instructions?: string } = {}): AgentTask<string> =>
  Collect.make({
    ...options,
    what: "phone number",
    field: "phone",
    schema: PhoneNumber,
    parse: normalize,
    readBack: grouped,
    hint: "They may say it or type it on the keypad."
  })
