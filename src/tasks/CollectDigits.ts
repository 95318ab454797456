/**
 * Collects a string of digits (an account number, a PIN, a menu choice), by voice or keypad,
 * with a length to respect; read back digit by digit and confirmed. Result: the digits.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Schema } from "effect"
import type { AgentTask } from "../AgentTask.ts"
import * as Collect from "./Collect.ts"

const WORDS: Record<string, string> = { zero: "0", oh: "0", one: "1", two: "2", three: "3", four: "4", five: "5", six: "6", seven: "7", eight: "8", nine: "9" }

/**
 * "DTMF: 1234#", "one two three four", "12 34" -> "1234"; anything but digits is an error.
 *
 * @since 0.1.0
 * @category parsing
 */
export const normalize = (heard: string): string | Error => {
  const digits = heard.replace(/^DTMF:\s*/i, "").toLowerCase().split(/[\s,.\-]+/).map((w) => WORDS[w] ?? w).join("").replace(/#$/, "")
  return /^[0-9]*$/.test(digits) ? digits : new Error(`"${heard}" is not digits only. Ask the caller for the digits again.`)
}

/**
 * The options: what the digits are ("account number"), their length (exact, or between
 * `minLength` and `maxLength`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly what?: string
  readonly name?: string
  readonly length?: number
  readonly minLength?: number
  readonly maxLength?: number
}

/**
 * The task.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): AgentTask<string> => {
  const min = options.length ?? options.minLength ?? 1
  const max = options.length ?? options.maxLength ?? 32
  const what = options.what ?? "number"
  return Collect.make({
    ...(options.name !== undefined ? { name: options.name } : {}),
    what,
    field: "digits",
    schema: Schema.String.check(Schema.isPattern(new RegExp(`^[0-9]{${min},${max}}$`))),
    parse: normalize,
    readBack: (digits) => [...digits].join(" "),
    hint: `It has ${min === max ? `${min}` : `${min} to ${max}`} digits; they may say it or type it on the keypad.`
  })
}
