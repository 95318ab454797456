/**
 * Rules 3, 4 and 12: deterministic batches, every call answered, bad input is an answer.
 */
import type { FunctionCall, FunctionCallOutput } from "../../src/ChatContext.ts"
import type { FunctionToolsExecuted } from "../../src/Events.ts"
import { type Ctx, delivery, restartOutput, toolOf, v, type Violation } from "./CheckCore.ts"
import { oddShapeIsError, type ToolSpec } from "./Scenario.ts"

const handoffCalls = (ctx: Ctx, batch: FunctionToolsExecuted) =>
  batch.calls.filter((c) => toolOf(ctx, batch.agent, c.call.name)?.kind === "handoff")

/** The handoff call that should win: the first in call order whose target can take the floor. */
export const firstValidHandoff = (ctx: Ctx, batch: FunctionToolsExecuted) => {
  if (ctx.tasks.has(batch.agent) || ctx.groups.has(batch.agent)) return undefined
  const ordered = [...handoffCalls(ctx, batch)].sort((a, b) => (ctx.itemSeq.get(a.call.id) ?? 0) - (ctx.itemSeq.get(b.call.id) ?? 0))
  return ordered.find((c) => toolOf(ctx, batch.agent, c.call.name)?.target !== batch.agent)
}

export const checkBatches = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  const position = new Map(ctx.rec.history.map((item, i) => [item.id, i]))
  for (const batch of ctx.batches) {
    // A background call's reports are checked with rule 9 (see CheckBackground.ts).
    if (batch.deferred) continue
    const callPos = batch.calls.map((c) => position.get(c.call.id) ?? -1)
    const outPos = batch.calls.map((c) => position.get(c.output.id) ?? -1)
    const sorted = (xs: ReadonlyArray<number>) => xs.every((x, i) => i === 0 || xs[i - 1]! < x)
    if (!sorted(callPos)) {
      out.push(v("rule 3", `the batch of ${batch.agent} lists its calls out of call order: ${batch.calls.map((c) => c.call.name).join(", ")}`, batch.seq))
    }
    const byCall = batch.calls.map((c, i) => [callPos[i]!, outPos[i]!, c.call.name] as const).sort((a, b) => a[0] - b[0])
    if (!sorted(byCall.map(([, o]) => o))) {
      const inHistory = [...byCall].sort((a, b) => a[1] - b[1]).map(([, , name]) => name)
      out.push(v("rule 3", `outputs of ${batch.agent}'s batch entered history as ${inHistory.join(", ")}, not in call order ${byCall.map(([, , n]) => n).join(", ")}`, batch.seq))
    }
    if (batch.calls.some((c) => (ctx.itemSeq.get(c.output.id) ?? Infinity) > batch.seq)) {
      out.push(v("rule 3", `an output of ${batch.agent}'s batch entered history after the batch was reported`, batch.seq))
    }
    if (batch.seq >= ctx.closeSeq) continue
    // A reply's batch said over a batch of its agent that already passes the floor (reported with
    // its handoff, not applied yet) hands off no second time: its transfers are refused.
    if (supersededBy(ctx, batch)) {
      for (const c of handoffCalls(ctx, batch)) {
        if (c.output.status !== "error" || !/is already passing the floor/.test(c.output.output)) {
          out.push(v("rule 3", `${batch.agent}: ${c.call.name} (${c.call.callId}) got "${c.output.output}", expected a refusal: the floor was already passing`, batch.seq))
        }
      }
      if (batch.hasHandoff) out.push(v("rule 3", `${batch.agent}'s batch reports a second handoff while its floor was already passing`, batch.seq))
      continue
    }
    const winner = firstValidHandoff(ctx, batch)
    for (const c of handoffCalls(ctx, batch)) {
      if (c.output.status === "cancelled" && cancelledByTakeOver(ctx, c.call, ctx.itemSeq.get(c.output.id) ?? 0)) continue
      const expected = c === winner ? "handoff" : "error"
      if (c.output.status !== expected) {
        out.push(v("rule 3", `${batch.agent}: ${c.call.name} (${c.call.callId}) got a "${c.output.status}" output, expected "${expected}"${c === winner ? " (the first handoff in call order wins)" : ""}`, batch.seq))
      }
    }
    if (winner) {
      const target = toolOf(ctx, batch.agent, winner.call.name)!.target
      if (!batch.hasHandoff || batch.handoffTo !== target) {
        out.push(v("rule 3", `${batch.agent}'s batch should hand off to ${target} (${winner.call.name}) but reports ${batch.hasHandoff ? `a handoff to ${batch.handoffTo}` : "no handoff"}`, batch.seq))
      }
      out.push(...checkContextReached(ctx, batch, target!, toolOf(ctx, batch.agent, winner.call.name)!))
    } else if (ctx.specs.has(batch.agent) && !ctx.tasks.has(batch.agent) && batch.hasHandoff) {
      out.push(v("rule 3", `${batch.agent}'s batch reports a handoff to ${batch.handoffTo} without a valid handoff call`, batch.seq))
    }
  }
  return out
}

/** An earlier batch of the agent that reported a handoff not yet applied when `batch` settled,
 * whose refusals say the floor was already passing. */
const supersededBy = (ctx: Ctx, batch: FunctionToolsExecuted): FunctionToolsExecuted | undefined => {
  if (!batch.calls.some((c) => c.output.status === "error" && /is already passing the floor/.test(c.output.output))) return undefined
  return ctx.batches.find((b) =>
    b.agent === batch.agent && b.seq < batch.seq && b.hasHandoff &&
    // (a task the agent lent the floor to meanwhile is no pass)
    !ctx.handoffs.some((e) => e.from === batch.agent && e.kind === "handoff" && e.seq > b.seq && e.seq < batch.seq)
  )
}

/** With the "full" policy, the new holder's next model request carries the batch's calls. */
const checkContextReached = (ctx: Ctx, batch: FunctionToolsExecuted, target: string, tool: ToolSpec): Array<Violation> => {
  if ((tool.context ?? "full") !== "full") return []
  const pass = ctx.handoffs.find((e) => e.seq > batch.seq && e.from === batch.agent)
  if (!pass || pass.to !== target || pass.kind !== "handoff") return []
  // That pass is this batch's only if the batch's handoff was applied: not refused (the agent had
  // lent the floor to a task meanwhile), and no later batch of the agent came first.
  const between = (seq: number) => seq > batch.seq && seq < pass.seq
  if (ctx.rec.events.some((e) => e.type === "handoff_not_applied" && e.agent === batch.agent && between(e.seq))) return []
  if (ctx.batches.some((b) => b.agent === batch.agent && between(b.seq))) return []
  const until = ctx.handoffs.find((e) => e.seq > pass.seq)?.seq ?? Infinity
  const request = ctx.rec.requests.find((r) => r.agent === target && r.seq > pass.seq && r.seq < until)
  if (!request) return []
  // A process that died between the pass and the new holder's activation took the context being
  // handed over with it (docs/durability.md): the joined log of the crash simulation allows it.
  if (ctx.resumedAt !== undefined && pass.seq < ctx.resumedAt && request.seq >= ctx.resumedAt) return []
  const missing = batch.calls.filter((c) => !request.callIds.includes(c.call.callId)).map((c) => c.call.name)
  return missing.length === 0 ? [] : [
    v("rule 3", `${target}'s first model request after the handoff lacks ${missing.join(", ")} of ${batch.agent}'s batch (policy full)`, request.seq)
  ]
}

export const checkCalls = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  const history = ctx.rec.history
  const calls = history.filter((i): i is FunctionCall => i._tag === "FunctionCall")
  const outputs = history.filter((i): i is FunctionCallOutput => i._tag === "FunctionCallOutput")
  const index = new Map<string, number>(history.map((item, i) => [item.id, i]))
  for (const call of calls) {
    const answers = outputs.filter((o) => o.callId === call.callId)
    if (answers.length !== 1) {
      out.push(v("rule 4", `call ${call.name} (${call.callId}) of ${call.agent} has ${answers.length} outputs`, ctx.itemSeq.get(call.id)))
      continue
    }
    const answer = answers[0]!
    if (index.get(answer.id)! < index.get(call.id)!) out.push(v("rule 4", `the output of ${call.name} (${call.callId}) comes before its call`))
    if (answer.name !== call.name) out.push(v("rule 4", `the output of ${call.name} (${call.callId}) is named ${answer.name}`))
    out.push(...checkAnswer(ctx, call, answer))
  }
  for (const output of outputs) {
    if (!calls.some((c) => c.callId === output.callId)) out.push(v("rule 4", `output ${output.name} (${output.callId}) has no call`))
  }
  return out
}

const validTyped = (raw: string): boolean => {
  try {
    const parsed = JSON.parse(raw) as { n?: unknown }
    return typeof parsed === "object" && parsed !== null && Number.isInteger(parsed.n)
  } catch {
    return false
  }
}

/** A task running when a person took the floor is cancelled, and its calls with it. */
const cancelledByTakeOver = (ctx: Ctx, call: FunctionCall, outputSeq: number): boolean => {
  const callSeq = ctx.itemSeq.get(call.id) ?? 0
  return call.agent !== undefined && ctx.tasks.has(call.agent) &&
    ctx.handoffs.some((e) => e.kind === "take_over" && e.seq > callSeq && e.seq <= outputSeq)
}

/** The output's status matches what the tool does. */
const checkAnswer = (ctx: Ctx, call: FunctionCall, answer: FunctionCallOutput): Array<Violation> => {
  const seq = ctx.itemSeq.get(answer.id) ?? 0
  // A call of the crash simulation's first life answered in its second is answered by the resume
  // ("interrupted by a restart", or the result of the task it awaited as is), not by its tool.
  if (ctx.resumedAt !== undefined && (ctx.itemSeq.get(call.id) ?? 0) < ctx.resumedAt && seq >= ctx.resumedAt) return []
  if (answer.status === "cancelled" || answer.status === "interrupted") {
    if (seq >= ctx.closeSeq || restartOutput(ctx, answer, seq) || (call.agent && ctx.tasks.has(call.agent) && delivery(call.callId))) return []
    if (cancelledByTakeOver(ctx, call, seq)) return []
    if (/replaced by a newer call/.test(answer.output) && call.agent && toolOf(ctx, call.agent, call.name)?.onDuplicate === "replace") return []
    return [v("rule 4", `${call.name} (${call.callId}) was ${answer.status} while the session was open`, seq)]
  }
  if (answer.status === "handoff") return []
  const tool = call.agent ? toolOf(ctx, call.agent, call.name) : undefined
  if (tool?.kind === "longRunning") return checkBackgroundAnswer(ctx, call, answer, tool)
  let expected: "ok" | "error"
  if (!tool) {
    if (ctx.groups.has(call.agent ?? "") || call.name === "return_to_earlier_step") return []
    expected = "error"
  } else {
    switch (tool.kind) {
      case "failing":
      case "dying":
      case "waitsForItself":
        expected = "error"
        break
      case "odd":
        expected = oddShapeIsError(tool.shape!) ? "error" : "ok"
        break
      case "typed":
        expected = validTyped(call.arguments) ? "ok" : "error"
        break
      case "handoff":
        return [] // checked with its batch (rule 3)
      case "timed":
        // Its timeout output, and what it is checked against, in CheckWaits.ts.
        expected = ctx.rec.timed.find((t) => t.callId === call.callId)?.long ? "error" : "ok"
        break
      case "approval": {
        // Run once approved; answered with why not once rejected (by the program, a barge-in or
        // a handoff); a close before any answer is the cancelled case above.
        const answered = ctx.rec.events.find((e) => e.type === "tool_approval_answered" && e.callId === call.callId)
        if (!answered || answered.type !== "tool_approval_answered") {
          return [v("rule 4", `${call.agent}: ${call.name} (${call.callId}) was answered "${answer.status}" without its approval being answered`, seq)]
        }
        if (!answered.approved && !/was not approved/.test(answer.output)) {
          return [v("rule 4", `${call.agent}: ${call.name} (${call.callId}) was rejected (${answered.by}) but its output says "${answer.output}"`, seq)]
        }
        expected = answered.approved ? "ok" : "error"
        break
      }
      default:
        expected = "ok"
    }
  }
  if (answer.status === expected) return []
  const rule = expected === "error" ? "rule 12" : "rule 4"
  return [v(rule, `${call.agent}: ${call.name}(${call.arguments}) got a "${answer.status}" output "${answer.output}", expected "${expected}"`, ctx.itemSeq.get(answer.id))]
}


/** A long-running call: progress first (or a refused duplicate), then its reports and result. */
const checkBackgroundAnswer = (ctx: Ctx, call: FunctionCall, answer: FunctionCallOutput, tool: ToolSpec): Array<Violation> => {
  const d = delivery(call.callId)
  const seq = ctx.itemSeq.get(answer.id)
  const expect = (ok: boolean, what: string) =>
    ok ? [] : [v("rule 4", `${call.agent}: ${call.name} (${call.callId}) got a "${answer.status}" output "${answer.output}", expected ${what}`, seq)]
  if (!d) {
    const refused = answer.status === "error" && /is already running/.test(answer.output)
    return expect(answer.status === "progress" || (refused && tool.onDuplicate === "reject"), `"progress"${tool.onDuplicate === "reject" ? " or a refused duplicate" : ""}`)
  }
  if (d.kind === "progress") return expect(answer.status === "progress", `"progress"`)
  if (tool.target) {
    const notTransferred = answer.status === "error" && /^Not transferred to /.test(answer.output)
    return expect(answer.status === "handoff" || notTransferred, `"handoff" or "not transferred"`)
  }
  return expect(answer.status === "ok", `"ok"`)
}
