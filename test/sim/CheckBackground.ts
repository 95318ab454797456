/**
 * Rule 9: deferred handoffs and the other reports of long-running (background) tools.
 */
import { type Ctx, delivery, toolOf, v, type Violation } from "./CheckCore.ts"
import { SESSION } from "./Interpret.ts"

/** Who held the floor just before `seq`, as the handoff events say. */
const holderAt = (ctx: Ctx, seq: number): string | undefined => {
  let holder: string | undefined
  for (const e of ctx.handoffs) {
    if (e.seq >= seq) break
    holder = e.to
  }
  return holder
}

const passedBetween = (ctx: Ctx, agent: string, from: number, to: number) =>
  ctx.handoffs.some((e) => e.from === agent && e.seq >= from && e.seq < to)
const gotBackBetween = (ctx: Ctx, agent: string, from: number, to: number) =>
  ctx.handoffs.some((e) => e.to === agent && e.seq >= from && e.seq < to)

/**
 * Rule 9: a long-running tool that returns a handoff hands off when it finishes if its agent
 * still holds the floor, reported by the same `function_tools_executed` event as an immediate
 * handoff (marked deferred); otherwise its result is kept in that agent's history and a
 * `handoff_not_applied` event says why. Every finished result is recorded once quiescent.
 */
export const checkDeferredHandoffs = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  const events = ctx.rec.events
  for (const item of ctx.rec.history) {
    if (item._tag !== "FunctionCallOutput" || !item.agent) continue
    const d = delivery(item.callId)
    const tool = toolOf(ctx, item.agent, item.name)
    if (d?.kind !== "result" || tool?.kind !== "longRunning" || !tool.target) continue
    const seq = ctx.outputSeq.get(item.callId) ?? 0
    if (seq >= ctx.closeSeq) continue
    const agent = item.agent
    // A session tool's call belongs to no agent: whoever holds the floor takes its result.
    const finish = ctx.rec.finishes.find((f) => f.callId === d.call && f.agent !== SESSION)
    const what = `${agent}'s ${item.name} (${d.call})`
    if (item.status === "handoff") {
      const batch = ctx.batches.find((b) => b.calls.some((c) => c.output.id === item.id))
      if (!batch || !batch.deferred || !batch.hasHandoff || batch.handoffTo !== tool.target) {
        out.push(v("rule 9", `${what} handed off without a deferred function_tools_executed event naming ${tool.target}`, seq))
        continue
      }
      const next = events.find((e) =>
        e.seq > batch.seq &&
        ((e.type === "agent_handoff" && e.from === agent) || (e.type === "handoff_not_applied" && e.agent === agent && e.to === tool.target))
      )
      if (!next && batch.seq < ctx.closeSeq && ctx.rec.settled) out.push(v("rule 9", `${what}: the deferred handoff to ${tool.target} was neither applied nor refused`, batch.seq))
      if (next?.type === "agent_handoff" && next.to !== tool.target) out.push(v("rule 9", `${what}: after the deferred handoff to ${tool.target} the floor went to ${next.to}`, next.seq))
      if (finish && finish.holder !== agent && !gotBackBetween(ctx, agent, finish.seq, seq)) {
        out.push(v("rule 9", `${what} handed off although ${agent} did not hold the floor when it finished`, seq))
      }
    } else if (item.status === "error" && /^Not transferred/.test(item.output)) {
      if (!events.some((e) => e.type === "handoff_not_applied" && e.agent === agent && e.to === tool.target && e.seq > seq && e.seq <= seq + 2)) {
        out.push(v("rule 9", `${what} was not transferred to ${tool.target} and no handoff_not_applied event says why`, seq))
      }
      if (/no longer holds the floor/.test(item.output)) {
        if (holderAt(ctx, seq) === agent) out.push(v("rule 9", `${what} was refused as "no longer holds the floor" while ${agent} held it`, seq))
        if (finish && finish.holder === agent && !passedBetween(ctx, agent, finish.seq, seq)) {
          out.push(v("rule 9", `${what}: ${agent} held the floor when the tool finished and kept it, yet the handoff was not applied`, seq))
        }
      }
    }
  }
  out.push(...checkReportOrder(ctx))
  // Once quiescent, every finished handoff result is decided, and the holder was told its results
  // (unless the call's own output is not in history yet: its batch waits for a sibling).
  const settled = ctx.rec.settled
  if (settled) {
    for (const f of ctx.rec.finishes) {
      if (f.seq >= settled.seq || (ctx.outputSeq.get(`${f.callId}:result`) ?? Infinity) < settled.seq) continue
      if ((ctx.outputSeq.get(f.callId) ?? Infinity) >= settled.seq) continue
      const tool = toolOf(ctx, f.agent, f.tool)
      if (tool?.target || settled.holder === f.agent || f.agent === SESSION) {
        out.push(v("rule 9", `the result of ${f.agent}'s ${f.tool} (${f.callId}) finished at seq ${f.seq} but was not recorded once quiescent`, f.seq))
      }
    }
  }
  // After close, a call that went to the background keeps exactly one result in history.
  for (const item of ctx.rec.history) {
    if (item._tag !== "FunctionCallOutput" || item.status !== "progress" || delivery(item.callId)) continue
    const count = ctx.rec.history.filter((i) => i._tag === "FunctionCallOutput" && i.callId === `${item.callId}:result`).length
    if (count !== 1) out.push(v("rule 9", `${item.agent}'s background call ${item.name} (${item.callId}) has ${count} results in history after close`))
  }
  return out
}

/**
 * A background call's reports enter history in the order they were made: its own output (the
 * first progress) first, then its later progress reports, its result last.
 */
const checkReportOrder = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  for (const item of ctx.rec.history) {
    if (item._tag !== "FunctionCall" || !item.agent || delivery(item.callId) || toolOf(ctx, item.agent, item.name)?.kind !== "longRunning") continue
    const own = ctx.outputSeq.get(item.callId)
    const result = ctx.outputSeq.get(`${item.callId}:result`)
    const progress = [...ctx.outputSeq].filter(([id]) => id.startsWith(`${item.callId}:progress`)).map(([, seq]) => seq)
    const first = Math.min(result ?? Infinity, ...progress)
    if (own !== undefined && first < own) {
      out.push(v("rule 9", `a report of ${item.agent}'s ${item.name} (${item.callId}) entered history before the call's own output`, first))
    }
    const late = progress.filter((seq) => result !== undefined && seq > result)
    if (late.length > 0) {
      out.push(v("rule 9", `a progress report of ${item.agent}'s ${item.name} (${item.callId}) entered history after its result`, late[0]))
    }
  }
  return out
}
