/**
 * Tool calls waiting for approval (`Tool.make({ needsApproval })`), per session. A call that
 * needs it is registered here between its decoded arguments and its handler, emits
 * `tool_approval_requested`, and waits in its own fiber, holding its work token: the session is
 * busy meanwhile (rule 10). It is answered by `approve` / `reject` (the program, the service's
 * operator), by the user speaking over it or its agent passing the floor (rejected), or by the
 * session closing (its fiber interrupted: a cancelled output, rule 4).
 */
import { Deferred, Effect, Exit, Stream } from "effect"
import type { Actor } from "./actor/Actor.ts"
import * as Guardrails from "./Guardrails.ts"
import type { SessionCore } from "./SessionCore.ts"
import { InvalidInput } from "../Errors.ts"
import type { FunctionCall } from "../ChatContext.ts"
import type { SessionEvent } from "../Events.ts"
import * as Tool from "../Tool.ts"

/** How a waiting call was answered. */
type Answer =
  | { readonly _tag: "Approved" }
  | { readonly _tag: "Rejected"; readonly by: "app" | "barge_in" | "handoff"; readonly reason: string | undefined }

interface Pending {
  readonly callId: string
  readonly tool: string
  readonly actor: Actor
  readonly answer: Deferred.Deferred<Answer>
}

/** The calls waiting, by session (the core lives as long as its session). */
const waiting = new WeakMap<SessionCore, Map<string, Pending>>()

const registry = (core: SessionCore): Map<string, Pending> => {
  let found = waiting.get(core)
  if (!found) {
    found = new Map()
    waiting.set(core, found)
  }
  return found
}

/** The ids of the calls waiting for approval in `core`'s session, oldest first. */
export const pending = (core: SessionCore): ReadonlyArray<string> => [...(waiting.get(core)?.keys() ?? [])]

const answer = (core: SessionCore, callId: string, verb: string, value: Answer): Effect.Effect<void, InvalidInput> =>
  Effect.suspend(() => {
    const found = waiting.get(core)?.get(callId)
    if (!found) {
      const ids = pending(core)
      return Effect.fail(
        new InvalidInput({
          message: `Cannot ${verb} ${JSON.stringify(callId)}: no tool call with that id is waiting for approval (waiting: ${ids.length > 0 ? ids.join(", ") : "none"}).`
        })
      )
    }
    Deferred.doneUnsafe(found.answer, Exit.succeed(value))
    return Effect.void
  })

/** Runs the waiting call `callId`. Fails with `InvalidInput` when no call with that id waits. */
export const approve = (core: SessionCore, callId: string): Effect.Effect<void, InvalidInput> =>
  answer(core, callId, "approve", { _tag: "Approved" })

/** Answers the waiting call `callId` with a rejection the model sees (with `reason`, if any). */
export const reject = (core: SessionCore, callId: string, options: { readonly reason?: string } = {}): Effect.Effect<void, InvalidInput> =>
  answer(core, callId, "reject", { _tag: "Rejected", by: "app", reason: options.reason })

/**
 * The user took a turn `actor` holds until its tool step ends (Input.ts): the calls of its that
 * wait for approval are rejected, as a barge-in, so the step ends and the turn is answered.
 */
export const bargeIn = (actor: Actor): void => {
  const calls = waiting.get(actor.core)
  if (!calls) return
  for (const entry of calls.values()) {
    if (entry.actor === actor) Deferred.doneUnsafe(entry.answer, Exit.succeed({ _tag: "Rejected", by: "barge_in", reason: undefined }))
  }
}

/**
 * `decoded` followed by the agent's tool input guardrails (Guardrails.ts) and the approval its
 * tool needs, if it needs one: a call with neither gets `decoded` itself (it still settles on its
 * step when it can); one with them runs in a fiber of its own.
 */
export const gated = <P>(
  actor: Actor,
  tool: Tool.Tool,
  call: FunctionCall,
  context: Tool.ToolContext<unknown>,
  decoded: Effect.Effect<P, Tool.InvalidArguments>
): Effect.Effect<P, unknown> => {
  // `unknown`: a `needsApproval` function is the user's, and so are its errors.
  const needs = tool.options.needsApproval
  const guarded = Guardrails.hasToolGuardrails(actor)
  if ((needs === undefined || needs === false) && !guarded) return decoded
  return Effect.flatMap(decoded, (params) => {
    // The input guardrails first: a call they block is not worth an operator's time.
    const checked = Guardrails.checkInput(actor, call, params) ?? Effect.succeed(params)
    if (needs === undefined || needs === false) return checked
    return Effect.flatMap(checked, () => {
      const asked = needs === true ? Effect.succeed(true) : (needs(params, context) as Effect.Effect<boolean, unknown>)
      return Effect.flatMap(asked, (needed) => (needed ? Effect.as(awaitApproval(actor, tool, call), params) : Effect.succeed(params)))
    })
  })
}

/** Registers the call, says so, and waits for its answer; a rejection is a `ToolError` the model reads. */
const awaitApproval = (actor: Actor, tool: Tool.Tool, call: FunctionCall): Effect.Effect<void, Tool.ToolError> =>
  Effect.suspend(() => {
    const core = actor.core
    const calls = registry(core)
    const entry: Pending = { callId: call.callId, tool: tool.name, actor, answer: Deferred.makeUnsafe<Answer>() }
    calls.set(call.callId, entry)
    const userTurn = core.userTurns()
    core.emit({ type: "tool_approval_requested", agent: actor.name, callId: call.callId, tool: tool.name, arguments: call.arguments })
    const decided = Effect.raceFirst(Deferred.await(entry.answer), movedOn(actor, userTurn))
    return decided.pipe(
      Effect.flatMap((result) => {
        calls.delete(call.callId)
        const approved = result._tag === "Approved"
        core.emit({
          type: "tool_approval_answered",
          agent: actor.name,
          callId: call.callId,
          tool: tool.name,
          approved,
          by: result._tag === "Approved" ? "app" : result.by,
          ...(result._tag === "Rejected" && result.reason !== undefined ? { reason: result.reason } : {})
        })
        return result._tag === "Approved" ? Effect.void : Effect.fail(new Tool.ToolError({ message: rejection(tool.name, result) }))
      }),
      // Closed while it waits: the call is cancelled (its output says so); nothing waits any more.
      Effect.onInterrupt(() => Effect.sync(() => calls.delete(call.callId)))
    )
  })

/** What the model reads when a call was not approved. */
const rejection = (name: string, result: Extract<Answer, { _tag: "Rejected" }>): string => {
  switch (result.by) {
    case "app":
      return `${name} was not approved${result.reason ? `: ${result.reason}` : ""}. It did not run.`
    case "barge_in":
      return `${name} was not approved: the user spoke before it was. It did not run.`
    case "handoff":
      return `${name} was not approved: the conversation moved to another agent before it was. It did not run.`
  }
}

/**
 * Completes with a rejection once the conversation moved on from the call: its agent passed the
 * floor, or the user spoke or typed a new turn. Checked once as it starts, for what happened
 * before it was listening.
 */
const movedOn = (actor: Actor, userTurn: number): Effect.Effect<Answer> => {
  const core = actor.core
  const handoff: Answer = { _tag: "Rejected", by: "handoff", reason: undefined }
  const bargeIn: Answer = { _tag: "Rejected", by: "barge_in", reason: undefined }
  const now = (): Answer | undefined =>
    !actor.holdsFloor() ? handoff : core.userTurns() !== userTurn || core.userSpeaking() ? bargeIn : undefined
  const of = (event: SessionEvent): Answer | undefined => {
    if (event.type === "agent_handoff" && event.from === actor.name) return handoff
    if (event.type === "user_state_changed" && event.state === "speaking") return bargeIn
    if (event.type === "conversation_item_added" && event.item._tag === "Message" && event.item.role === "user") return bargeIn
    return undefined
  }
  return core.session().events.pipe(
    Stream.map(of),
    Stream.filter((answer): answer is Answer => answer !== undefined),
    Stream.merge(Stream.suspend(() => {
      const already = now()
      return already ? Stream.make(already) : Stream.empty
    })),
    Stream.runHead,
    // The stream ends without one only when the session closes: the close answers the call.
    Effect.flatMap((found) => (found._tag === "Some" ? Effect.succeed(found.value) : Effect.never))
  )
}
