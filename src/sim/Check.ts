/**
 * The rules of docs/rules.md that hold for any agents, checked over one run of a schedule:
 *
 * - rule 1 (one floor): each handoff is one step with its history record, from the agent that
 *   held the floor; the user's messages go to the holder
 * - rule 2 (silence after handoff): no words, no speech and no model request from an agent after
 *   it passed the floor, until it gets it back
 * - rule 4 (every call answered): exactly one output per call, after it; none without a call;
 *   nothing cancelled while the session is open
 * - rule 12 (bad input is an answer): arguments that do not decode, unknown tools and injected
 *   failures get error outputs
 * - rule 10 (quiescent runs): every run and forced handoff resolves
 * - rule 11 (nothing leaks): sessions, actors and fibers back to the count before, once closed
 * - no unhandled error: error events only from tools and the model (a hook that fails, a
 *   defect, a warning or an error log is one)
 *
 * - rule 3 (deterministic batches) and rule 9 (deferred handoffs): CheckBatches.ts
 * - rule 5 (hooks exactly once) and rule 6 (return resumes): CheckHooks.ts
 *
 * Which hooks ran, which task results reached their flows and when background handlers ended,
 * the runtime's observer tells (Run.ts provides it): the agents run as the user made them.
 * Realtime connections (rules 7, 8) are checked by the repository's own simulation over
 * generated agents (test/sim).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect } from "effect"
import type { Agent } from "../Agent.ts"
import type { FunctionCall, FunctionCallOutput } from "../ChatContext.ts"
import * as Diagnostics from "../Diagnostics.ts"
import * as Tool from "../Tool.ts"
import { checkBatches, checkDeferredHandoffs } from "./CheckBatches.ts"
import { checkHooks, checkReturns } from "./CheckHooks.ts"
import type { Recording } from "./Run.ts"

/**
 * The rules this checker checks, named as in docs/rules.md.
 *
 * @since 0.1.0
 * @category models
 */
export type Rule =
  | "rule 1"
  | "rule 2"
  | "rule 3"
  | "rule 4"
  | "rule 5"
  | "rule 6"
  | "rule 9"
  | "rule 10"
  | "rule 11"
  | "rule 12"
  | "no unhandled error"

/**
 * Each rule's short name.
 *
 * @since 0.1.0
 * @category models
 */
export const RULE_NAMES: Record<Rule, string> = {
  "rule 1": "one floor",
  "rule 2": "silence after handoff",
  "rule 3": "deterministic batches",
  "rule 4": "every call answered",
  "rule 5": "hooks exactly once",
  "rule 6": "return resumes",
  "rule 9": "deferred handoffs",
  "rule 10": "quiescent runs",
  "rule 11": "nothing leaks",
  "rule 12": "bad input is an answer",
  "no unhandled error": "no unhandled error"
}

/**
 * One broken rule, with what was seen.
 *
 * @since 0.1.0
 * @category models
 */
export interface Violation {
  readonly rule: Rule
  readonly message: string
}

const v = (rule: Rule, message: string): Violation => ({ rule, message })

const floor = (rec: Recording): Array<Violation> => {
  const out: Array<Violation> = []
  const events = rec.events
  let holder: string | undefined
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!
    if (e.type === "agent_handoff") {
      const record = events[i - 1]
      if (!(record?.type === "conversation_item_added" && record.item._tag === "AgentHandoff" && record.item.to === e.to && record.seq === e.seq - 1)) {
        out.push(v("rule 1", `the handoff to ${e.to} (seq ${e.seq}) is not one step with its history record`))
      }
      if (e.kind === "start" ? holder !== undefined : e.from !== holder) {
        out.push(v("rule 1", `${e.kind} ${e.from ?? "-"} -> ${e.to} (seq ${e.seq}) while ${holder ?? "nobody"} held the floor`))
      }
      holder = e.to
      continue
    }
    if (e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user" && e.agent !== undefined && e.agent !== holder) {
      out.push(v("rule 1", `the user's message went to ${e.agent} while ${holder ?? "nobody"} held the floor (seq ${e.seq})`))
    }
    if (e.seq >= rec.closeSeq) continue
    const speaker = e.type === "speech_created"
      ? e.agent
      : e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "assistant" && !e.item.interrupted
      ? e.agent
      : undefined
    if (speaker !== undefined && holder !== undefined && speaker !== holder) {
      out.push(v("rule 2", `${speaker} ${e.type === "speech_created" ? "started a speech" : "spoke"} after it passed the floor to ${holder} (seq ${e.seq})`))
    }
  }
  for (const r of rec.requests) {
    if (r.seq >= rec.closeSeq || r.holder === undefined || r.agent === r.holder) continue
    out.push(v("rule 2", `${r.agent} asked the model while ${r.holder} held the floor (before seq ${r.seq})`))
  }
  return out
}

const calls = (rec: Recording, agents: ReadonlyMap<string, Agent>): Array<Violation> => {
  const out: Array<Violation> = []
  const seqOf = new Map<string, number>()
  for (const e of rec.events) if (e.type === "conversation_item_added") seqOf.set(e.item.id, e.seq)
  const history = rec.history
  const index = new Map(history.map((item, i) => [item.id, i]))
  const outputs = history.filter((i): i is FunctionCallOutput => i._tag === "FunctionCallOutput")
  const callList = history.filter((i): i is FunctionCall => i._tag === "FunctionCall")
  for (const call of callList) {
    const answers = outputs.filter((o) => o.callId === call.callId)
    if (answers.length !== 1) {
      out.push(v("rule 4", `the call of ${call.name} by ${call.agent} has ${answers.length} outputs`))
      continue
    }
    const answer = answers[0]!
    if (index.get(answer.id)! < index.get(call.id)!) out.push(v("rule 4", `the output of ${call.name} comes before its call`))
    const seq = seqOf.get(answer.id) ?? Infinity
    if ((answer.status === "cancelled" || answer.status === "interrupted") && seq < rec.closeSeq) {
      const tool = agents.get(call.agent ?? "")?.tools.find((t) => t.name === call.name)
      if (!(tool?.options.onDuplicate === "replace" && /newer call/.test(answer.output))) {
        out.push(v("rule 4", `${call.name} of ${call.agent} was ${answer.status} while the session was open`))
      }
      continue
    }
    if (answer.status === "error" || answer.status === "cancelled" || answer.status === "interrupted") continue
    const tool = agents.get(call.agent ?? "")?.tools.find((t) => t.name === call.name)
    const why = tool === undefined
      ? agents.has(call.agent ?? "") ? "it has no such tool" : undefined
      : !decodes(tool, call.arguments)
      ? "its arguments do not decode"
      : rec.schedule.faults[call.agent ?? ""]?.[call.name]?.fails
      ? "its handler failed"
      : undefined
    if (why !== undefined) {
      out.push(v("rule 12", `${call.agent}: ${call.name}(${call.arguments}) got a "${answer.status}" output, expected an error (${why})`))
    }
  }
  for (const output of outputs) {
    if (!callList.some((c) => c.callId === output.callId)) out.push(v("rule 4", `an output of ${output.name} has no call`))
  }
  return out
}

const decodes = (tool: Tool.Tool<unknown, unknown>, raw: string): boolean =>
  Effect.runSync(Tool.decodeArguments(tool, raw).pipe(Effect.match({ onFailure: () => false, onSuccess: () => true })))

const life = (rec: Recording): Array<Violation> => {
  const out: Array<Violation> = rec.failures.map((f) => v(f.rule, f.message))
  const keys: ReadonlyArray<keyof Diagnostics.Counts> = Object.keys(rec.before) as Array<keyof Diagnostics.Counts>
  const grown = keys.filter((k) => rec.after[k] !== rec.before[k])
  if (grown.length > 0) {
    out.push(v("rule 11", `after close: ${grown.map((k) => `${String(k)} ${rec.before[k]} -> ${rec.after[k]}`).join(", ")}`))
  }
  for (const e of rec.events) {
    if (e.type !== "error" || e.source === "tool" || e.source === "model") continue
    out.push(v("no unhandled error", `${e.source} error${e.agent ? ` of ${e.agent}` : ""}: ${e.message}`))
  }
  return out
}

/**
 * The violations of one run, `agents` being the agents it ran.
 *
 * @since 0.1.0
 * @category checking
 */
export const check = (rec: Recording, agents: ReadonlyArray<Agent>): Array<Violation> => {
  const byName = new Map(agents.map((a) => [a.name, a]))
  return [
    ...floor(rec),
    ...checkBatches(rec, agents),
    ...calls(rec, byName),
    ...checkHooks(rec, agents),
    ...checkReturns(rec),
    ...checkDeferredHandoffs(rec),
    ...life(rec)
  ]
}

/**
 * A violation without its numbers: what a smaller schedule must still show.
 *
 * @since 0.1.0
 * @category checking
 */
export const signature = (violation: Violation): string => `${violation.rule}: ${violation.message.replace(/\d+/g, "N").replace(/\(.*\)/g, "()")}`
