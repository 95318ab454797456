/**
 * Rules 5, 6, 10 and 11 (hooks, returns, quiescence, leaks) and unexpected errors.
 */
import type { SessionEvent } from "../../src/Events.ts"
import { type Ctx, type Rule, v, type Violation } from "./CheckCore.ts"
import type { HookName } from "./Interpret.ts"
import { type AgentSpec, oddShapeIsError } from "./Scenario.ts"

/** The hooks the handoff events call for, per agent, in order (only hooks the agent has). */
const expectedHooks = (ctx: Ctx, spec: AgentSpec, upTo: number): Array<{ readonly hook: HookName; readonly seq: number }> => {
  const out: Array<{ hook: HookName; seq: number }> = []
  for (const e of ctx.handoffs) {
    if (e.seq >= upTo) break
    if (e.from === spec.name && (e.kind === "handoff" || e.kind === "return" || e.kind === "take_over")) out.push({ hook: "onExit", seq: e.seq })
    if (e.to === spec.name && !e.resumed) out.push({ hook: "onEnter", seq: e.seq })
    if (e.to === spec.name && e.resumed && (e.kind === "handoff" || e.kind === "hand_back")) out.push({ hook: "onResume", seq: e.seq })
  }
  return out.filter((x) => spec[x.hook] !== undefined)
}

const short = (hook: HookName) => hook.slice(2).toLowerCase()

/**
 * Rule 5: each agent's hooks ran exactly as its handoffs call for, in that order: onEnter once
 * per activation, onExit once per passing, onResume (never onEnter) when resumed, each after its
 * handoff event. Exact at the final quiescent point; a prefix when the session closed earlier.
 */
export const checkHooks = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  const settled = ctx.rec.settled
  const upTo = settled?.seq ?? Infinity
  const calls = settled?.hooks ?? ctx.rec.hooks
  for (const spec of ctx.specs.values()) {
    const expected = expectedHooks(ctx, spec, upTo)
    const ran = calls.filter((c) => c.agent === spec.name)
    const same = (n: number) => ran.slice(0, n).every((c, i) => c.hook === expected[i]!.hook)
    const ok = settled ? ran.length === expected.length && same(ran.length) : ran.length <= expected.length && same(ran.length)
    if (!ok) {
      out.push(v(
        "rule 5",
        `hooks of ${spec.name} ran as [${ran.map((c) => short(c.hook)).join(", ")}] but its handoffs call for [${
          expected.map((x) => short(x.hook)).join(", ")
        }]${settled ? "" : " (closed early: a prefix)"}`
      ))
      continue
    }
    ran.forEach((c, k) => {
      const event = expected[k]!
      if (c.seq <= event.seq) out.push(v("rule 5", `${c.hook} of ${spec.name} ran before its handoff event (seq ${event.seq})`, c.seq))
    })
  }
  return out
}

export const checkReturns = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  const seen = new Set<string>()
  for (const e of ctx.handoffs) {
    if (e.kind === "handoff" || e.kind === "hand_back") {
      const expected = seen.has(e.to)
      if (e.resumed !== expected) {
        out.push(v("rule 6", `handoff to ${e.to} has resumed: ${e.resumed}, expected ${expected} (${expected ? "its actor is paused" : "first activation"})`, e.seq))
      }
    }
    if (e.kind === "task" && e.resumed) out.push(v("rule 6", `a task start to ${e.to} claims to resume an actor`, e.seq))
    if (e.kind === "return" && !e.resumed) out.push(v("rule 6", `the return to ${e.to} does not resume its actor`, e.seq))
    seen.add(e.to)
  }
  // An AgentTask's completion resumes the flow that awaited it.
  const settled = ctx.rec.settled
  if (settled) {
    const pairs = new Map<string, number>()
    for (const e of ctx.handoffs) {
      if (e.kind !== "return" || e.seq >= settled.seq || ctx.groups.has(e.to) || !e.from) continue
      const key = `${e.to} <- ${e.from}`
      pairs.set(key, (pairs.get(key) ?? 0) + 1)
    }
    const got = new Map<string, number>()
    for (const o of settled.taskOutcomes) got.set(`${o.caller} <- ${o.task}`, (got.get(`${o.caller} <- ${o.task}`) ?? 0) + 1)
    for (const key of new Set([...pairs.keys(), ...got.keys()])) {
      if ((pairs.get(key) ?? 0) !== (got.get(key) ?? 0)) {
        out.push(v("rule 6", `${key}: ${pairs.get(key) ?? 0} return(s) but the awaiting flow got ${got.get(key) ?? 0} result(s)`))
      }
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Rules 10 and 11, and unhandled errors.

/** A realtime connection that drops is the network's doing, like the user's speech: it may be
 * reported at any time, a quiescent session's too (what a drop makes baton do is not exempt). */
const fromTheNetwork = (ctx: Ctx, e: SessionEvent): boolean =>
  ctx.rec.scenario.realtime?.dropEvery !== undefined &&
  ((e.type === "realtime_connection" && e.action === "dropped") ||
    (e.type === "error" && /realtime connection conn_\d+ dropped/.test(e.message)))

export const checkQuiescence = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  const { rec } = ctx
  for (const run of rec.runs) {
    if (run.resolvedSeq === undefined || run.closedBefore) continue
    if (!run.idleAtResolution) out.push(v("rule 10", `run ${run.text} resolved while the session was still busy`, run.resolvedSeq))
    if (!run.containsInput) out.push(v("rule 10", `the result of run ${run.text} lacks its own input`, run.resolvedSeq))
    if (run.othersPending) continue
    // Background tools report when they finish: a run that did not wait for them may see that.
    if (!run.background && (run.backgroundRunning || backgroundPending(ctx, run.resolvedSeq))) continue
    // A close asked (by a hook too: an onUserAway that ends the call) is something happening:
    // what it records (reports its agents kept) is its doing (seed 159250).
    const action = rec.actions.find((a) => a.order > run.resolvedOrder && a.op !== "idle")?.seq ?? rec.settled?.seq ?? Infinity
    const next = Math.min(action, ctx.closeSeq)
    const late = beforeAway(ctx, rec.events.filter((e) => e.seq >= run.resolvedSeq! && e.seq < next && !fromTheNetwork(ctx, e)))
    // A spoken turn is the server's until it reports it: what it brings may follow the run.
    if (late.length > 0 && voiceInFlight(ctx, run.resolvedOrder, late[0]!.at)) continue
    if (late.length > 0) {
      out.push(v("rule 10", `${late.length} event(s) after run ${run.text} resolved, before anything else happened (first: ${late[0]!.type})`, late[0]!.seq))
    }
  }
  const settled = rec.settled
  if (settled) {
    const quiet = rec.events.filter((e) => e.seq >= settled.seq && e.seq < settled.seq + settled.lateEvents)
    const late = beforeAway(ctx, quiet.filter((e) => !fromTheNetwork(ctx, e))).length
    if (late > 0) out.push(v("rule 10", `${late} event(s) after the session was quiescent`, settled.seq))
    // With no flow waiting for a task, only the loops are left: the session's and each actor's,
    // and with realtime, each open connection's router and canceller, and the lease route of
    // its holder.
    const d = settled.diagnostics
    const resting = 1 + d.actors - rec.before.actors + (rec.scenario.userAwayTimeout !== undefined ? 1 : 0)
    const running = d.fibers - rec.before.fibers
    const routers = settled.openConnections * 3
    if (settled.awaiting === 0 && (running < resting || running > resting + routers)) {
      out.push(v("rule 10", `${running} baton fibers running once quiescent, expected ${resting}${routers ? ` to ${resting + routers}` : ""} (loops${routers ? " and realtime routers" : ""})`))
    }
  }
  return out
}

/** With a `userAwayTimeout`, a quiet session's user goes away: the away and what `onUserAway`
 * does then are the silence's doing, not late (CheckWaits.ts checks them). */
const beforeAway = (ctx: Ctx, events: ReadonlyArray<SessionEvent>): ReadonlyArray<SessionEvent> => {
  if (ctx.rec.scenario.userAwayTimeout === undefined) return events
  const away = events.find((e) => e.type === "user_state_changed" && e.state === "away")
  // An `onUserAway` that ends the call does it on a later silence: the user is away already.
  const closedByHook = ctx.rec.away.some((a) => a.times >= 2 && ctx.specs.get(a.agent)?.onUserAway === "close")
  return events.filter((e) => (away === undefined || e.seq < away.seq) && !(closedByHook && e.type === "close"))
}

/** A long-running handler had finished by `seq` but its result was not recorded yet. */
/** Whether a spoken input made before `order` may still have been with the server at `at`. */
const voiceInFlight = (ctx: Ctx, order: number, at: number): boolean => {
  const cascade = ctx.rec.scenario.cascade
  if (cascade) {
    // The user's audio goes on after the action: speech, the silence that ends it, then the
    // transcript. One voice: an utterance waits for the one before it to finish.
    // (words that trail off wait the longer silence: Cascade.utter)
    const silenceOf = (action: { readonly op: string; readonly input?: number }) =>
      (action.op === "utter" && cascade.trailingEvery !== undefined && action.input !== undefined && action.input % cascade.trailingEvery === 0
        ? cascade.maxEndpointingMs ?? cascade.endpointingMs
        : cascade.endpointingMs) + 300 + 20
    let free = -Infinity
    return ctx.rec.scenario.timeline.some((action, index) => {
      if (action.op !== "utter" && action.op !== "noise") return false
      const made = ctx.rec.actions.find((a) => a.index === index)
      if (made === undefined) return false
      const start = Math.max(made.at, free)
      free = start + action.duration + silenceOf(action)
      return made.order < order && free + cascade.sttDelay + 20 >= at
    })
  }
  const rt = ctx.rec.scenario.realtime
  if (!rt) return false
  const turn = (rt.speechMs ?? 200) + rt.responseDelay + (rt.transcriptMs ?? 0) + 10
  // From when the push returned: it may have waited for the holder's connection (seed 1437013).
  return ctx.rec.actions.some((a) => a.op === "voice" && a.order < order && (a.ended ?? a.at) + turn >= at)
}

const backgroundPending = (ctx: Ctx, seq: number): boolean =>
  ctx.rec.finishes.some((f) => f.seq < seq && (ctx.outputSeq.get(`${f.callId}:result`) ?? Infinity) >= seq)

export const checkLeaks = (ctx: Ctx): Array<Violation> => {
  const { before, after } = ctx.rec
  const out: Array<Violation> = []
  for (const key of ["sessions", "actors", "scopes", "fibers"] as const) {
    if (after[key] !== before[key]) out.push(v("rule 11", `${after[key] - before[key]} ${key} left after close`))
  }
  if (after.tokenErrors !== before.tokenErrors) out.push(v("rule 11", `${after.tokenErrors - before.tokenErrors} work token error(s)`))
  if (ctx.rec.events.at(-1)?.type !== "close") out.push(v("rule 11", "the event log does not end with the close event"))
  return out
}

export const checkErrors = (ctx: Ctx): Array<Violation> => {
  const out: Array<Violation> = []
  for (const e of ctx.rec.events) {
    if (e.type !== "error") continue
    if (!expectedError(ctx, e)) {
      out.push(v("no unhandled error", `unexpected ${e.source} error from ${e.agent ?? "the session"}: ${e.message.split("\n")[0]}`, e.seq))
    }
  }
  for (const f of ctx.rec.failures) {
    // Rejected realtime updates are scripted: the fallback is logged, as it should be.
    const fallback = /^log: Warn: realtime update failed \(update \d+ rejected\): falling back to a new connection$/.test(f.message)
    if (fallback && ctx.rec.scenario.realtime?.rejectEvery) continue
    out.push(v(f.rule as Rule, f.message))
  }
  return out
}

const expectedError = (ctx: Ctx, e: Extract<SessionEvent, { type: "error" }>): boolean => {
  if (!e.recoverable) return false
  // The realtime model's faults the scenario draws, whichever agent holds the floor (a task
  // group's coordinator too).
  const rt = ctx.rec.scenario.realtime
  if (e.source === "realtime") {
    return (rt?.rejectEvery !== undefined && /rejected/.test(e.message)) ||
      (rt?.untranscribedEvery !== undefined && /could not be transcribed/.test(e.message)) ||
      (rt?.dropEvery !== undefined && /realtime connection conn_\d+ dropped/.test(e.message))
  }
  if (e.source === "model" && rt) {
    // A reply asks again once per step when its connection breaks; a second break fails it.
    if (rt.dropEvery !== undefined && /the connection left \S+ \(dropped\)/.test(e.message)) return true
    // The same when an update is refused twice in a row (the retry's fresh connection refused too).
    if (rt.rejectEvery !== undefined && /the connection left \S+ \(fallback\)/.test(e.message)) return true
    // A response the server failed fails its reply (no retry: a server error may repeat).
    if (rt.failEvery !== undefined && /^ServerError: The server had an error/.test(e.message)) return true
    // A request a hung server never answers fails its reply after the timeout.
    if (rt.stallEvery !== undefined && /^Timeout: no response from the realtime model within/.test(e.message)) return true
  }
  const spec = e.agent ? ctx.specs.get(e.agent) : undefined
  if (!spec) return false
  switch (e.source) {
    case "tool":
      return spec.tools.some((t) =>
        (t.kind === "failing" && t.plainError && e.message.startsWith(`${t.name} failed:`)) ||
        (t.kind === "dying" && e.message.startsWith(`${t.name} died:`)) ||
        (t.kind === "timed" && e.message.startsWith(`${t.name} timed out after`)) ||
        (t.kind === "waitsForItself" && e.message.startsWith(`${t.name} died:`) && e.message.includes("cannot wait for the speech")) ||
        (t.kind === "odd" && oddShapeIsError(t.shape!) && e.message.startsWith(`${t.name} returned`))
      )
    case "model":
      return e.message.includes("scripted failure") &&
        Object.values(ctx.rec.scenario.responses[spec.name] ?? {}).some((list) => list.some((r) => r.error))
    case "hook":
      return e.message.includes("SimHookFailure") &&
        (["onEnter", "onExit", "onResume"] as const).some((h) => spec[h]?.action === "fail" && e.message.startsWith(`${h} of ${spec.name}`))
    default:
      return false
  }
}
