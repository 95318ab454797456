/**
 * Readable output for a failing seed: the seed, how to replay it, the scenario in compact text,
 * the violations and the event log (with the application's actions, model requests and hook
 * calls interleaved where they happened). Also a normalised log to compare two runs of a seed.
 */
import type { SessionEvent } from "../../src/Events.ts"
import { RULE_NAMES, type Violation } from "./Check.ts"
import type { Recording } from "./Runner.ts"
import { format, formatAction } from "./Scenario.ts"

const clip = (text: string, max = 70) => (text.length > max ? `${text.slice(0, max)}…` : text)

export const describeEvent = (e: SessionEvent): string => {
  switch (e.type) {
    case "agent_state_changed":
      return `state     ${e.agent}: ${e.previous} -> ${e.state}`
    case "conversation_item_added": {
      const item = e.item
      switch (item._tag) {
        case "Message":
          return `item      ${item.agent ?? "-"}: ${item.role} ${JSON.stringify(clip(item.text))}${item.interrupted ? " (interrupted)" : ""}`
        case "FunctionCall":
          return `item      ${item.agent ?? "-"}: call ${item.name}(${clip(item.arguments, 30)}) ${item.callId}`
        case "FunctionCallOutput":
          return `item      ${item.agent ?? "-"}: output ${item.name} ${item.callId} [${item.status}] ${JSON.stringify(clip(item.output, 60))}`
        case "AgentHandoff":
          return `item      handoff record ${item.from ?? "-"} -> ${item.to}`
      }
    }
    // falls through (unreachable)
    case "function_tools_executed":
      return `batch     ${e.agent}: ${e.calls.map((c) => `${c.call.name}=${c.output.status}`).join(", ")}${e.hasHandoff ? ` => ${e.handoffTo}` : ""}`
    case "agent_handoff":
      return `HANDOFF   ${e.from ?? "-"} -> ${e.to} (${e.kind}${e.resumed ? ", resumed" : ""}${e.reason ? `, ${e.reason}` : ""})`
    case "handoff_not_applied":
      return `not applied ${e.agent} -> ${e.to}: ${e.reason}`
    case "speech_created":
      return `speech+   ${e.agent}: ${e.source} ${e.speechId}`
    case "speech_finished":
      return `speech-   ${e.agent}: ${e.speechId}${e.interrupted ? " (interrupted)" : ""}`
    case "error":
      return `ERROR     ${e.agent ?? "-"} ${e.source}: ${clip(e.message.split("\n")[0] ?? "", 100)}`
    case "user_state_changed":
      return `user      ${e.state}`
    case "user_input_transcribed":
      return `heard     ${e.final ? "final" : "interim"} ${JSON.stringify(e.transcript)}`
    case "voice_decision":
      return `voice     ${e.decision} ${e.outcome}${e.delayMs !== undefined ? ` ${e.delayMs}ms` : ""}${e.transcript !== undefined ? ` ${JSON.stringify(clip(e.transcript))}` : ""}`
    case "model_call":
      return `model     ${e.agent}: ${e.kind} ${e.provider}/${e.model} ${e.outcome}${e.errorReason ? ` (${e.errorReason})` : ""}`
    case "realtime_connection":
      return `realtime  ${e.agent}: ${e.action} ${e.connectionId}`
    case "tool_approval_requested":
      return `approval? ${e.agent}: ${e.tool} ${e.callId}`
    case "tool_approval_answered":
      return `approval  ${e.agent}: ${e.tool} ${e.callId} ${e.approved ? "approved" : "rejected"} by ${e.by}`
    case "guardrail_tripped":
      return `GUARDRAIL ${e.agent}: ${e.guardrail} (${e.kind}) -> ${e.policy}`
    case "whisper":
      return `${e.note ? "note" : "whisper"}   for ${e.agent}: ${JSON.stringify(clip(e.text))}`
    case "close":
      return `close     ${e.reason}`
  }
}

/** The event log with actions, model requests and hook calls where they happened. */
export const eventLog = (rec: Recording): string => {
  const notes: Array<{ readonly seq: number; readonly order: number; readonly line: string }> = []
  const add = (seq: number, order: number, line: string) => notes.push({ seq, order, line })
  for (const a of rec.actions) {
    const action = rec.scenario.timeline[a.index]
    add(a.seq, a.order, `>> app  @${a.at}: ${action ? formatAction(action) : "the user stops speaking"}`)
  }
  for (const r of rec.requests) add(r.seq, r.order, `>> model request #${r.index} by ${r.agent} (${r.trigger}, holder ${r.holder ?? "-"})`)
  for (const h of rec.hooks) add(h.seq, h.order, `>> hook ${h.hook} of ${h.agent}`)
  for (const t of rec.taskOutcomes) add(t.seq, Infinity, `>> ${t.caller} got ${t.task}'s result via ${t.via}: ${t.ok ? "ok" : "error"} ${clip(t.detail, 50)}`)
  for (const r of rec.runs) if (r.resolvedSeq !== undefined) add(r.resolvedSeq, r.resolvedOrder, `>> run ${r.text} resolved`)
  if (rec.settled) add(rec.settled.seq, rec.settled.order, ">> quiescent")
  if (rec.closeSeq !== undefined) add(rec.closeSeq, rec.closeOrder ?? Infinity, ">> close asked")
  notes.sort((x, y) => x.seq - y.seq || x.order - y.order)
  const lines: Array<string> = []
  let next = 0
  for (const e of rec.events) {
    while (next < notes.length && notes[next]!.seq <= e.seq) lines.push(`            ${notes[next++]!.line}`)
    lines.push(`${String(e.seq).padStart(4)} @${String(e.at).padEnd(6)} ${describeEvent(e)}`)
  }
  while (next < notes.length) lines.push(`            ${notes[next++]!.line}`)
  return lines.join("\n")
}

export const formatViolations = (violations: ReadonlyArray<Violation>): string =>
  violations.map((x) => {
    const name = RULE_NAMES[x.rule] === x.rule ? x.rule : `${x.rule}: ${RULE_NAMES[x.rule]}`
    return `  [${name}]${x.seq !== undefined ? ` (seq ${x.seq})` : ""} ${x.message}`
  }).join("\n")

export const reproduction = (rec: Recording, violations: ReadonlyArray<Violation>, shrunk?: Recording, all = false): string => {
  const seed = rec.scenario.seed
  const parts = [
    `Simulation seed ${seed} broke ${violations.length} rule check(s).`,
    `Replay: ${all ? "SIM_ALL=1 " : ""}SIM_SEED=${seed} npx vitest run test/sim/sim.test.ts   or   npm run sim -- --seed ${seed}${all ? " --all" : ""}`,
    "",
    "Violations:",
    formatViolations(violations),
    "",
    "Scenario:",
    format(rec.scenario)
  ]
  const shown = shrunk ?? rec
  if (shrunk) parts.push("", "Shrunk scenario (still fails):", format(shrunk.scenario))
  parts.push("", `Event log${shrunk ? " of the shrunk scenario" : ""}:`, eventLog(shown))
  if (shown.notes.length) parts.push("", "Notes:", ...shown.notes.map((n) => `  ${n}`))
  return parts.join("\n")
}

/** The event log with process-wide ids replaced by their order of appearance. */
export const normalizedLog = (rec: Recording): string => {
  const ids = new Map<string, string>()
  return rec.events.map((e) => JSON.stringify(e)).join("\n").replace(
    /\b(msg|fc|fco|handoff|speech|session)_[0-9a-z]+\b/g,
    (id, kind: string) => {
      if (!ids.has(id)) ids.set(id, `${kind}#${ids.size}`)
      return ids.get(id)!
    }
  )
}
