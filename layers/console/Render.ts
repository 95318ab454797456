/**
 * How session events look on the console (plain text shown; colours come from `Style`):
 *
 * ```
 * ── floor: greeter [start]
 * [greeter] Hi, I'm Kelly at the front desk. How can I help?
 * you> what's the weather in Paris?
 *   [greeter] ⚙ transfer_to_weather({"reason":"weather in Paris"})
 *   [greeter] ⚙ transfer_to_weather ⇒ handoff: Transferred to the weather specialist.
 * ── floor: greeter → weather [handoff] reason: weather in Paris
 *   [weather] ⚙ lookup_weather({"city":"Paris"})
 *   [weather] ⚙ lookup_weather → Paris: sunny, 21°C
 * ! error [tool] weather: lookup_weather failed: ...
 * ── session closed
 * ```
 *
 * Only what a person needs is shown: floor changes (`agent_handoff`, with from, to, kind,
 * resumed and reason), each function call with its arguments and each output with its status
 * (`conversation_item_added`), handoffs that were not applied, errors, and the end of the
 * session. Messages are not rendered from events: agent text is streamed by the console's
 * `TextOutput`, and the person typed their own lines.
 */
import type { SessionEvent } from "../../src/index.ts"
import { forDisplay } from "./Input.ts"
import type { Style } from "./Style.ts"

/** Longest tool argument or output shown, in characters. */
export const MAX_SHOWN_CHARS = 300

const clip = (text: string, max = MAX_SHOWN_CHARS) => {
  const chars = Array.from(text)
  return chars.length > max ? `${chars.slice(0, max).join("")}…` : text
}

/** One line of display text: control characters removed, newlines shown as spaces. */
export const oneLine = (text: string, max = MAX_SHOWN_CHARS): string => clip(forDisplay(text).replace(/\s*\n\s*/g, " ").trim(), max)

/** The first line of an error message (causes can carry whole stack traces). */
const firstLine = (text: string) => oneLine(forDisplay(text).split("\n").find((line) => line.trim() !== "") ?? "")

export const agentLabel = (style: Style, agent: string | undefined): string =>
  agent === undefined ? "" : style.agent(agent, `[${forDisplay(agent)}]`)

const arrow = "→"

export const renderEvent = (event: SessionEvent, style: Style): ReadonlyArray<string> => {
  switch (event.type) {
    case "agent_handoff": {
      const who = event.from === undefined ? style.bold(event.to) : `${event.from} ${arrow} ${style.bold(event.to)}`
      const kind = `[${event.kind}${event.resumed && event.kind !== "return" ? ", resumed" : ""}]`
      const reason = event.reason ? ` reason: ${oneLine(event.reason)}` : ""
      return [style.yellow(`── floor: ${who} ${kind}${reason}`)]
    }
    case "conversation_item_added": {
      const item = event.item
      const label = agentLabel(style, item._tag === "AgentHandoff" ? undefined : item.agent ?? event.agent)
      const prefix = `  ${label}${label ? " " : ""}`
      if (item._tag === "FunctionCall") {
        const args = item.arguments.trim() === "" || item.arguments.trim() === "{}" ? "" : oneLine(item.arguments)
        return [prefix + style.dim(`⚙ ${item.name}(${args})`)]
      }
      if (item._tag === "FunctionCallOutput") {
        const output = oneLine(item.output)
        if (item.isError) return [prefix + style.red(`⚙ ${item.name} ✗ ${item.status}: ${output}`)]
        if (item.status === "handoff") return [prefix + style.dim(`⚙ ${item.name} ⇒ handoff: ${output}`)]
        const status = item.status === "ok" ? "" : `[${item.status}] `
        return [prefix + style.dim(`⚙ ${item.name} ${arrow} ${status}${output}`)]
      }
      return []
    }
    case "handoff_not_applied":
      return [style.yellow(`! handoff ${event.agent} ${arrow} ${event.to} not applied: ${oneLine(event.reason)}`)]
    case "error": {
      const where = [event.source, event.agent].filter((part) => part !== undefined).join(", ")
      return [style.red(`! error (${where}): ${firstLine(event.message)}${event.recoverable ? "" : " [the session cannot go on]"}`)]
    }
    case "close":
      return [style.yellow(`── session closed${event.reason && event.reason !== "closed" ? ` (${oneLine(event.reason)})` : ""}`)]
    default:
      return []
  }
}
