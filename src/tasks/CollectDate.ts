/**
 * Collects a calendar date: the model gives it as `YYYY-MM-DD` (it turns "the third of May 1990"
 * into that); a date that does not exist (2023-02-30) is refused; read back in words and
 * confirmed. Result: `{ year, month, day }`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Schema } from "effect"
import type { AgentTask } from "../AgentTask.ts"
import * as Collect from "./Collect.ts"

/**
 * A date of the calendar.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CalendarDate = Schema.Struct({
  year: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 9999 })),
  month: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 12 })),
  day: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 31 }))
}).check(Schema.makeFilter((d) => new Date(Date.UTC(d.year, d.month - 1, d.day)).getUTCDate() === d.day || "no such day in that month"))

/**
 * @since 0.1.0
 * @category models
 */
export type CalendarDate = typeof CalendarDate.Type

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]

const parse = (heard: string) => {
  const m = /^\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*$/.exec(heard)
  return m ? { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]) } : new Error(`Give the date as YYYY-MM-DD (got "${heard}").`)
}

/**
 * The task (options: what the date is, e.g. "date of birth").
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: { readonly what?: string; readonly name?: string } = {}): AgentTask<CalendarDate> =>
  Collect.make({
    ...(options.name !== undefined ? { name: options.name } : {}),
    what: options.what ?? "date",
    field: "date",
    schema: CalendarDate,
    parse,
    readBack: (d) => `${MONTHS[d.month - 1]} ${d.day}, ${d.year}`,
    hint: "Pass it to the tools as YYYY-MM-DD."
  })
