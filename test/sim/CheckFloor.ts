/**
 * Rules 1 and 2: one floor, silence after handoff.
 */
import type { SessionEvent } from "../../src/Events.ts"
import { firstValidHandoff } from "./CheckBatches.ts"
import { agentOf, answeredByRestart, type Ctx, delivery, describeEvent, v, type Violation } from "./CheckCore.ts"

/**
 * Events allowed while the session closes: the outputs of batches cut by the close (settled or
 * cancelled) and background reports flushed into history, what a cut speech had said, the end of
 * speeches. Nothing new: no model call, no new message or call, no state change (rule 11).
 */
const closingLeftover = (e: SessionEvent): boolean =>
  (e.type === "conversation_item_added" &&
    (e.item._tag === "FunctionCallOutput" || (e.item._tag === "Message" && e.item.interrupted) ||
      (e.item._tag === "FunctionCall" && delivery(e.item.callId) !== undefined))) ||
  e.type === "speech_finished"

/**
 * Items an agent records without the floor by design: a background handoff result that could
 * not apply ("not transferred", rule 9), and the reports a finished task's actor flushes into
 * its history when it closes.
 */
const keptWhilePaused = (ctx: Ctx, e: SessionEvent, returned: ReadonlySet<string>): boolean => {
  if (e.type !== "conversation_item_added" || (e.item._tag !== "FunctionCall" && e.item._tag !== "FunctionCallOutput")) return false
  const d = delivery(e.item.callId)
  if (!d) return false
  return ctx.notTransferred.has(e.item.callId) || (e.agent !== undefined && ctx.tasks.has(e.agent) && returned.has(e.agent))
}

/**
 * Rule 1 (the floor as the handoff events say; every change one atomic step; input only to the
 * holder) and the event part of rule 2 (nothing from an agent after it passed the floor).
 *
 * Two exemptions, as docs/rules.md has them ("its background tools may keep running"; tool calls
 * are never cut in half): calls still running when an agent lost the floor (a forced handoff
 * during its tool phase) get their outputs later; and a speech still playing when its agent lost
 * the floor (its tools running, or its batch settled and waiting out an interjection that handed
 * off first) reports its end then. Such an end says nothing to the user: any other event is
 * still a violation.
 */
export const checkFloor = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  const events = ctx.rec.events
  const held = new Set<string>()
  const open = new Map<string, Set<string>>()
  const leftovers = new Map<string, ReadonlySet<string>>()
  const returned = new Set<string>()
  // Speeches created and not yet finished, by agent; those of an agent that lost the floor.
  const unfinished = new Map<string, Set<string>>()
  const endsLater = new Set<string>()
  let holder: string | undefined
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!
    if (e.type === "agent_handoff") {
      const before = events[i - 1]
      if (
        !(before?.type === "conversation_item_added" && before.item._tag === "AgentHandoff" && before.item.to === e.to &&
          before.item.from === e.from && before.seq === e.seq - 1)
      ) out.push(v("rule 1", `the handoff to ${e.to} is not one atomic step with its history record`, e.seq))
      if (e.kind === "start" ? holder !== undefined : e.from !== holder) {
        out.push(v("rule 1", `${e.kind} ${e.from ?? "-"} -> ${e.to} while ${holder ?? "nobody"} held the floor`, e.seq))
      }
      if (e.from) leftovers.set(e.from, new Set(open.get(e.from) ?? []))
      if (e.from) for (const id of unfinished.get(e.from) ?? []) endsLater.add(id)
      if (e.from && e.kind === "return") returned.add(e.from)
      if (e.kind === "task") returned.delete(e.to)
      leftovers.delete(e.to)
      holder = e.to
      held.add(e.to)
      continue
    }
    if (e.type === "conversation_item_added" && e.agent) {
      const calls = open.get(e.agent) ?? new Set<string>()
      open.set(e.agent, calls)
      if (e.item._tag === "FunctionCall") calls.add(e.item.callId)
      if (e.item._tag === "FunctionCallOutput") calls.delete(e.item.callId)
    }
    if (e.type === "speech_created") {
      const ids = unfinished.get(e.agent) ?? new Set<string>()
      unfinished.set(e.agent, ids)
      ids.add(e.speechId)
    }
    if (e.type === "speech_finished") unfinished.get(e.agent)?.delete(e.speechId)
    const agent = agentOf(e)
    if (agent === undefined) continue
    if (e.type === "conversation_item_added" && e.item._tag === "AgentHandoff") continue
    if (e.seq >= ctx.closeSeq) {
      // Closing ends what runs; nothing new starts (rule 11).
      if (!closingLeftover(e)) out.push(v("rule 11", `${describeEvent(e)} after the session started closing`, e.seq))
      continue
    }
    if (agent === holder) continue
    if (keptWhilePaused(ctx, e, returned) || answeredByRestart(ctx, e)) continue
    if (e.type === "speech_finished" && endsLater.has(e.speechId)) continue
    const left = leftovers.get(agent)
    if (left && left.size > 0) {
      if (e.type === "conversation_item_added" && e.item._tag === "FunctionCallOutput" && left.has(e.item.callId)) continue
      if (e.type === "speech_finished") continue
    }
    if (e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user") {
      out.push(v("rule 1", `user input went to ${agent} while ${holder ?? "nobody"} held the floor`, e.seq))
    } else if (held.has(agent)) {
      out.push(v("rule 2", `${describeEvent(e)} after it passed the floor (${holder ?? "nobody"} holds it)`, e.seq))
    } else {
      out.push(v("rule 1", `${describeEvent(e)} which never held the floor (${holder ?? "nobody"} holds it)`, e.seq))
    }
  }
  // A forced handoff's answer matches what happened.
  for (const h of ctx.rec.handoffs) {
    if (h.outcome === undefined || h.answeredSeq === undefined) continue
    const window = (e: SessionEvent) => e.seq >= h.seq && e.seq < h.answeredSeq!
    if (h.outcome.startsWith("Applied")) {
      if (!ctx.handoffs.some((e) => window(e) && e.to === h.target && e.kind === "handoff")) {
        out.push(v("rule 1", `session.handoff(${h.target}) answered ${h.outcome} but no handoff to ${h.target} happened`))
      }
    } else if (!/session is closed/.test(h.outcome) && !events.some((e) => window(e) && e.type === "handoff_not_applied")) {
      out.push(v("rule 1", `session.handoff(${h.target}) answered ${h.outcome} without a handoff_not_applied event`))
    }
  }
  return out
}

export const checkSilence = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  for (const r of ctx.rec.requests) {
    if (ctx.rec.closeOrder !== undefined && r.order > ctx.rec.closeOrder) {
      out.push(v("rule 11", `model request #${r.index} by ${r.agent} after the session started closing`, r.seq))
    } else if (r.holder !== r.agent) {
      out.push(v("rule 2", `model request #${r.index} by ${r.agent} while ${r.holder ?? "nobody"} held the floor`, r.seq))
    }
  }
  // A batch with a handoff never produces a follow-up on the outgoing agent.
  for (const batch of ctx.batches) {
    if (batch.deferred || batch.seq >= ctx.closeSeq || !firstValidHandoff(ctx, batch)) continue
    // A response the realtime server starts by itself as the user speaks, while the agent still
    // holds the floor and its pass waits for what is said over the batch, is the server's, and
    // baton cancels it unheard (the turn is held for the next holder): not a call of the agent's.
    const cancelledByServer = (r: typeof ctx.rec.requests[number]) => {
      if (!r.byServer || r.holder !== batch.agent) return false
      const pass = ctx.handoffs.find((e) => e.from === batch.agent && e.seq > r.seq)?.seq ?? Infinity
      // Unheard: the agent said nothing between the server's start and its pass.
      return !ctx.rec.events.some((e) =>
        e.seq >= r.seq && e.seq < pass && e.type === "conversation_item_added" && e.agent === batch.agent &&
        e.item._tag === "Message" && e.item.role === "assistant"
      )
    }
    const next = ctx.rec.requests.find((r) => r.agent === batch.agent && r.seq > batch.seq && !cancelledByServer(r))
    if (!next || next.seq >= ctx.closeSeq) continue
    const back = ctx.handoffs.some((e) => e.to === batch.agent && e.seq > batch.seq && e.seq < next.seq)
    if (!back) {
      out.push(v("rule 2", `${batch.agent} made model request #${next.index} after its batch with a handoff (seq ${batch.seq})`, next.seq))
    }
  }
  return out
}
