/**
 * Guardrails at run time (the values are in `Guardrail.ts`). Output guardrails watch the text an
 * agent's speeches write to the session's output (a wrapper around its `TextOutput`): a check
 * runs on each sentence end, otherwise once new text has waited `every`, and once more when the
 * speech ends. A trip stops the speech's words at once (nothing written after it), cuts the
 * speech as a barge-in does (`session.interrupt`: what was heard stays in the history), emits
 * `guardrail_tripped` and runs the policy. Tool guardrails run in the call's fiber (ToolCall.ts
 * through `Approvals.gated` and `checkOutput`). A check pending or running holds a work token,
 * so `run` resolves only once the text was checked and the policy applied (rule 10).
 */
import { Duration, Effect, Option } from "effect"
import type { Actor } from "./actor/Actor.ts"
import type { SessionCore } from "./SessionCore.ts"
import * as Work from "./Work.ts"
import { CallControl, type CallControlService } from "../../services/CallControl.ts"
import type { SpeechInfo, TextOutputService } from "../../services/TextOutput.ts"
import type { FunctionCall } from "../ChatContext.ts"
import type * as Guardrail from "../Guardrail.ts"
import * as Handoff from "../Handoff.ts"
import { ToolError as ToolErrorOf } from "../Tool.ts"
import type * as Tool from "../Tool.ts"

/** One speech's text as the output guardrails see it. */
interface Watched {
  readonly info: SpeechInfo
  text: string
  /** How much of `text` the last check saw. */
  checked: number
  /** Which scheduled check is the live one: a newer one makes an older timer's a no-op. */
  generation: number
  /** A debounce timer waits. */
  waiting: boolean
  checking: boolean
  /** Set once a guardrail tripped on it: the text heard, nothing after. */
  tripped: string | undefined
  ended: boolean
}

interface State {
  core: SessionCore | undefined
  callControl: CallControlService | undefined
  readonly speeches: Map<string, Watched>
  /** Lines a `say` policy is about to say. */
  readonly lines: Set<string>
}

/** A session's guardrail runtime: its own output guardrails and what it learns at start. */
export interface Guardrails {
  readonly session: ReadonlyArray<Guardrail.OutputGuardrail>
  readonly state: State
}

const bySession = new WeakMap<SessionCore, Guardrails>()

/** `session`: the session's own; what their handoff targets need is in `start`'s requirements. */
export const make = (session: ReadonlyArray<Guardrail.Guardrail<unknown>>): Guardrails => ({
  session: (session as ReadonlyArray<Guardrail.Guardrail>).filter((g): g is Guardrail.OutputGuardrail => g.kind === "output"),
  state: { core: undefined, callControl: undefined, speeches: new Map(), lines: new Set() }
})

/** Attaches the runtime to its session once the core exists (the output wrapper is made before). */
export const attach = (guardrails: Guardrails, core: SessionCore): Effect.Effect<void> =>
  Effect.map(Effect.serviceOption(CallControl), (control) => {
    guardrails.state.core = core
    guardrails.state.callControl = Option.getOrUndefined(control)
    bySession.set(core, guardrails)
  })

/** The agent guardrails of a kind, with the session's for output. */
const guardrailsOf = <K extends Guardrail.Guardrail["kind"]>(
  actor: Actor | undefined,
  kind: K,
  session: ReadonlyArray<Guardrail.OutputGuardrail> = []
): ReadonlyArray<Extract<Guardrail.Guardrail, { kind: K }>> => {
  const own = (actor?.agent.guardrails ?? []).filter((g): g is Extract<Guardrail.Guardrail, { kind: K }> => g.kind === kind)
  return kind === "output" ? [...(session as ReadonlyArray<Extract<Guardrail.Guardrail, { kind: K }>>), ...own] : own
}

const SENTENCE_END = /[.!?…]["')\]]?\s*$|[.!?…]["')\]]?\s/

/** `base` with the output guardrails watching what it is given. */
export const wrapOutput = (guardrails: Guardrails, base: TextOutputService): TextOutputService => {
  const { state } = guardrails
  return {
    // Watched only when a guardrail looks at the agent speaking: other speeches' start is the
    // base output's own effect (a reply's `isVoid` fast path stays: its first words take no
    // extra steps). Decided as the start is made, on the step that runs it (its callers do).
    start: (info) =>
      !state.core || !hasOutputGuardrails(state.core.holder(), guardrails.session) ? base.start(info) : Effect.suspend(() => {
        state.speeches.set(info.speechId, {
          info,
          text: "",
          checked: 0,
          generation: 0,
          waiting: false,
          checking: false,
          tripped: undefined,
          ended: false
        })
        return base.start(info)
      }),
    // Words of a speaker no output guardrail looks at (the common case) are the base output's
    // own effect: no extra step per word (a reply's `isVoid` fast path stays). Decided as the
    // write is made, which may be before the speech's start has run (so not by `speeches`):
    // by the same test `start` makes, on the agent speaking now.
    write: (text, info) =>
      state.speeches.size === 0 && !(state.core && hasOutputGuardrails(state.core.holder(), guardrails.session))
        ? base.write(text, info)
        : Effect.suspend(() => {
        const watched = state.speeches.get(info.speechId)
        if (!watched) return base.write(text, info)
        // A policy's own line is not checked again (a line that tripped would say itself for ever).
        if (watched.text === "" && state.lines.delete(text)) {
          state.speeches.delete(info.speechId)
          return base.write(text, info)
        }
        // Tripped: nothing after the trip is said.
        if (watched.tripped !== undefined) return Effect.void
        return Effect.andThen(
          base.write(text, info),
          Effect.suspend(() => {
            if (watched.tripped !== undefined) return Effect.void
            watched.text += text
            return schedule(guardrails, watched, SENTENCE_END.test(text) ? "now" : "later")
          })
        )
      }),
    // A speech is watched from its start, which ran before its end is made: with none watched,
    // the end is the base output's own effect (no extra step on every speech's end).
    end: (info, interrupted) =>
      state.speeches.size === 0 ? base.end(info, interrupted) : Effect.suspend(() => {
        const watched = state.speeches.get(info.speechId)
        if (!watched) return base.end(info, interrupted)
        watched.ended = true
        const last = interrupted || watched.tripped !== undefined ? Effect.void : schedule(guardrails, watched, "now")
        return Effect.andThen(last, Effect.suspend(() => {
          forget(state, watched)
          return base.end(info, interrupted)
        }))
      }),
    ...(base.drain ? { drain: base.drain } : {}),
    heard: (info) => base.heard?.(info) ?? state.speeches.get(info.speechId)?.tripped
  }
}

/** An ended speech is dropped once nothing of it is pending (its heard text was read before its end). */
const forget = (state: State, watched: Watched) => {
  if (watched.ended && !watched.waiting && !watched.checking) state.speeches.delete(watched.info.speechId)
}

/**
 * A check now (a sentence ended, the speech ended) or after the debounce, in a fiber of the
 * session's Scope holding a work token; one check runs at a time, and the one in flight looks
 * again at what came meanwhile.
 */
const schedule = (guardrails: Guardrails, watched: Watched, when: "now" | "later"): Effect.Effect<void> => {
  const core = guardrails.state.core
  if (!core || watched.tripped !== undefined || watched.checking) return Effect.void
  const checks = guardrailsOf(core.holder(), "output", guardrails.session)
  if (checks.length === 0) return Effect.void
  if (when === "later" && watched.waiting) return Effect.void
  const generation = ++watched.generation
  watched.waiting = when === "later"
  const every = checks.reduce((min, g) => Duration.min(min, g.every), Duration.infinity)
  Work.acquire(core.work)
  const run = (when === "now" ? Effect.void : Effect.sleep(every)).pipe(
    Effect.andThen(Effect.suspend(() => {
      if (generation !== watched.generation) return Effect.void
      watched.waiting = false
      return check(guardrails, core, watched)
    })),
    Effect.onExit(() => Effect.sync(() => Work.release(core.work)))
  )
  return when === "now" && watched.ended
    // The speech's last text: checked before it ends, so a trip comes before what follows it.
    ? run
    : Effect.asVoid(Effect.forkIn(run, core.scope, { startImmediately: true }))
}

/** Runs the output guardrails on the text so far; a trip cuts the speech and runs the policy. */
const check = (guardrails: Guardrails, core: SessionCore, watched: Watched): Effect.Effect<void> => {
  if (watched.tripped !== undefined || watched.text.length === watched.checked) return Effect.void
  watched.checking = true
  const text = watched.text
  const checks = guardrailsOf(core.holder(), "output", guardrails.session)
  return Effect.forEach(checks, (g) => Effect.map(g.check(text), (verdict) => (verdict === undefined ? undefined : { g, verdict })), {
    concurrency: "unbounded"
  }).pipe(
    Effect.flatMap((verdicts) => {
      watched.checking = false
      watched.checked = text.length
      const first = verdicts.find((v) => v !== undefined)
      if (!first) {
        if (watched.text.length > watched.checked) return schedule(guardrails, watched, watched.ended ? "now" : "later")
        forget(guardrails.state, watched)
        return Effect.void
      }
      watched.tripped = watched.text
      const cut = watched.ended ? Effect.void : core.session().interrupt
      return Effect.andThen(cut, trip(guardrails, core, watched.info.agent, first.g, first.verdict, undefined))
    }),
    Effect.ensuring(Effect.sync(() => {
      watched.checking = false
    }))
  )
}

/** Says so and runs the guardrail's policy. */
const trip = (
  guardrails: Guardrails,
  core: SessionCore,
  agent: string,
  guardrail: Guardrail.Guardrail,
  message: string,
  callId: string | undefined
): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (core.closed()) return Effect.void
    const policy = guardrail.policy
    core.emit({
      type: "guardrail_tripped",
      agent,
      guardrail: guardrail.name,
      kind: guardrail.kind,
      policy: policy._tag === "Say" ? "say" : policy._tag === "Handoff" ? "handoff" : "end_call",
      message,
      ...(callId !== undefined ? { callId } : {})
    })
    // In a fiber of its own, holding a work token: what tripped (a tool call in its batch, a
    // speech ending) may be what the policy waits for (a handoff waits for the batch to settle).
    Work.acquire(core.work)
    return Effect.asVoid(Effect.forkIn(
      Effect.ensuring(apply(guardrails, core, policy), Effect.sync(() => Work.release(core.work))),
      core.scope,
      { startImmediately: true }
    ))
  })

const apply = (guardrails: Guardrails, core: SessionCore, policy: Guardrail.Policy): Effect.Effect<void> => {
  const session = core.session()
  switch (policy._tag) {
    case "Say":
      guardrails.state.lines.add(policy.text)
      return Effect.ignore(session.say(policy.text).pipe(Effect.tapError(() => Effect.sync(() => guardrails.state.lines.delete(policy.text)))))
    case "Handoff":
      return Effect.asVoid(session.handoff(Handoff.resolveAgent(policy.agent) as never))
    case "EndCall": {
      const control = guardrails.state.callControl
      return control ? control.hangUp(policy.reason).pipe(Effect.catch(() => session.close)) : session.close
    }
  }
}

/** The guardrails of a session, if it has a runtime. */
const of = (core: SessionCore): Guardrails | undefined => bySession.get(core)

/**
 * A call's input guardrails, before its approval and handler: a trip answers the call with an
 * error output (the handler does not run), says so, and runs the policy.
 */
export const checkInput = <P>(actor: Actor, call: FunctionCall, params: P): Effect.Effect<P, Tool.ToolError> | undefined => {
  const checks = guardrailsOf(actor, "tool_input")
  const guardrails = of(actor.core)
  if (checks.length === 0 || !guardrails) return undefined
  const seen: Guardrail.ToolCallSeen = { callId: call.callId, tool: call.name, arguments: params }
  return Effect.flatMap(firstTrip(checks, (g) => g.check(seen)), (found) =>
    found
      ? Effect.andThen(
        trip(guardrails, actor.core, actor.name, found.g, found.verdict, call.callId),
        Effect.fail(blocked(call.name, found.g.name, found.verdict))
      )
      : Effect.succeed(params))
}

/** Whether the call has output guardrails (its handler's result is checked before it is recorded). */
/** Whether any output guardrail applies to what `holder` says (no arrays built: on every speech). */
const hasOutputGuardrails = (holder: Actor | undefined, session: ReadonlyArray<Guardrail.OutputGuardrail>): boolean =>
  session.length > 0 || (holder?.agent.guardrails?.some((g) => g.kind === "output") ?? false)

export const hasToolGuardrails = (actor: Actor): boolean =>
  (actor.agent.guardrails ?? []).some((g) => g.kind === "tool_input" || g.kind === "tool_output")

/**
 * `handled` with the call's output guardrails on its value: a trip replaces it with an error
 * output, says so, and runs the policy. A handoff or a failure is not checked.
 */
export const checkOutput = (actor: Actor, call: FunctionCall, handled: Effect.Effect<unknown, unknown>): Effect.Effect<unknown, unknown> => {
  if (actor.agent.guardrails === undefined || actor.agent.guardrails.length === 0) return handled
  const checks = guardrailsOf(actor, "tool_output")
  if (checks.length === 0) return handled
  return Effect.flatMap(handled, (value) => {
    const guardrails = of(actor.core)
    if (!guardrails || Handoff.isHandoff(value) || (typeof value === "object" && value !== null && (value as { _tag?: unknown })._tag === "Agent")) {
      return Effect.succeed(value)
    }
    const seen = { callId: call.callId, tool: call.name, arguments: call.arguments, output: value }
    return Effect.flatMap(firstTrip(checks, (g) => g.check(seen)), (found) =>
      found
        ? Effect.andThen(
          trip(guardrails, actor.core, actor.name, found.g, found.verdict, call.callId),
          Effect.fail(blocked(call.name, found.g.name, found.verdict))
        )
        : Effect.succeed(value))
  })
}

const firstTrip = <G extends Guardrail.Guardrail>(checks: ReadonlyArray<G>, run: (g: G) => Effect.Effect<Guardrail.Verdict>) =>
  Effect.map(
    Effect.forEach(checks, (g) => Effect.map(run(g), (verdict) => (verdict === undefined ? undefined : { g, verdict })), { concurrency: "unbounded" }),
    (verdicts) => verdicts.find((v) => v !== undefined)
  )

const blocked = (tool: string, guardrail: string, verdict: string) =>
  new ToolErrorOf({ message: `${tool} was blocked by the ${guardrail} guardrail: ${verdict}.` })
