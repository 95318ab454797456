/**
 * A batch: all tool calls of one model response, run as concurrent fibers. The rules it keeps:
 *
 * - outputs enter the context in call order, whatever order the calls finish in (rule 3);
 * - every call gets exactly one output: a value, an error, cancelled, or the handoff (rule 4);
 * - a batch with a handoff hands off after *all* its calls have settled; the first handoff in
 *   call order wins and later ones get an error output saying so (rule 3);
 * - a batch that passes the floor (handoff, or a task's completion) never produces a follow-up
 *   reply on the outgoing agent, whatever its sibling calls returned (rule 2);
 * - bad arguments, unknown tools, failures and defects are answers the model can act on (rule 12).
 */
import { Cause, Deferred, Effect, Exit } from "effect"
import type { Actor } from "./actor/Actor.ts"
import type { Agent } from "../Agent.ts"
import type { CallResult } from "./CallResult.ts"
import * as Diagnostics from "../Diagnostics.ts"
import * as Faults from "../Faults.ts"
import { ProtocolFaults } from "../Faults.ts"
import { functionCall, type FunctionCall, type FunctionCallOutput, functionCallOutput, type OutputStatus } from "../ChatContext.ts"
import type { TaskResult } from "../CurrentAgent.ts"
import type * as Handoff from "../Handoff.ts"
import type { PendingCall } from "./Reply.ts"
import type { HandoffOutcome } from "./SessionCore.ts"
import { cutFollowUp, followUpCut, setToken, type Speech, tools as runsTools } from "../Speech.ts"
import * as Speeches from "./Speeches.ts"
import * as Lifecycle from "./actor/Lifecycle.ts"
import { doneExit } from "./EffectFastPaths.ts"
import * as HandoffRules from "./HandoffRules.ts"
import { execute } from "./ToolCall.ts"
import * as Work from "./Work.ts"

/** What the speech does next: reply to the outputs, stop, or stop because the floor passed. */
export type Next = "reply" | "done" | "passed"

export const run = (actor: Actor, speech: Speech, pending: ReadonlyArray<PendingCall>): Effect.Effect<Next> =>
  Effect.suspend(() => {
    runsTools(speech)
    // A flow waiting for the actor to settle (a task about to start) may go on now.
    if (Speeches.waiting(actor.speeches)) actor.send({ _tag: "Kick" })
    const calls = pending.map((call) =>
      functionCall({ callId: call.callId, name: call.name, arguments: call.arguments, agent: actor.name, id: call.itemId })
    )
    for (const call of calls) actor.commit(call)
    const settled: Array<CallResult | undefined> = calls.map(() => undefined)
    const finishOrder: Array<number> = []
    const concluded = Effect.withFiber((fiber) => {
      const faults = fiber.getRef(ProtocolFaults)
      return faults === Faults.none ? conclude(actor, speech, calls, settled) : concludeWithFaults(actor, speech, calls, settled, finishOrder, faults)
    })
    const cut = () => record(actor, calls, settled, "closing")
    const work = actor.core.work
    // Each call holds a work token; once all have started, the speech hands its own to them and
    // the last call to finish takes it back (see Work.ts).
    if (calls.length === 1) {
      // Alone, the call runs on the speech's fiber and the speech's token is its token while it
      // runs (`runOne`'s accounting, which nets to this); one finalizer gives it back and
      // settles the call or records the cut.
      setToken(speech, false)
      let running: Effect.Effect<CallResult>
      try {
        running = execute(actor, speech, calls[0]!)
      } catch (defect) {
        setToken(speech, true)
        throw defect
      }
      // Answered as it was called (most calls): settled on this step.
      const answered = doneExit(running)
      if (answered && Exit.isSuccess(answered)) {
        setToken(speech, true)
        settled[0] = answered.value
        finishOrder.push(0)
        return concluded
      }
      const settles = Effect.onExit(running, (exit) => {
        setToken(speech, true)
        if (Exit.isSuccess(exit)) {
          settled[0] = exit.value
          finishOrder.push(0)
        } else if (Cause.hasInterrupts(exit.cause)) cut()
        return Effect.void
      })
      return Effect.andThen(settles, concluded)
    }
    let started = 0
    let finished = 0
    let handedOver = false
    const runOne = (call: FunctionCall, index: number) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          Work.acquire(work)
          if (++started === calls.length) {
            handedOver = true
            setToken(speech, false)
            Work.release(work)
          }
        }),
        () =>
          // Each call is a fiber of its own, counted.
          Diagnostics.fiber(Effect.map(execute(actor, speech, call), (result) => {
            settled[index] = result
            finishOrder.push(index)
          })),
        () =>
          Effect.sync(() => {
            if (++finished === calls.length && handedOver) {
              Work.acquire(work)
              setToken(speech, true)
            }
            Work.release(work)
          })
      )
    return Effect.forEach(calls, runOne, { concurrency: "unbounded", discard: true }).pipe(
      Effect.onInterrupt(() => Effect.sync(cut)),
      Effect.andThen(concluded)
    )
  })

interface Resolved {
  readonly outputs: ReadonlyArray<FunctionCallOutput>
  readonly winner: { readonly target: Agent; readonly handoff: Handoff.Handoff } | undefined
  readonly reply: boolean
}

/** Why a batch applies no transfer whatever its calls returned: the session closed under it, or
 * it was said over a batch that already passes the floor. */
type Stopped = "closing" | "passing"

/** Turns settled results into outputs in call order and picks the handoff that wins. */
const resolve = (actor: Actor, calls: ReadonlyArray<FunctionCall>, settled: ReadonlyArray<CallResult | undefined>, stopped?: Stopped): Resolved => {
  let winner: Resolved["winner"]
  let reply = false
  const outputs = calls.map((call, index) => {
    // (no spread of a base record: this runs for every call on a handoff's path)
    const outputOf = (output: string, status: OutputStatus) =>
      functionCallOutput({
        callId: call.callId,
        name: call.name,
        agent: actor.name,
        output,
        isError: status !== "ok" && status !== "progress" && status !== "handoff",
        status
      })
    const result = settled[index]
    if (!result) return outputOf(`Cancelled: ${stopped === "closing" ? "the session closed before the call finished" : "not finished"}.`, "cancelled")
    switch (result._tag) {
      case "Value":
        reply ||= result.reply
        return outputOf(result.output, "ok")
      case "Progress":
        reply = true
        return outputOf(result.output, "progress")
      case "Error":
        reply = true
        return outputOf(result.output, "error")
      case "Cancelled":
        reply = true
        return outputOf(result.output, result.status)
      case "Handoff": {
        // The batch speaks for its actor, taken to hold the floor; the supervisor checks that
        // again when it applies the transfer (Floor.ts).
        const refusal = HandoffRules.refusal({
          from: actor,
          holder: actor,
          target: result.target,
          earlier: winner?.target.name,
          passing: stopped === "passing",
          closing: stopped === "closing"
        })
        if (refusal) {
          reply = true
          return outputOf(HandoffRules.output(result.target.name, refusal), "error")
        }
        winner = { target: result.target, handoff: result.handoff }
        const output = result.handoff.options.message ?? `Transferred to ${result.target.name}.`
        return outputOf(output, "handoff")
      }
    }
  })
  return { outputs, winner, reply }
}

const record = (
  actor: Actor,
  calls: ReadonlyArray<FunctionCall>,
  settled: ReadonlyArray<CallResult | undefined>,
  stopped?: Stopped
): Resolved => {
  const resolved = resolve(actor, calls, settled, stopped)
  for (const output of resolved.outputs) actor.commit(output)
  for (const result of settled) if (result?._tag === "Progress") result.answered()
  return resolved
}

/** Called when the batch has settled, on its step: records the outputs and passes the floor. */
const conclude = (
  actor: Actor,
  speech: Speech,
  calls: ReadonlyArray<FunctionCall>,
  settled: ReadonlyArray<CallResult | undefined>
): Effect.Effect<Next> => {
  // Said over a batch that already passes the floor: no second pass (the first decided).
  const under = Speeches.under(actor.speeches, speech)
  const superseded = under.some((below) => below.state._tag === "Passing")
  const { outputs, winner, reply } = record(actor, calls, settled, superseded ? "passing" : undefined)
  const completed = firstCompletion(actor, calls)
  const completion = superseded ? undefined : completed
  actor.core.emit({
    type: "function_tools_executed",
    agent: actor.name,
    calls: calls.map((call, i) => ({ call, output: outputs[i]! })),
    hasHandoff: winner !== undefined || completion !== undefined,
    handoffTo: winner?.target.name ?? (completion ? actor.task?.caller.name : undefined),
    // Said over other batches, it passes the floor once they settled (`passAfter`).
    deferred: under.length > 0 && (winner !== undefined || completion !== undefined)
  })
  // Words a tool said while the batch ran are heard before the floor moves (rule 2).
  if (!completion && !winner) return pass(actor, speech, completion, winner, reply)
  // Settled, and passing the floor: a reply of this agent may no longer start (Speeches.ts).
  Speeches.startPassing(actor.speeches, speech)
  return Speeches.interjectingOver(actor.speeches, speech)
    ? Effect.andThen(Speeches.interjectedOver(actor.speeches, speech), Effect.suspend(() => pass(actor, speech, completion, winner, reply)))
    : pass(actor, speech, completion, winner, reply)
}

/** On the step that runs it: the floor passes now, or the speech goes on or stops. */
const pass = (
  actor: Actor,
  speech: Speech,
  completion: ReturnType<typeof firstCompletion>,
  winner: Resolved["winner"],
  reply: boolean
): Effect.Effect<Next> => {
  if (completion || winner) {
    const under = Speeches.under(actor.speeches, speech)
    if (under.length > 0) return passAfter(actor, speech, under, completion, winner)
  }
  // The reply ends here, before the floor moves (the request's own work token keeps the
  // session busy in between).
  if (completion) {
    Lifecycle.startPassing(actor)
    actor.core.send({ _tag: "CompleteTask", actor, result: completion })
    Speeches.finish(actor.speeches, speech, { _tag: "Finished" })
    actor.core.handleNow()
    return Effect.succeed("passed")
  }
  if (winner) {
    Lifecycle.startPassing(actor)
    const answer = Deferred.makeUnsafe<HandoffOutcome>()
    actor.core.send({ _tag: "Handoff", from: actor, target: winner.target, options: winner.handoff.options, reply: answer })
    Speeches.finish(actor.speeches, speech, { _tag: "Finished" })
    // The floor moves now, not a turn of the event loop later (a fifth of a warm handoff's
    // time, bench/README.md).
    actor.core.handleNow()
    return Effect.map(Deferred.await(answer), (outcome): Next => {
      if (outcome._tag === "Applied") return "passed"
      Lifecycle.stopPassing(actor)
      return "done"
    })
  }
  return Effect.succeed(!reply || followUpCut(speech) || !actor.holdsFloor() ? "done" : "reply")
}

/**
 * A batch of a reply said over other speeches (a reply a tool awaited) passes the floor once the
 * batches under it have settled (rule 3: a batch hands off after all its calls settled, and the
 * tool that awaited this reply is one of them). The reply ends now, so that tool goes on; the
 * speeches under it make no follow-up; the pass is work of the session until it is asked. If
 * the floor moved meanwhile (a batch under it passed it first), it is not applied, and said so.
 */
const passAfter = (
  actor: Actor,
  speech: Speech,
  under: ReadonlyArray<Speech>,
  completion: ReturnType<typeof firstCompletion>,
  winner: Resolved["winner"]
): Effect.Effect<Next> => {
  // The pass to come holds a token, given back while what it waits for waits (a task under it
  // talking to the user lets the session go quiet) and returned before it goes on.
  const work = actor.core.work
  const token = { held: true }
  Work.acquire(work)
  for (const below of under) cutFollowUp(below)
  Speeches.finishEarly(actor.speeches, speech, { _tag: "Finished" })
  const settled = Effect.forEach([...under].reverse(), (below) => Speeches.awaitEnd(actor.speeches, below, token), { discard: true })
  return settled.pipe(
    Effect.andThen(Effect.suspend((): Effect.Effect<Next> => {
      const to = winner?.target.name ?? actor.task?.caller.name ?? ""
      if (!actor.holdsFloor() || !Lifecycle.isActive(actor)) {
        const refused: HandoffRules.Refusal = { _tag: "NotHolder", agent: actor.name, holder: undefined }
        actor.core.emit({ type: "handoff_not_applied", agent: actor.name, to, reason: HandoffRules.reason(refused) })
        return Effect.succeed("done")
      }
      Lifecycle.startPassing(actor)
      if (completion) {
        actor.core.send({ _tag: "CompleteTask", actor, result: completion })
        actor.core.handleNow()
        return Effect.succeed("passed")
      }
      const answer = Deferred.makeUnsafe<HandoffOutcome>()
      actor.core.send({ _tag: "Handoff", from: actor, target: winner!.target, options: winner!.handoff.options, reply: answer })
      actor.core.handleNow()
      return Effect.map(Deferred.await(answer), (outcome): Next => {
        if (outcome._tag === "Applied") return "passed"
        Lifecycle.stopPassing(actor)
        return "done"
      })
    })),
    Effect.ensuring(Effect.sync(() => {
      if (token.held) Work.release(work)
    }))
  )
}

/** The deliberately broken variants of `conclude` (see Faults.ts). */
const concludeWithFaults = (
  actor: Actor,
  speech: Speech,
  calls: ReadonlyArray<FunctionCall>,
  settled: ReadonlyArray<CallResult | undefined>,
  finishOrder: ReadonlyArray<number>,
  faults: Faults.ProtocolFaults
): Effect.Effect<Next> => {
  const order = faults.outputsInCompletionOrder ? finishOrder : calls.map((_, i) => i)
  const lastIndex = finishOrder[finishOrder.length - 1]
  const kept = settled.map((result, i) =>
    faults.lastFinisherDecides && result?._tag === "Handoff" && i !== lastIndex
      ? ({ _tag: "Value", output: "", reply: true } as const)
      : result
  )
  return conclude(actor, speech, order.map((i) => calls[i]!), order.map((i) => kept[i]))
}

/** The completion requested by the first call, in call order, that completed the task. */
const firstCompletion = (actor: Actor, calls: ReadonlyArray<FunctionCall>): TaskResult | undefined => {
  let found: TaskResult | undefined
  for (const call of calls) {
    const result = actor.completions.get(call.callId)
    if (result && !found) found = result
    actor.completions.delete(call.callId)
  }
  return found
}

