/**
 * Long-running tools. A handler that reports progress (`context.progress(text)`) turns its call
 * into a background call: the first progress message is the call's output (the agent can say
 * "please hold on") and the handler keeps running in its owner's Scope: its actor's for an
 * agent's tool (it goes on while the actor is paused), the session's for a session tool.
 * Later progress and the final result come back as deliveries, recorded as new function call /
 * output pairs (every call keeps exactly one output: rule 4) when the owner can take them:
 *
 * - progress and results: when the actor holds the floor and is idle (not while the user is
 *   speaking, not during its own reply), followed by a reply about them;
 * - a handoff result: as soon as the actor's own reply has ended, if it still holds the floor,
 *   exactly like an immediate handoff (same `function_tools_executed` event, rule 9);
 *   otherwise it is recorded, and a `handoff_not_applied` event says why.
 */
import { Effect, Fiber, Schema, type Scope } from "effect"
import type { Agent } from "../Agent.ts"
import { cancelled, type CallResult } from "./CallResult.ts"
import { type ChatItem, functionCall, type FunctionCall, type FunctionCallOutput, functionCallOutput } from "../ChatContext.ts"
import type { HandoffOptions } from "../Handoff.ts"
import * as HandoffRules from "./HandoffRules.ts"
import * as Tool from "../Tool.ts"

export interface BackgroundCall {
  readonly callId: string
  readonly name: string
  readonly arguments: string
  readonly tool: Tool.Tool
  readonly startedAt: number
  readonly owner: Owner
  fiber: Fiber.Fiber<unknown, unknown> | undefined
  /** Deliveries made so far (numbers the synthetic calls). */
  updates: number
  /** Why it was cancelled, when it was. */
  cancelReason: string | undefined
  /** The call's own output (its first progress report) is in history. */
  answered: boolean
}

/** Where a background call runs and reports to. */
export interface Owner {
  readonly kind: "agent" | "session"
  readonly scope: Scope.Scope
  readonly running: Map<string, BackgroundCall>
  readonly report: (delivery: Delivery) => void
}

export type Delivery =
  | { readonly _tag: "Progress"; readonly call: BackgroundCall; readonly text: string }
  | { readonly _tag: "Final"; readonly call: BackgroundCall; readonly result: CallResult }

/** The new function call / output pair that records a delivery. */
export const pair = (
  agent: string,
  delivery: Delivery,
  override?: { readonly output: string; readonly isError: boolean; readonly status: FunctionCallOutput["status"] }
): { readonly call: FunctionCall; readonly output: FunctionCallOutput; readonly reply: boolean } => {
  const n = ++delivery.call.updates
  const suffix = delivery._tag === "Progress" ? `progress${n}` : "result"
  const call = functionCall({
    callId: `${delivery.call.callId}:${suffix}`,
    name: delivery.call.name,
    arguments: delivery.call.arguments,
    agent
  })
  const base = { callId: call.callId, name: call.name, agent }
  if (override) return { call, output: functionCallOutput({ ...base, ...override }), reply: false }
  if (delivery._tag === "Progress") {
    return { call, output: functionCallOutput({ ...base, output: delivery.text, isError: false, status: "progress" }), reply: true }
  }
  const result = delivery.result
  switch (result._tag) {
    case "Value":
      return { call, output: functionCallOutput({ ...base, output: result.output, isError: false, status: "ok" }), reply: result.reply }
    case "Progress":
      return { call, output: functionCallOutput({ ...base, output: result.output, isError: false, status: "progress" }), reply: true }
    case "Error":
      return { call, output: functionCallOutput({ ...base, output: result.output, isError: true, status: "error" }), reply: true }
    case "Cancelled":
      return { call, output: functionCallOutput({ ...base, output: result.output, isError: true, status: result.status }), reply: false }
    case "Handoff":
      return {
        call,
        output: functionCallOutput({
          ...base,
          output: result.handoff.options.message ?? `Transferred to ${result.target.name}.`,
          isError: false,
          status: "handoff"
        }),
        reply: false
      }
  }
}

/** Interrupts a background call; it reports a cancelled result with `reason`. */
export const cancel = (call: BackgroundCall, reason: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    call.cancelReason ??= reason
    return call.fiber ? Fiber.interrupt(call.fiber).pipe(Effect.asVoid) : Effect.void
  })

/** The cancelled result a background call reports when its fiber is interrupted. */
export const interrupted = (call: BackgroundCall): CallResult =>
  cancelled(`${call.name} was cancelled: ${call.cancelReason ?? "the session closed"}.`)

/** What an actor needs to take deliveries. */
export interface DeliveryHost {
  readonly name: string
  readonly isTask: boolean
  readonly self: Agent
  readonly holdsFloor: () => boolean
  /** Its own reply is over, no hook or batch is running: a handoff may apply now. */
  readonly readyForHandoff: () => boolean
  /** Idle and the user is not speaking: progress and results may be told now. */
  readonly readyToTell: () => boolean
  readonly commit: (item: ChatItem) => void
  readonly executed: (calls: ReadonlyArray<{ call: FunctionCall; output: FunctionCallOutput }>, handoffTo: string | undefined) => void
  readonly notApplied: (to: string, reason: string) => void
  readonly requestHandoff: (target: Agent, options: HandoffOptions) => void
  readonly reply: () => void
}

/** Why a background call's handoff result is not applied (HandoffRules.ts), if it is not. */
const refusal = (host: DeliveryHost, target: Agent): HandoffRules.Refusal | undefined => {
  const from: HandoffRules.Party = { name: host.name, agent: host.self, task: host.isTask ? true : undefined }
  return HandoffRules.refusal({ from, holder: host.holdsFloor() ? from : "other", target })
}

/**
 * Takes what can be taken of `pending` (mutated: taken deliveries are removed), in order.
 * Nothing of a call is told before the call's own output is in history (its batch may still
 * be waiting for a sibling, or for a task), and a handoff result decides the floor before
 * anything after it. A call whose output is not in history yet holds back its own reports only:
 * the reports of other calls go past them (each call's reports keep their order).
 */
export const deliver = (host: DeliveryHost, pending: Array<Delivery>): void => {
  const ready = pending.filter((d) => d.call.answered)
  if (ready.length === 0) return
  const take = (taken: ReadonlyArray<Delivery>) => {
    const gone = new Set(taken)
    let kept = 0
    for (const d of pending) if (!gone.has(d)) pending[kept++] = d
    pending.length = kept
    return taken
  }
  const handoffIndex = ready.findIndex((d) => d._tag === "Final" && d.result._tag === "Handoff")
  if (handoffIndex >= 0) {
    const delivery = ready[handoffIndex]! as Extract<Delivery, { _tag: "Final" }>
    const result = delivery.result as Extract<CallResult, { _tag: "Handoff" }>
    const refused = refusal(host, result.target)
    if (refused) {
      const reason = HandoffRules.reason(refused)
      // Recorded now, after everything reported before it, without a reply.
      const pairs = take(ready.slice(0, handoffIndex + 1)).map((d) =>
        d === delivery
          ? pair(host.name, d, { output: HandoffRules.output(result.target.name, refused), isError: true, status: "error" })
          : pair(host.name, d)
      )
      record(host, pairs)
      host.executed(pairs, undefined)
      host.notApplied(result.target.name, reason)
      return deliver(host, pending)
    }
    if (!host.readyForHandoff()) return
    // Everything reported so far is recorded first; the handoff is last, like in a batch.
    const pairs = take(ready.slice(0, handoffIndex + 1)).map((d) => pair(host.name, d))
    record(host, pairs)
    host.executed(pairs, result.target.name)
    host.requestHandoff(result.target, result.handoff.options)
    return
  }
  if (!host.holdsFloor() || !host.readyToTell()) return
  const pairs = take(ready).map((d) => pair(host.name, d))
  record(host, pairs)
  host.executed(pairs, undefined)
  if (pairs.some((p) => p.reply)) host.reply()
}

const record = (host: Pick<DeliveryHost, "commit">, pairs: ReadonlyArray<ReturnType<typeof pair>>) => {
  for (const p of pairs) {
    host.commit(p.call)
    host.commit(p.output)
  }
}

/** Records deliveries at once, without replies (when the actor closes). */
export const flush = (host: Pick<DeliveryHost, "name" | "commit">, pending: Array<Delivery>): void => {
  for (const delivery of pending.splice(0)) {
    // A call whose own output never made it into history gets no later pair either.
    if (!delivery.call.answered) continue
    const recorded = delivery._tag === "Final" && delivery.result._tag === "Handoff"
      ? pair(host.name, delivery, {
        output: HandoffRules.output(delivery.result.target.name, { _tag: "SessionClosing" }),
        isError: true,
        status: "error"
      })
      : pair(host.name, delivery)
    host.commit(recorded.call)
    host.commit(recorded.output)
  }
}

const describeRunning = (calls: ReadonlyArray<BackgroundCall>, now: number) =>
  calls.length === 0
    ? "No background tools are running."
    : calls.map((c) => `${c.callId}: ${c.name}(${c.arguments}) running for ${Math.round((now - c.startedAt) / 1000)}s${c.tool.options.cancellable ? ", cancellable" : ""}`).join("\n")

/**
 * The tools baton adds when any of an agent's tools is cancellable: list the running
 * background calls, and cancel one.
 */
export const controlTools = (running: () => ReadonlyArray<BackgroundCall>, now: () => number): ReadonlyArray<Tool.Tool> => [
  Tool.make("list_background_tools", {
    description: "List the tools still running in the background, with their call ids.",
    handler: () => Effect.sync(() => describeRunning(running(), now()))
  }),
  Tool.make("cancel_background_tool", {
    description: "Cancel a tool running in the background, by its call id (see list_background_tools).",
    parameters: Schema.Struct({ call_id: Schema.String }),
    handler: ({ call_id }) =>
      Effect.gen(function*() {
        const call = running().find((c) => c.callId === call_id)
        if (!call) return yield* new Tool.ToolError({ message: `No background tool is running with call id ${call_id}.` })
        if (!call.tool.options.cancellable) return yield* new Tool.ToolError({ message: `${call.name} cannot be cancelled.` })
        yield* cancel(call, "cancelled on request")
        return `Cancelled ${call.name} (${call_id}).`
      })
  })
]
