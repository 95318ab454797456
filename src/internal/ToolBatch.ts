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
import { Cause, Context, Deferred, Effect, Exit, Fiber } from "effect"
import type { Actor } from "./actor/Actor.ts"
import { CurrentCall, forkBodyWith, WorkToken, type WorkTokenCell } from "./FlowContext.ts"
import type { Agent } from "../Agent.ts"
import * as Background from "./Background.ts"
import { type CallResult, cancelled, classify } from "./CallResult.ts"
import * as Diagnostics from "../Diagnostics.ts"
import * as Faults from "../Faults.ts"
import { ProtocolFaults } from "../Faults.ts"
import { functionCall, type FunctionCall, type FunctionCallOutput, functionCallOutput, type OutputStatus } from "../ChatContext.ts"
import { CurrentAgent, type TaskResult } from "../CurrentAgent.ts"
import type * as Handoff from "../Handoff.ts"
import type { PendingCall } from "./Reply.ts"
import type { HandoffOutcome } from "./SessionCore.ts"
import type { Speech } from "../Speech.ts"
import * as Tool from "../Tool.ts"
import * as Lifecycle from "./actor/Lifecycle.ts"

/** What the speech does next: reply to the outputs, stop, or stop because the floor passed. */
export type Next = "reply" | "done" | "passed"

export const run = (actor: Actor, speech: Speech, pending: ReadonlyArray<PendingCall>): Effect.Effect<Next> =>
  Effect.suspend(() => {
    speech.phase = "tools"
    // A flow waiting for the actor to settle (a task about to start) may go on now.
    if (actor.speeches.waiting()) actor.send({ _tag: "Kick" })
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
    const cut = () => record(actor, calls, settled, "the session closed before the call finished")
    const work = actor.core.work
    // Each call holds a work token; once all have started, the speech hands its own to them and
    // the last call to finish takes it back (see Work.ts).
    if (calls.length === 1) {
      // Alone, the call runs on the speech's fiber and the speech's token is its token while it
      // runs (`runOne`'s accounting, which nets to this); one finalizer gives it back and
      // settles the call or records the cut.
      speech.holdsToken = false
      let running: Effect.Effect<CallResult>
      try {
        running = execute(actor, speech, calls[0]!)
      } catch (defect) {
        speech.holdsToken = true
        throw defect
      }
      // Answered as it was called (most calls): settled on this step.
      const answered = Exit.isExit(running) ? (running as Exit.Exit<CallResult>) : undefined
      if (answered && Exit.isSuccess(answered)) {
        speech.holdsToken = true
        settled[0] = answered.value
        finishOrder.push(0)
        return concluded
      }
      const settles = Effect.onExit(running, (exit) => {
        speech.holdsToken = true
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
          work.acquire()
          if (++started === calls.length) {
            handedOver = true
            speech.holdsToken = false
            work.release()
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
              work.acquire()
              speech.holdsToken = true
            }
            work.release()
          })
      )
    return Effect.forEach(calls, runOne, { concurrency: "unbounded", discard: true }).pipe(
      Effect.onInterrupt(() => Effect.sync(cut)),
      Effect.andThen(concluded)
    )
  })

const execute = (actor: Actor, speech: Speech, call: FunctionCall): Effect.Effect<CallResult> => {
  const tool = actor.tools.get(call.name)
  if (!tool) {
    const available = [...actor.tools.keys()].join(", ") || "none"
    return Effect.succeed({ _tag: "Error", output: `Unknown tool "${call.name}". Available tools: ${available}.` })
  }
  const owner = actor.ownerOf(tool)
  const newCall = (): Call => ({ actor, speech, call, tool, owner, first: undefined, answer: undefined, token: { held: true }, background: undefined, fiber: undefined })
  // Nothing of this owner running in the background (most calls): the call starts on this step.
  if (owner.running.size === 0) return runHandler(newCall())
  const running = [...owner.running.values()].filter((b) => b.name === tool.name)
  const duplicate = running.length > 0 ? tool.options.onDuplicate ?? "allow" : "allow"
  if (duplicate === "reject") {
    const ids = running.map((b) => b.callId).join(", ")
    return Effect.succeed({
      _tag: "Error",
      output: `${tool.name} is already running (call ${ids}); wait for its result${tool.options.cancellable ? " or cancel it" : ""}.`
    })
  }
  const replaced = duplicate === "replace"
    ? Effect.forEach(running, (earlier) => Background.cancel(earlier, `replaced by a newer call (${call.callId})`), { discard: true })
    : Effect.void
  return Effect.andThen(replaced, Effect.suspend(() => runHandler(newCall())))
}

/** One call of a tool: answered by its result, or by its first progress report (then it goes on
 * in the background, owned by `owner`). */
interface Call {
  readonly actor: Actor
  readonly speech: Speech
  readonly call: FunctionCall
  readonly tool: Tool.Tool
  readonly owner: Background.Owner
  /** What the batch waits on for the call's answer: made only when it has to wait (a call
   * answered as it started, most are, needs none). */
  first: Deferred.Deferred<CallResult> | undefined
  /** `first`'s value once it is done. */
  answer: CallResult | undefined
  readonly token: WorkTokenCell
  background: Background.BackgroundCall | undefined
  fiber: Fiber.Fiber<unknown, unknown> | undefined
}

/** A progress report: the first answers the call and moves it to the background. */
const progress = (c: Call, text: string) => {
  const { actor, call, owner } = c
  const core = actor.core
  if (c.background) return owner.report({ _tag: "Progress", call: c.background, text })
  const started: Background.BackgroundCall = {
    callId: call.callId,
    name: call.name,
    arguments: call.arguments,
    tool: c.tool,
    startedAt: core.now(),
    owner,
    fiber: c.fiber,
    updates: 0,
    cancelReason: undefined,
    answered: false
  }
  c.background = started
  owner.running.set(call.callId, started)
  core.background.acquire()
  c.token.held = false
  answer(c, {
    _tag: "Progress",
    output: text,
    answered: () => {
      started.answered = true
      // What it reported meanwhile may be told now.
      if (owner.kind === "agent") actor.send({ _tag: "Kick" })
      else core.holder()?.send({ _tag: "Kick" })
    }
  })
}

/** The call's answer, once: as the Deferred keeps its first value, so does `answer`. */
const answer = (c: Call, result: CallResult) => {
  if (c.answer !== undefined) return
  c.answer = result
  if (c.first) Deferred.doneUnsafe(c.first, Exit.succeed(result))
}

/** The call's end: its result answers it, or (in the background) is reported. */
const finished = (c: Call, result: CallResult) => {
  if (!c.background) return answer(c, result)
  c.owner.running.delete(c.background.callId)
  c.owner.report({ _tag: "Final", call: c.background, result })
  c.actor.core.background.release()
}

/**
 * Calls the handler and waits for what answers the call. Arguments decoded on this step (most
 * are) let the handler be called here, and an effect it returns already done (a transfer, a
 * constant, a failure) settles the call on this step: no fiber would have anything to run. Any
 * other effect runs in a fiber of its own, in the owner's Scope, where it can go on in the
 * background once it reports progress.
 */
const runHandler = (c: Call): Effect.Effect<CallResult> => {
  const { actor, call, tool } = c
  const core = actor.core
  const context: Tool.ToolContext<unknown> = {
    call: { id: call.callId, name: call.name, arguments: call.arguments },
    agent: actor.agent,
    session: core.session(),
    userdata: core.userdata,
    speech: c.speech.handle,
    progress: (text) => Effect.sync(() => progress(c, text))
  }
  const settle = (exit: Exit.Exit<unknown, unknown>) => {
    const { result, event } = classify(tool.name, exit)
    if (event) core.emit({ type: "error", agent: actor.name, source: "tool", message: event, recoverable: true })
    finished(c, result)
  }
  const settleNow = (exit: Exit.Exit<unknown, unknown>) => {
    settle(exit)
    return Effect.succeed(c.answer!)
  }
  const decoded = Tool.decodeArguments(tool, call.arguments)
  let handled: Effect.Effect<unknown, unknown>
  if (Exit.isExit(decoded)) {
    if (Exit.isFailure(decoded)) return settleNow(decoded)
    try {
      handled = tool.handler(decoded.value, context) as Effect.Effect<unknown, unknown>
    } catch (defect) {
      // As a throw inside the handler's fiber would end: a defect.
      return settleNow(Exit.die(defect))
    }
    if (Exit.isExit(handled)) return settleNow(handled)
  } else {
    handled = Effect.flatMap(decoded, (params) => Effect.suspend(() => tool.handler(params, context) as Effect.Effect<unknown, unknown>))
  }
  const body = handled.pipe(
    // The handler's end is classified on the step it ends on.
    Effect.matchCause({
      onFailure: (cause) => settle(Exit.failCause(cause)),
      onSuccess: (value) => settle(Exit.succeed(value))
    }),
    Effect.onInterrupt(() =>
      Effect.sync(() => finished(c, c.background ? Background.interrupted(c.background) : cancelled(`${tool.name} was cancelled.`)))
    )
  )
  // The fiber's services, one context for the three.
  return forkBodyWith(body, (outer) =>
    Context.add(Context.add(Context.add(outer, CurrentAgent, actor.handle), WorkToken, c.token), CurrentCall, {
      actor,
      callId: call.callId,
      foreground: () => c.background === undefined
    })).pipe(
    Effect.forkIn(c.owner.scope, { startImmediately: true }),
    Effect.flatMap((handler) => {
      c.fiber = Diagnostics.counted(handler)
      if (c.background) c.background.fiber = handler
      // A handler that answered as it started (most do): no wait.
      if (c.answer !== undefined) return Effect.succeed(c.answer)
      return Deferred.await(c.first = Deferred.makeUnsafe()).pipe(
        // The batch is cut (the session closes): a call still in the foreground goes with it.
        Effect.onInterrupt(() => (c.background ? Effect.void : Fiber.interrupt(handler)))
      )
    })
  )
}

interface Resolved {
  readonly outputs: ReadonlyArray<FunctionCallOutput>
  readonly winner: { readonly target: Agent; readonly handoff: Handoff.Handoff } | undefined
  readonly reply: boolean
}

/** Turns settled results into outputs in call order and picks the handoff that wins. */
const resolve = (actor: Actor, calls: ReadonlyArray<FunctionCall>, settled: ReadonlyArray<CallResult | undefined>, closing?: string): Resolved => {
  let winner: Resolved["winner"]
  let reply = false
  const outputs = calls.map((call, index) => {
    // (no spread of a base record: this runs for every call on a handoff's path)
    const outputOf = (output: string, isError: boolean, status: OutputStatus) =>
      functionCallOutput({ callId: call.callId, name: call.name, agent: actor.name, output, isError, status })
    const result = settled[index]
    if (!result) return outputOf(`Cancelled: ${closing ?? "not finished"}.`, true, "cancelled")
    switch (result._tag) {
      case "Value":
        reply ||= result.reply
        return outputOf(result.output, false, "ok")
      case "Progress":
        reply = true
        return outputOf(result.output, false, "progress")
      case "Error":
        reply = true
        return outputOf(result.output, true, "error")
      case "Cancelled":
        reply = true
        return outputOf(result.output, true, result.status)
      case "Handoff": {
        const refusal = closing ? `Not transferred to ${result.target.name}: ${closing}.` : refuse(actor, result.target, winner?.target)
        if (refusal) {
          reply = true
          return outputOf(refusal, true, "error")
        }
        winner = { target: result.target, handoff: result.handoff }
        const output = result.handoff.options.message ?? `Transferred to ${result.target.name}.`
        return outputOf(output, false, "handoff")
      }
    }
  })
  return { outputs, winner, reply }
}

const refuse = (actor: Actor, target: Agent, winner: Agent | undefined): string | undefined => {
  if (actor.task) return `Not transferred to ${target.name}: ${actor.name} is a task; complete it instead.`
  if (target === actor.agent) return `Not transferred: ${target.name} already has the conversation.`
  if (target.task) return `Not transferred: ${target.name} is a task, started with AgentTask.run, not a transfer.`
  if (winner) {
    return `Not transferred to ${target.name}: only the first transfer of a response is applied (to ${winner.name}).`
  }
  return undefined
}

const record = (
  actor: Actor,
  calls: ReadonlyArray<FunctionCall>,
  settled: ReadonlyArray<CallResult | undefined>,
  closing?: string
): Resolved => {
  const resolved = resolve(actor, calls, settled, closing)
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
  const { outputs, winner, reply } = record(actor, calls, settled)
  const completion = firstCompletion(actor, calls)
  actor.core.emit({
    type: "function_tools_executed",
    agent: actor.name,
    calls: calls.map((call, i) => ({ call, output: outputs[i]! })),
    hasHandoff: winner !== undefined || completion !== undefined,
    handoffTo: winner?.target.name ?? (completion ? actor.task?.caller.name : undefined),
    deferred: false
  })
  // Words a tool said while the batch ran are heard before the floor moves (rule 2).
  return (completion || winner) && actor.speeches.interjecting()
    ? Effect.andThen(actor.speeches.interjected, Effect.suspend(() => pass(actor, speech, completion, winner, reply)))
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
  // The reply ends here, before the floor moves (the request's own work token keeps the
  // session busy in between).
  if (completion) {
    Lifecycle.startPassing(actor)
    actor.core.send({ _tag: "CompleteTask", actor, result: completion })
    actor.speeches.finish(speech, { _tag: "Finished" })
    actor.core.handleNow()
    return Effect.succeed("passed")
  }
  if (winner) {
    Lifecycle.startPassing(actor)
    const answer = Deferred.makeUnsafe<HandoffOutcome>()
    actor.core.send({ _tag: "Handoff", from: actor, target: winner.target, options: winner.handoff.options, reply: answer })
    actor.speeches.finish(speech, { _tag: "Finished" })
    // The floor moves now, not a turn of the event loop later (a fifth of a warm handoff's
    // time, bench/README.md).
    actor.core.handleNow()
    return Effect.map(Deferred.await(answer), (outcome): Next => {
      if (outcome._tag === "Applied") return "passed"
      Lifecycle.stopPassing(actor)
      return "done"
    })
  }
  return Effect.succeed(!reply || speech.skipFollowUp || !actor.holdsFloor() ? "done" : "reply")
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

