/**
 * Rules 7 and 8 for realtime scenarios (agents talk through the scripted realtime model):
 * connections are reused when the model allows it and never by accident, and late or stray
 * provider events are harmless.
 */
import { type Ctx, v, type Violation } from "./CheckCore.ts"

/** Who held the floor just before `seq`, as the handoff events say. */
const holderAt = (ctx: Ctx, seq: number): string | undefined => {
  let holder: string | undefined
  for (const e of ctx.handoffs) {
    if (e.seq >= seq) break
    holder = e.to
  }
  return holder
}

/**
 * Rule 7: every response is generated with the configuration of the agent that asked for it (the
 * connection was updated, or opened, for it first); a model whose instructions are fixed never
 * serves two agents on one connection; a model that can change everything keeps one connection
 * for the whole session unless an update failed (fallback) or a connection dropped or hung; no
 * connection outlives the session.
 */
export const checkRealtimeReuse = (ctx: Ctx): Array<Violation> => {
  const spec = ctx.rec.scenario.realtime
  if (!spec) return []
  const out: Array<Violation> = []
  const connections = ctx.rec.connections
  for (const c of connections) {
    for (const r of c.responses) {
      if (!r.agent || !ctx.specs.has(r.agent)) continue
      if (r.instructions !== `You are ${r.agent}.`) {
        out.push(v("rule 7", `a response for ${r.agent} on ${c.id} was generated with the instructions "${r.instructions}"`))
      }
    }
    const agents = new Set(c.responses.flatMap((r) => (r.agent ? [r.agent] : [])))
    if (spec.capabilities === "gemini" && agents.size > 1) {
      out.push(v("rule 7", `${c.id} served ${[...agents].join(", ")} although its instructions cannot change`))
    }
    if (!c.closed) out.push(v("rule 11", `realtime connection ${c.id} is still open after close`))
  }
  // One connection, and one more for each that dropped or hung (a lost socket or a server that
  // stopped answering is not a choice).
  const allowed = 1 + connections.filter((c) => c.ops.some((op) => op.op === "dropped" || op.op === "stalled")).length
  if (spec.capabilities === "openai" && !spec.rejectEvery && connections.length > allowed) {
    out.push(v("rule 7", `${connections.length} realtime connections were opened where ${allowed} could have moved from agent to agent`))
  }
  return out
}

/**
 * Rule 8: a provider's error answer (a rejected update) is reported, recoverably, to the agent
 * holding the floor, never to one that passed it; nothing else goes wrong (the other checks see
 * events from agents without the floor and unexpected errors).
 */
export const checkLateRealtimeAnswers = (ctx: Ctx): Array<Violation> => {
  if (!ctx.rec.scenario.realtime) return []
  const out: Array<Violation> = []
  for (const e of ctx.rec.events) {
    if (e.type !== "error" || e.source !== "realtime" || e.seq >= ctx.closeSeq) continue
    const holder = holderAt(ctx, e.seq)
    if (e.agent !== holder) out.push(v("rule 8", `a realtime error went to ${e.agent ?? "nobody"} while ${holder ?? "nobody"} held the floor`, e.seq))
  }
  return out
}
