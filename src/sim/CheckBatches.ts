/**
 * Rules 3 and 9 on a user's agents, from the events and the history (a transfer's output says
 * what became of it: status `handoff`, or an error `Not transferred to <agent>: <reason>.`) and
 * from the runtime's observer (when each background handler ended, and who held the floor then):
 *
 * - rule 3 (deterministic batches): a batch lists its calls in call order and their outputs
 *   entered history in call order, before the batch was reported; at most one call hands off,
 *   and then the batch says so, to that agent; a transfer refused as not the first names the
 *   one that won, an earlier call of the batch; a batch said over one that already passes the
 *   floor hands off no second time.
 * - rule 9 (deferred handoffs): a background call's handoff result is reported by a deferred
 *   batch naming its target, then applied (or refused with a `handoff_not_applied` event), and
 *   only if its agent held the floor when the handler ended; a result not transferred says why
 *   in an event, and not "no longer holds the floor" while the agent held it; a call's reports
 *   enter history in the order made (its own output, progress, the result last); once
 *   quiescent the holder has every result that had finished; after close each background call
 *   has one result.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import type { Agent } from "../Agent.ts"
import type { FunctionCall, FunctionCallOutput } from "../ChatContext.ts"
import type { AgentHandoffEvent, FunctionToolsExecuted } from "../Events.ts"
import type { Violation } from "./Check.ts"
import type { Recording } from "./Run.ts"

const REFUSED = /^Not transferred to (.+?): (.*)\.$/s

/** A transfer's output: applied, or refused with the target and the reason. */
const transfer = (output: FunctionCallOutput): { readonly applied: true } | { readonly applied: false; readonly to: string; readonly reason: string } | undefined => {
  if (output.status === "handoff") return { applied: true }
  const m = output.status === "error" ? REFUSED.exec(output.output) : null
  return m ? { applied: false, to: m[1]!, reason: m[2]! } : undefined
}

/** A background call's later report is recorded as its own pair: `<callId>:progress<n>` / `<callId>:result`. */
const DELIVERY = /^(.*):(progress\d+|result)$/

const delivery = (callId: string): { readonly call: string; readonly kind: "progress" | "result" } | undefined => {
  const m = DELIVERY.exec(callId)
  return m ? { call: m[1]!, kind: m[2] === "result" ? "result" : "progress" } : undefined
}

const batchesOf = (rec: Recording) => rec.events.filter((e): e is FunctionToolsExecuted => e.type === "function_tools_executed")
const handoffsOf = (rec: Recording) => rec.events.filter((e): e is AgentHandoffEvent => e.type === "agent_handoff")

/**
 * Rule 3 over every batch reported while the session was open (its order checks over every batch).
 *
 * @since 0.1.0
 * @category checking
 */
export const checkBatches = (rec: Recording, agents: ReadonlyArray<Agent>): Array<Violation> => {
  const out: Array<Violation> = []
  const v = (message: string) => out.push({ rule: "rule 3", message })
  const position = new Map(rec.history.map((item, i) => [item.id, i]))
  const itemSeq = new Map<string, number>()
  for (const e of rec.events) if (e.type === "conversation_item_added") itemSeq.set(e.item.id, e.seq)
  const tasks = new Set(agents.filter((a) => a.task !== undefined).map((a) => a.name))
  const known = new Set(agents.map((a) => a.name))
  for (const batch of batchesOf(rec)) {
    if (batch.deferred) continue
    const names = batch.calls.map((c) => c.call.name).join(", ")
    const callPos = batch.calls.map((c) => position.get(c.call.id) ?? -1)
    const sorted = (xs: ReadonlyArray<number>) => xs.every((x, i) => i === 0 || xs[i - 1]! < x)
    if (!sorted(callPos)) v(`the batch of ${batch.agent} (seq ${batch.seq}) lists its calls out of call order: ${names}`)
    const byCall = batch.calls.map((c, i) => ({ c, call: callPos[i]!, output: position.get(c.output.id) ?? -1 })).sort((a, b) => a.call - b.call)
    if (!sorted(byCall.map((x) => x.output))) {
      const inHistory = [...byCall].sort((a, b) => a.output - b.output).map((x) => x.c.call.name)
      v(`outputs of ${batch.agent}'s batch (seq ${batch.seq}) entered history as ${inHistory.join(", ")}, not in call order ${byCall.map((x) => x.c.call.name).join(", ")}`)
    }
    if (batch.calls.some((c) => (itemSeq.get(c.output.id) ?? Infinity) > batch.seq)) {
      v(`an output of ${batch.agent}'s batch (seq ${batch.seq}) entered history after the batch was reported`)
    }
    if (batch.seq >= rec.closeSeq) continue
    const transfers = byCall.map((x) => ({ call: x.c.call, outcome: transfer(x.c.output) })).filter((t) => t.outcome !== undefined)
    const applied = transfers.filter((t) => t.outcome!.applied)
    if (applied.length > 1) v(`${batch.agent}'s batch (seq ${batch.seq}) hands off ${applied.length} times: ${applied.map((t) => t.call.name).join(", ")}`)
    if (applied.length > 0 && !batch.hasHandoff) v(`${batch.agent}'s batch (seq ${batch.seq}) has a handoff output (${applied[0]!.call.name}) but reports no handoff`)
    if (applied.length === 0 && batch.hasHandoff && known.has(batch.agent) && !tasks.has(batch.agent)) {
      v(`${batch.agent}'s batch (seq ${batch.seq}) reports a handoff to ${batch.handoffTo} without a handoff output`)
    }
    const passing = transfers.some((t) => !t.outcome!.applied && /is already passing the floor/.test(t.outcome!.reason))
    if (passing && (applied.length > 0 || batch.hasHandoff)) v(`${batch.agent}'s batch (seq ${batch.seq}) hands off while its floor was already passing`)
    for (const t of transfers) {
      const o = t.outcome!
      if (o.applied) continue
      const first = /^only the first transfer of a response is applied \(to (.+)\)$/.exec(o.reason)
      if (!first) continue
      const winner = applied[0]
      if (!winner || position.get(winner.call.id)! > position.get(t.call.id)!) {
        v(`${batch.agent}: ${t.call.name} was refused as not the first transfer, but no earlier call of its batch (seq ${batch.seq}) handed off`)
      } else if (batch.handoffTo !== first[1]) {
        v(`${batch.agent}: ${t.call.name} was refused in favour of ${first[1]}, but the batch (seq ${batch.seq}) hands off to ${batch.handoffTo}`)
      }
    }
  }
  return out
}

/**
 * Rule 9 over the background calls (those whose own output is `progress`) and their reports.
 *
 * @since 0.1.0
 * @category checking
 */
export const checkDeferredHandoffs = (rec: Recording): Array<Violation> => {
  const out: Array<Violation> = []
  const v = (message: string) => out.push({ rule: "rule 9", message })
  const events = rec.events
  const handoffs = handoffsOf(rec)
  const batches = batchesOf(rec)
  const outputSeq = new Map<string, number>()
  for (const e of events) if (e.type === "conversation_item_added" && e.item._tag === "FunctionCallOutput") outputSeq.set(e.item.callId, e.seq)
  const holderAt = (seq: number) => {
    let holder: string | undefined
    for (const e of handoffs) {
      if (e.seq >= seq) break
      holder = e.to
    }
    return holder
  }
  const passedBetween = (agent: string, from: number, to: number) => handoffs.some((e) => e.from === agent && e.seq >= from && e.seq < to)
  const gotBackBetween = (agent: string, from: number, to: number) => handoffs.some((e) => e.to === agent && e.seq >= from && e.seq < to)

  for (const item of rec.history) {
    if (item._tag !== "FunctionCallOutput" || !item.agent) continue
    const d = delivery(item.callId)
    const outcome = d?.kind === "result" ? transfer(item) : undefined
    if (!d || !outcome) continue
    const seq = outputSeq.get(item.callId) ?? 0
    if (seq >= rec.closeSeq) continue
    const agent = item.agent
    const finish = rec.finishes.find((f) => f.callId === d.call)
    const what = `${agent}'s ${item.name} (${d.call})`
    if (outcome.applied) {
      const batch = batches.find((b) => b.calls.some((c) => c.output.id === item.id))
      if (!batch || !batch.deferred || !batch.hasHandoff || batch.handoffTo === undefined) {
        v(`${what} handed off without a deferred function_tools_executed event naming its target`)
        continue
      }
      const target = batch.handoffTo
      const next = events.find((e) =>
        e.seq > batch.seq &&
        ((e.type === "agent_handoff" && e.from === agent) || (e.type === "handoff_not_applied" && e.agent === agent && e.to === target))
      )
      if (!next && batch.seq < rec.closeSeq && rec.settled) v(`${what}: the deferred handoff to ${target} was neither applied nor refused`)
      if (next?.type === "agent_handoff" && next.to !== target) v(`${what}: after the deferred handoff to ${target} the floor went to ${next.to} (seq ${next.seq})`)
      if (finish && finish.holder !== agent && !gotBackBetween(agent, finish.seq, seq)) {
        v(`${what} handed off although ${agent} did not hold the floor when it finished (${finish.holder ?? "nobody"} did)`)
      }
    } else {
      if (!events.some((e) => e.type === "handoff_not_applied" && e.agent === agent && e.to === outcome.to && e.seq > seq && e.seq <= seq + 2)) {
        v(`${what} was not transferred to ${outcome.to} and no handoff_not_applied event says why`)
      }
      if (/no longer holds the floor/.test(outcome.reason)) {
        if (holderAt(seq) === agent) v(`${what} was refused as "no longer holds the floor" while ${agent} held it (seq ${seq})`)
        if (finish && finish.holder === agent && !passedBetween(agent, finish.seq, seq)) {
          v(`${what}: ${agent} held the floor when the tool finished and kept it, yet the handoff was not applied`)
        }
      }
    }
  }
  out.push(...checkReportOrder(rec, outputSeq))
  // Once quiescent, the holder was told every result that had finished (unless the call's own
  // output was not in history yet: its batch waited for a sibling).
  const settled = rec.settled
  if (settled) {
    for (const f of rec.finishes) {
      if (f.seq >= settled.seq || (outputSeq.get(`${f.callId}:result`) ?? Infinity) < settled.seq) continue
      if ((outputSeq.get(f.callId) ?? Infinity) >= settled.seq) continue
      if (holderAt(settled.seq) === f.agent) v(`the result of ${f.agent}'s ${f.tool} (${f.callId}) finished at seq ${f.seq} but was not recorded once quiescent`)
    }
  }
  // After close, a call that went to the background has exactly one result in history.
  for (const item of rec.history) {
    if (item._tag !== "FunctionCallOutput" || item.status !== "progress" || delivery(item.callId)) continue
    const count = rec.history.filter((i) => i._tag === "FunctionCallOutput" && i.callId === `${item.callId}:result`).length
    if (count !== 1) v(`${item.agent}'s background call ${item.name} (${item.callId}) has ${count} results in history after close`)
  }
  return out
}

/** A background call's reports enter history in the order made: its own output first, then its
 * progress reports, its result last. */
const checkReportOrder = (rec: Recording, outputSeq: ReadonlyMap<string, number>): Array<Violation> => {
  const out: Array<Violation> = []
  const background = new Set(
    rec.history.filter((i): i is FunctionCallOutput => i._tag === "FunctionCallOutput" && i.status === "progress" && !delivery(i.callId)).map((i) => i.callId)
  )
  for (const item of rec.history) {
    if (item._tag !== "FunctionCall" || !background.has(item.callId)) continue
    const call: FunctionCall = item
    const own = outputSeq.get(call.callId)
    const result = outputSeq.get(`${call.callId}:result`)
    const progress = [...outputSeq].filter(([id]) => id.startsWith(`${call.callId}:progress`)).map(([, seq]) => seq)
    const first = Math.min(result ?? Infinity, ...progress)
    if (own !== undefined && first < own) out.push({ rule: "rule 9", message: `a report of ${call.agent}'s ${call.name} (${call.callId}) entered history before the call's own output` })
    if (progress.some((seq) => result !== undefined && seq > result)) {
      out.push({ rule: "rule 9", message: `a progress report of ${call.agent}'s ${call.name} (${call.callId}) entered history after its result` })
    }
  }
  return out
}
