/**
 * Rules 5 and 6 on a user's agents, from the handoff events and what the runtime's observer
 * reported (each hook as it started and ended, each task result as it reached its flow):
 *
 * - rule 5 (hooks exactly once): each agent's onEnter, onExit and onResume ran exactly as its
 *   handoffs call for, in that order (onEnter once per activation, onExit once per passing,
 *   onResume, never onEnter, when resumed), each after its handoff event; an onEnter or
 *   onResume started only once every onExit of an earlier holder had ended. Exact once the
 *   session was quiescent; a prefix when the schedule closed it first.
 * - rule 6 (return resumes): a handoff to an agent that ran before resumes it, a first one does
 *   not; a task start never resumes, its return always does; every task's return reached the
 *   flow that ran it (one result per return, once quiescent).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import type { Agent } from "../Agent.ts"
import type { AgentHandoffEvent } from "../Events.ts"
import type { Violation } from "./Check.ts"
import type { HookRun, Recording } from "./Run.ts"

type Hook = "onEnter" | "onExit" | "onResume"

interface Expected {
  readonly hook: Hook
  /** The handoff event that calls for it. */
  readonly seq: number
}

const handoffsOf = (rec: Recording): ReadonlyArray<AgentHandoffEvent> =>
  rec.events.filter((e): e is AgentHandoffEvent => e.type === "agent_handoff")

/** The hooks `agent`'s handoff events call for, in order, before `upTo` (only hooks it has). */
const expectedHooks = (handoffs: ReadonlyArray<AgentHandoffEvent>, agent: Agent, upTo: number): Array<Expected> => {
  const out: Array<Expected> = []
  for (const e of handoffs) {
    if (e.seq >= upTo) break
    if (e.from === agent.name && (e.kind === "handoff" || e.kind === "return" || e.kind === "take_over")) out.push({ hook: "onExit", seq: e.seq })
    if (e.to === agent.name && !e.resumed) out.push({ hook: "onEnter", seq: e.seq })
    if (e.to === agent.name && e.resumed && (e.kind === "handoff" || e.kind === "hand_back")) out.push({ hook: "onResume", seq: e.seq })
  }
  return out.filter((x) => agent[x.hook] !== undefined)
}

const short = (hook: Hook) => hook.slice(2).toLowerCase()

const isFloorHook = (run: HookRun): run is HookRun & { readonly hook: Hook } => run.hook !== "onUserAway"

/**
 * Rule 5 over the agents the simulation knows (those of the module: it knows which hooks each has).
 *
 * @since 0.1.0
 * @category checking
 */
export const checkHooks = (rec: Recording, agents: ReadonlyArray<Agent>): Array<Violation> => {
  const out: Array<Violation> = []
  const handoffs = handoffsOf(rec)
  const settled = rec.settled
  const upTo = settled?.seq ?? Infinity
  const runs = (settled ? rec.hooks.slice(0, settled.hooks) : rec.hooks).filter(isFloorHook)
  // Each run with the handoff event that called for it, for the order across agents below.
  const matched: Array<{ readonly run: HookRun; readonly cause: number }> = []
  for (const agent of agents) {
    const expected = expectedHooks(handoffs, agent, upTo)
    const ran = runs.filter((r) => r.agent === agent.name)
    const same = ran.every((r, i) => r.hook === expected[i]?.hook)
    if (!same || (settled ? ran.length !== expected.length : ran.length > expected.length)) {
      out.push({
        rule: "rule 5",
        message: `hooks of ${agent.name} ran as [${ran.map((r) => short(r.hook)).join(", ")}] but its handoffs call for [${
          expected.map((x) => short(x.hook)).join(", ")
        }]${settled ? "" : " (closed early: a prefix)"}`
      })
      continue
    }
    ran.forEach((r, i) => {
      const cause = expected[i]!.seq
      if (r.seq <= cause) out.push({ rule: "rule 5", message: `${r.hook} of ${agent.name} started before its handoff event (seq ${cause})` })
      matched.push({ run: r, cause })
    })
  }
  // Hooks in the floor's order: an activation's hook waits for the onExits of its own pass (the
  // agent that passed the floor to it) and of every earlier one.
  for (const { run, cause } of matched) {
    if (run.hook === "onExit") continue
    for (const exit of matched) {
      if (exit.run.hook !== "onExit" || exit.cause > cause) continue
      if (exit.run.endSeq === undefined || exit.run.endSeq > run.seq) {
        out.push({
          rule: "rule 5",
          message: `${run.hook} of ${run.agent} (seq ${run.seq}) started before the onExit of ${exit.run.agent} (passed at seq ${exit.cause}) ended`
        })
      }
    }
  }
  return out
}

/**
 * Rule 6: resumed flags as the floor's history calls for, and every task's return reaching the
 * flow that ran it.
 *
 * @since 0.1.0
 * @category checking
 */
export const checkReturns = (rec: Recording): Array<Violation> => {
  const out: Array<Violation> = []
  const seen = new Set<string>()
  for (const e of handoffsOf(rec)) {
    if (e.kind === "handoff" || e.kind === "hand_back") {
      const expected = seen.has(e.to)
      if (e.resumed !== expected) {
        out.push({
          rule: "rule 6",
          message: `the handoff to ${e.to} (seq ${e.seq}) has resumed ${e.resumed}, expected ${expected} (${expected ? "its actor is paused" : "a first activation"})`
        })
      }
    }
    if (e.kind === "task" && e.resumed) out.push({ rule: "rule 6", message: `the start of task ${e.to} (seq ${e.seq}) claims to resume an actor` })
    if (e.kind === "return" && !e.resumed) out.push({ rule: "rule 6", message: `the return to ${e.to} (seq ${e.seq}) does not resume its actor` })
    seen.add(e.to)
  }
  const settled = rec.settled
  if (settled) {
    const returns = new Map<string, number>()
    for (const e of handoffsOf(rec)) {
      if (e.kind !== "return" || e.seq >= settled.seq || !e.from) continue
      const key = `${e.to} <- ${e.from}`
      returns.set(key, (returns.get(key) ?? 0) + 1)
    }
    const results = new Map<string, number>()
    for (const r of rec.taskReturns.slice(0, settled.taskReturns)) {
      const key = `${r.caller} <- ${r.task}`
      results.set(key, (results.get(key) ?? 0) + 1)
    }
    for (const key of new Set([...returns.keys(), ...results.keys()])) {
      if ((returns.get(key) ?? 0) !== (results.get(key) ?? 0)) {
        out.push({ rule: "rule 6", message: `${key}: ${returns.get(key) ?? 0} return(s) but the flow that ran the task got ${results.get(key) ?? 0} result(s)` })
      }
    }
  }
  return out
}
