/**
 * What the rule checks share: the rules' names, violations, the checking context built from a
 * recording, and helpers over events and the scenario's tool specs.
 */
import type { FunctionCallOutput } from "../../src/ChatContext.ts"
import type { AgentHandoffEvent, FunctionToolsExecuted, SessionEvent } from "../../src/Events.ts"
import type { Recording } from "./Runner.ts"
import type { AgentSpec, ToolSpec } from "./Scenario.ts"

export type Rule =
  | "rule 1"
  | "rule 2"
  | "rule 3"
  | "rule 4"
  | "rule 5"
  | "rule 6"
  | "rule 7"
  | "rule 8"
  | "rule 9"
  | "rule 10"
  | "rule 11"
  | "rule 12"
  | "no unhandled error"

export const RULE_NAMES: Record<Rule, string> = {
  "rule 1": "one floor",
  "rule 2": "silence after handoff",
  "rule 3": "deterministic batches",
  "rule 4": "every call answered",
  "rule 5": "hooks exactly once",
  "rule 6": "return resumes",
  "rule 7": "reuse when possible, never by accident",
  "rule 8": "late answers are harmless",
  "rule 9": "deferred handoffs",
  "rule 10": "quiescent runs",
  "rule 11": "nothing leaks",
  "rule 12": "bad input is an answer",
  "no unhandled error": "no unhandled error"
}

export interface Violation {
  readonly rule: Rule
  readonly message: string
  /** The event the violation is about, if any. */
  readonly seq?: number | undefined
}

/** What the checker knows about a run beyond the recording. */
export interface Ctx {
  readonly rec: Recording
  readonly specs: ReadonlyMap<string, AgentSpec>
  readonly tasks: ReadonlySet<string>
  readonly groups: ReadonlySet<string>
  /** Events from here on happen while the session closes. */
  readonly closeSeq: number
  readonly handoffs: ReadonlyArray<AgentHandoffEvent>
  readonly batches: ReadonlyArray<FunctionToolsExecuted>
  readonly itemSeq: ReadonlyMap<string, number>
  /** The sequence number of each call id's output. */
  readonly outputSeq: ReadonlyMap<string, number>
  /** Call ids of background reports kept with a "not transferred" result (rule 9: kept, not told). */
  readonly notTransferred: ReadonlySet<string>
  /**
   * The crash simulation's joined log (Crash.ts): events from this seq on are the resumed
   * process's. Undefined for one life.
   */
  readonly resumedAt?: number | undefined
}

export const v = (rule: Rule, message: string, seq?: number): Violation => ({ rule, message, seq })

export const agentOf = (e: SessionEvent): string | undefined =>
  e.type === "conversation_item_added" || e.type === "speech_created" || e.type === "speech_finished" ||
    e.type === "agent_state_changed"
    ? e.agent
    : undefined

export const describeEvent = (e: SessionEvent): string => {
  if (e.type === "conversation_item_added") return `${e.item._tag} by ${e.agent}`
  return `${e.type} by ${agentOf(e)}`
}

/** The spec of an agent's tool, or of a session tool (every agent has those). */
export const toolOf = (ctx: Ctx, agent: string, name: string): ToolSpec | undefined =>
  ctx.specs.get(agent)?.tools.find((t) => t.name === name) ?? ctx.rec.scenario.sessionTools?.find((t) => t.name === name)

/** A background call's later report is recorded as a new pair: `<callId>:progress<n>` / `<callId>:result`. */
const DELIVERY = /^(.*):(progress\d+|result)$/

/** The call a delivery record belongs to, and which report it is; undefined for an ordinary call. */
export const delivery = (callId: string): { readonly call: string; readonly kind: "progress" | "result" } | undefined => {
  const m = DELIVERY.exec(callId)
  return m ? { call: m[1]!, kind: m[2] === "result" ? "result" : "progress" } : undefined
}

/** What a resumed process says for a call that died with the old one (src/internal/Resume.ts). */
const RESTART = /^interrupted by a restart: /

/**
 * An answer a resume adds (docs/durability.md): a call that was running when the process died,
 * or a background call whose result never came (its `:result` pair), answered "interrupted by a
 * restart" by the agent that made it, holder or not. Only in the resumed life of a joined log.
 */
export const answeredByRestart = (ctx: Ctx, e: SessionEvent): boolean => {
  if (ctx.resumedAt === undefined || e.seq < ctx.resumedAt || e.type !== "conversation_item_added") return false
  const item = e.item
  if (item._tag === "FunctionCallOutput") return restartOutput(ctx, item, e.seq)
  // The `:result` call of a background call, recorded with its interrupted output right after.
  if (item._tag === "FunctionCall" && delivery(item.callId)?.kind === "result") {
    const next = ctx.rec.events[ctx.rec.events.indexOf(e) + 1]
    return next?.type === "conversation_item_added" && next.item._tag === "FunctionCallOutput" && next.item.callId === item.callId &&
      next.item.status === "interrupted" && RESTART.test(next.item.output)
  }
  return false
}

/** An output the resumed life of a joined log gave a call that died with the old process. */
export const restartOutput = (ctx: Ctx, output: FunctionCallOutput, seq: number): boolean =>
  ctx.resumedAt !== undefined && seq >= ctx.resumedAt && output.status === "interrupted" && RESTART.test(output.output)
