/**
 * Event logs as JSON Lines: one session event per line, as the recorder writes them
 * (`Recorder.ts`) and as `Timeline.fromJsonl` reads them back. A line that is not an event is a
 * clear error naming its line number; nothing is guessed.
 */
import { Schema } from "effect"
import type { SessionEvent } from "../Events.ts"

/**
 * An event log could not be read or drawn.
 *
 * @since 0.1.0
 * @category errors
 */
export class TimelineError extends Schema.TaggedError<TimelineError>()("TimelineError", {
  reason: Schema.Literals(["invalid_line", "empty", "read_failed", "write_failed"]),
  message: Schema.String,
  cause: Schema.optional(Schema.Unknown)
}) {}

/**
 * One event as a line (no newline).
 *
 * @since 0.1.0
 * @category utils
 */
export const encodeLine = (event: SessionEvent): string => JSON.stringify(event)

const isEvent = (value: unknown): value is SessionEvent =>
  typeof value === "object" && value !== null &&
  typeof (value as { type?: unknown }).type === "string" &&
  typeof (value as { seq?: unknown }).seq === "number" &&
  typeof (value as { at?: unknown }).at === "number"

const parseLine = (line: string): unknown => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

/**
 * The events of a JSONL text; blank lines are skipped.
 *
 * @since 0.1.0
 * @category utils
 */
export const decode = (text: string, source = "the event log"): ReadonlyArray<SessionEvent> | TimelineError => {
  const events: Array<SessionEvent> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === "") continue
    const value = parseLine(line)
    if (!isEvent(value)) {
      return new TimelineError({
        reason: "invalid_line",
        message: `${source}, line ${i + 1}: not a session event (a JSON object with type, seq and at expected): ${line.slice(0, 80)}`
      })
    }
    events.push(value)
  }
  if (events.length === 0) return new TimelineError({ reason: "empty", message: `${source} holds no events` })
  return events
}
