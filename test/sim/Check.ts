/**
 * The checker: the rules of docs/rules.md over one run's event log, history, world and final state.
 * Each rule is a function returning violations (never throwing), so a run reports all it broke:
 *
 * - rules 1, 2 (one floor, silence after handoff): CheckFloor.ts
 * - rules 3, 4, 12 (batches, every call answered, bad input): CheckBatches.ts
 * - rules 5, 6, 10, 11 and unexpected errors (hooks, returns, quiescence, leaks): CheckLife.ts
 * - rule 9 (deferred handoffs, background reports): CheckBackground.ts
 * - rules 7 and 8 (realtime connections, late answers): CheckRealtime.ts
 * - rules 1, 2 and 12 on cascaded voice (audio played, cut, heard; utterances told): CheckCascade.ts
 * - rules 1 and 4 for tool timeouts, user away and turn hooks: CheckWaits.ts
 */
import type { AgentHandoffEvent, FunctionToolsExecuted } from "../../src/Events.ts"
import { checkDeferredHandoffs } from "./CheckBackground.ts"
import { checkCascade } from "./CheckCascade.ts"
import { checkBatches, checkCalls } from "./CheckBatches.ts"
import type { Ctx, Violation } from "./CheckCore.ts"
import { checkFloor, checkSilence } from "./CheckFloor.ts"
import { checkErrors, checkHooks, checkLeaks, checkQuiescence, checkReturns } from "./CheckLife.ts"
import { checkLateRealtimeAnswers, checkRealtimeReuse } from "./CheckRealtime.ts"
import { checkTimeouts, checkTurnHooks, checkUserAway } from "./CheckWaits.ts"
import type { Recording } from "./Runner.ts"
import type { AgentSpec } from "./Scenario.ts"

export { type Rule, RULE_NAMES, type Violation } from "./CheckCore.ts"

export const CHECKS: ReadonlyArray<(ctx: Ctx) => Array<Violation>> = [
  checkFloor,
  checkSilence,
  checkBatches,
  checkCalls,
  checkHooks,
  checkReturns,
  checkRealtimeReuse,
  checkLateRealtimeAnswers,
  checkDeferredHandoffs,
  checkQuiescence,
  checkLeaks,
  checkErrors,
  checkCascade,
  checkTimeouts,
  checkUserAway,
  checkTurnHooks
]

/** The checking context of a recording. `resumedAt`: the crash simulation's joined log (Crash.ts). */
export const contextOf = (rec: Recording, resumedAt?: number): Ctx => {
  const specs = new Map<string, AgentSpec>([...rec.scenario.agents, ...rec.scenario.tasks].map((a) => [a.name, a]))
  const itemSeq = new Map<string, number>()
  const outputSeq = new Map<string, number>()
  for (const e of rec.events) {
    if (e.type !== "conversation_item_added") continue
    itemSeq.set(e.item.id, e.seq)
    if (e.item._tag === "FunctionCallOutput") outputSeq.set(e.item.callId, e.seq)
  }
  // A background handoff result that could not apply is kept in its agent's history with the
  // reports recorded with it (the same deferred batch), not told: the agent need not hold the floor.
  const notTransferred = new Set<string>()
  for (const e of rec.events) {
    if (e.type !== "function_tools_executed" || !e.deferred) continue
    if (e.calls.some((c) => c.output.status === "error" && /^Not transferred/.test(c.output.output))) {
      for (const c of e.calls) notTransferred.add(c.call.callId)
    }
  }
  return {
    rec,
    specs,
    tasks: new Set(rec.scenario.tasks.map((t) => t.name)),
    groups: new Set(rec.scenario.groups.map((g) => g.name)),
    closeSeq: rec.closeSeq ?? Infinity,
    handoffs: rec.events.filter((e): e is AgentHandoffEvent => e.type === "agent_handoff"),
    batches: rec.events.filter((e): e is FunctionToolsExecuted => e.type === "function_tools_executed"),
    itemSeq,
    outputSeq,
    notTransferred,
    resumedAt
  }
}

export const check = (rec: Recording, checks: ReadonlyArray<(ctx: Ctx) => Array<Violation>> = CHECKS): Array<Violation> => {
  const ctx = contextOf(rec)
  return checks.flatMap((rule) => rule(ctx))
}
