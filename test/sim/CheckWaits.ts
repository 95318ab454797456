/**
 * Tool timeouts, user away and turn hooks (issue 37), over the calls and hook runs the world
 * recorded (Interpret.ts `timed`, `turns`, `away`):
 *
 * - a call running past its tool's timeout is stopped at the limit and answered once, with the
 *   timeout output; a call within it is answered by its result (rule 4);
 * - `user_state_changed` away comes only while the holder listens, and `onUserAway` runs in the
 *   agent holding the floor (rule 1);
 * - a turn the hook stopped gets no reply, and its user message is still recorded (rule 1: no
 *   one speaks for it).
 */
import type { SessionEvent } from "../../src/Events.ts"
import { type Ctx, v, type Violation } from "./CheckCore.ts"

const TIMED_OUT = / timed out after .* and was stopped: it has no result\.$/

const outputsOf = (events: ReadonlyArray<SessionEvent>, callId: string): Array<string> =>
  events.flatMap((e) =>
    e.type === "conversation_item_added" && e.item._tag === "FunctionCallOutput" && e.item.callId === callId ? [e.item.output] : []
  )

export const checkTimeouts = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  for (const call of ctx.rec.timed) {
    const spec = ctx.specs.get(call.agent)?.tools.find((t) => t.name === call.tool)
    const limit = call.startedAt + (spec?.timeout ?? Infinity)
    const outputs = outputsOf(ctx.rec.events, call.callId)
    const timedOut = outputs.filter((o) => TIMED_OUT.test(o))
    if (outputs.length > 1) out.push(v("rule 4", `${call.tool} call ${call.callId} answered ${outputs.length} times`))
    if (call.finishedAt !== undefined && call.finishedAt > limit) {
      out.push(v("rule 4", `${call.tool} call ${call.callId} ran on past its timeout (ended at ${call.finishedAt}, limit ${limit})`))
    }
    if (call.stoppedAt === limit && timedOut.length === 0) {
      out.push(v("rule 4", `${call.tool} call ${call.callId} was stopped at its timeout but answered ${JSON.stringify(outputs)}`))
    }
    if (timedOut.length > 0 && (call.stoppedAt !== limit || !call.long)) {
      out.push(v("rule 4", `${call.tool} call ${call.callId} answered as timed out, but it ${call.long ? `was stopped at ${call.stoppedAt}` : "ran within its timeout"} (limit ${limit})`))
    }
  }
  return out
}

export const checkUserAway = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  const state = new Map<string, string>()
  let holder: string | undefined = ctx.rec.scenario.agents[0]?.name
  for (const e of ctx.rec.events) {
    if (e.type === "agent_state_changed") state.set(e.agent, e.state)
    if (e.type === "agent_handoff") holder = e.to ?? holder
    if (e.type === "user_state_changed" && e.state === "away" && e.seq < ctx.closeSeq) {
      const now = holder === undefined ? undefined : state.get(holder)
      if (now !== undefined && now !== "listening") out.push(v("rule 1", `the user was marked away while ${holder} was ${now}`, e.seq))
    }
  }
  for (const run of ctx.rec.away) {
    if (run.holder !== undefined && run.holder !== run.agent) {
      out.push(v("rule 1", `onUserAway of ${run.agent} ran while ${run.holder} held the floor`, run.seq))
    }
  }
  if (ctx.rec.scenario.userAwayTimeout === undefined && ctx.rec.away.length > 0) {
    out.push(v("rule 1", "onUserAway ran in a session without userAwayTimeout"))
  }
  return out
}

export const checkTurnHooks = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  for (const turn of ctx.rec.turns) {
    if (!turn.stopped) continue
    const recorded = ctx.rec.events.some((e) =>
      e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user" && e.item.text === turn.text
    )
    if (!recorded && turn.seq < ctx.closeSeq) out.push(v("rule 1", `${turn.agent} stopped the reply to "${turn.text}" and its message was not recorded`, turn.seq))
    // The next request of the agent answering that very message (no handoff in between) is a reply it should not get.
    const answered = ctx.rec.requests.find((r) =>
      r.agent === turn.agent && r.trigger === "user" && r.userText === turn.text && r.order > turn.order &&
      !ctx.handoffs.some((h) => h.seq >= turn.seq && h.seq <= r.seq)
    )
    if (answered) out.push(v("rule 1", `${turn.agent} stopped the reply to "${turn.text}" but the model was asked for one (request ${answered.index})`, answered.seq))
  }
  return out
}
