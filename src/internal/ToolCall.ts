/**
 * One tool call of a batch: its tool looked up, its arguments decoded, its handler run, and the
 * answer the batch waits for. A handler whose effect is already done when it returns settles on
 * the spot; any other runs in a fiber of its own in its owner's Scope, where a progress report
 * moves it to the background (Background.ts) and its end is reported there.
 */
import { Context, Deferred, Effect, Exit, Fiber } from "effect"
import type { Actor } from "./actor/Actor.ts"
import * as Approvals from "./Approvals.ts"
import * as Background from "./Background.ts"
import { type CallResult, cancelled, classify, TimedOut } from "./CallResult.ts"
import { currentRef, doneExit, forkBodyWith } from "./EffectFastPaths.ts"
import * as Guardrails from "./Guardrails.ts"
import { CurrentCall, WorkToken, type WorkTokenCell } from "./FlowContext.ts"
import type { FunctionCall } from "../ChatContext.ts"
import { CurrentAgent } from "../CurrentAgent.ts"
import * as Diagnostics from "../Diagnostics.ts"
import * as MockTools from "../MockTools.ts"
import type { Speech } from "../Speech.ts"
import * as Tool from "../Tool.ts"
import * as ActorTools from "./actor/ActorTools.ts"
import * as Work from "./Work.ts"

/** Runs `call` of `actor`'s batch for `speech`: its result, or its first progress report. */
export const execute = (actor: Actor, speech: Speech, call: FunctionCall): Effect.Effect<CallResult> => {
  ActorTools.refresh(actor)
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
  Work.acquire(core.background)
  c.token.held = false
  answer(c, {
    _tag: "Progress",
    output: text,
    answered: () => {
      started.answered = true
      // What it reported meanwhile may be told now.
      if (owner.kind === "agent") return actor.send({ _tag: "Kick" })
      // No agent holds the floor while a person does: the session records them then.
      const holder = core.holder()
      if (holder) holder.send({ _tag: "Kick" })
      else core.send({ _tag: "SessionCallAnswered" })
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
  Work.release(c.actor.core.background)
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
    const { result, event, reason } = classify(tool.name, exit)
    if (event) core.emit({ type: "error", agent: actor.name, source: "tool", message: event, recoverable: true, ...(reason ? { reason } : {}) })
    if (c.background && core.observer) core.observer.backgroundFinished(core.session(), c.owner.kind === "session" ? "session" : actor.name, call.callId, tool.name)
    finished(c, result)
  }
  const settleNow = (exit: Exit.Exit<unknown, unknown>) => {
    settle(exit)
    return Effect.succeed(c.answer!)
  }
  // A test's mock of this tool for this agent (MockTools), looked up as the call starts.
  const mock = MockTools.mockFor(currentRef(MockTools.CurrentMocks), actor.agent, tool.name)
  // A tool that needs approval waits for it after decoding, before its handler (Approvals.ts).
  const decoded = Approvals.gated(actor, tool, call, context, Tool.decodeArguments(tool, call.arguments))
  const decodedNow = doneExit(decoded)
  // `unknown`: the handler (or its mock) is the user's, and so are its errors (an error output).
  let handled: Effect.Effect<unknown, unknown>
  if (decodedNow) {
    if (Exit.isFailure(decodedNow)) return settleNow(decodedNow)
    try {
      handled = (mock ? mock(decodedNow.value, context) : tool.handler(decodedNow.value, context)) as Effect.Effect<unknown, unknown>
    } catch (defect) {
      // As a throw inside the handler's fiber would end: a defect.
      return settleNow(Exit.die(defect))
    }
    const handledNow = doneExit(handled)
    if (handledNow) return settleNow(handledNow)
  } else {
    handled = Effect.flatMap(decoded, (params) => Effect.suspend(() => (mock ? mock(params, context) : tool.handler(params, context)) as Effect.Effect<unknown, unknown>))
  }
  // The agent's tool output guardrails see the handler's value before it is recorded.
  handled = Guardrails.checkOutput(actor, call, handled)
  // Past the tool's timeout the handler is interrupted and the call ends as timed out (for a
  // long-running tool, its final result: the limit bounds its whole run).
  const timeout = tool.options.timeout
  const limited = timeout === undefined
    ? handled
    : Effect.timeoutOrElse(handled, { duration: timeout, orElse: () => Effect.fail(new TimedOut({ after: timeout })) })
  const body = limited.pipe(
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
      speech: c.speech,
      callId: call.callId,
      foreground: () => c.background === undefined
    })).pipe(
    Effect.forkIn(c.owner.scope, { startImmediately: true }),
    Effect.flatMap((handler) => {
      c.fiber = Diagnostics.counted(handler)
      if (c.background) c.background.fiber = handler
      // A handler that answered as it started (most do): no wait.
      if (c.answer !== undefined) return Effect.succeed(c.answer)
      const first = Deferred.makeUnsafe<CallResult>()
      c.first = first
      return Deferred.await(first).pipe(
        // The batch is cut (the session closes): a call still in the foreground goes with it.
        Effect.onInterrupt(() => (c.background ? Effect.void : Fiber.interrupt(handler)))
      )
    })
  )
}
