/**
 * The rules on cascaded voice (Cascade.ts), from what the pipeline played and cut:
 *
 * - rule 2: no audio of an agent's speech is played once that agent has passed the floor, and
 *   nothing of a speech is played after it was cut (barge-in, interruption, handoff);
 * - rule 1: a reply cut short keeps in the history only what was heard: a prefix of its text;
 * - rule 12: every utterance the STT heard words in reaches the session as a user turn, unless
 *   the session closed before it could be taken.
 */
import type { Ctx, Violation } from "./CheckCore.ts"
import { v } from "./CheckCore.ts"

export const checkCascade = (ctx: Ctx): Array<Violation> => {
  const { rec } = ctx
  if (!rec.scenario.cascade) return []
  const out: Array<Violation> = []
  const world = rec.cascade

  // who held the floor from each handoff on
  const passes = ctx.handoffs.map((h) => ({ seq: h.seq, from: h.from, to: h.to }))
  const holderAt = (seq: number) => {
    let holder: string | undefined
    for (const pass of passes) if (pass.seq < seq) holder = pass.to
    return holder
  }
  for (const write of world.writes) {
    const holder = holderAt(write.seq)
    if (holder !== undefined && holder !== write.agent) {
      out.push(v("rule 2", `${write.agent}'s speech ${write.speechId} played audio while ${holder} held the floor`, write.seq))
      break
    }
  }
  for (const cut of world.cuts) {
    const late = world.writes.find((w) => w.speechId === cut.speechId && w.order > cut.order)
    if (late) out.push(v("rule 2", `speech ${cut.speechId} played audio after it was cut`, late.seq))
  }

  // a cut reply keeps what was heard: a prefix of what it was given to say
  const words = (text: string) => text.split(/\s+/).filter((w) => w !== "")
  for (const item of rec.history) {
    if (item._tag !== "Message" || item.role !== "assistant" || !item.interrupted || item.text === "") continue
    const kept = words(item.text)
    const spoken = world.texts.filter((s) => s.agent === item.agent).map((s) => words(s.text))
    if (!spoken.some((said) => kept.every((word, i) => said[i] === word))) {
      out.push(v("rule 1", `${item.agent}'s cut reply keeps "${item.text}", which no reply step of its began with`))
    }
  }

  // Every utterance with words became a user turn. Closing drops input not taken yet (as for
  // text), so when the session was closed early only utterances before a run that resolved
  // after them are held to it.
  const userTexts = rec.history.flatMap((i) => (i._tag === "Message" && i.role === "user" ? [i.text] : []))
  const lastResolved = Math.max(-1, ...rec.runs.filter((r) => r.resolvedSeq !== undefined && !r.closedBefore).map((r) => r.resolvedOrder))
  const heldUntil = rec.closedEarly ? lastResolved : Infinity
  // The final may come during the turn's silence (the turn is sent when it is over): a close
  // before the longest silence could end drops the turn, as closing drops input not yet taken.
  const closeAt = rec.events.find((e) => e.type === "close")?.at ?? Infinity
  const longest = (rec.scenario.cascade.maxEndpointingMs ?? rec.scenario.cascade.endpointingMs) + 40
  for (const final of world.finals) {
    if (rec.closeOrder !== undefined && final.order >= rec.closeOrder) continue
    if (final.order >= heldUntil) continue
    if (final.at + longest >= closeAt) continue
    // (a turn may hold several utterances: the user went on before its silence was over)
    if (!userTexts.some((text) => text.includes(final.text))) out.push(v("rule 12", `the user said "${final.text}" and no agent was told`))
  }

  // A reply started ahead of its turn (preemptive generation) is used only for a turn with its
  // very words, and is used or dropped once: never heard or kept otherwise.
  const preemptive = rec.events.flatMap((e) => (e.type === "voice_decision" && e.decision === "preemptive_generation" ? [e] : []))
  let open: string | undefined
  for (const e of preemptive) {
    if (e.outcome === "started") {
      if (open !== undefined) out.push(v("rule 1", `a preemptive reply to "${open}" was neither used nor dropped before the next started`, e.seq))
      open = e.transcript
    } else if (open === undefined || e.transcript !== open) {
      out.push(v("rule 1", `a preemptive reply to "${e.transcript}" was ${e.outcome} without having started`, e.seq))
    } else {
      if (e.outcome === "used" && !userTexts.includes(e.transcript ?? "")) {
        out.push(v("rule 1", `a preemptive reply was used for "${e.transcript}", which is no user turn`, e.seq))
      }
      open = undefined
    }
  }
  return out
}
