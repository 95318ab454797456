/**
 * What a tool call ended with, as baton sees it: a value, a handoff, an error for the model, a
 * cancellation, or (for a long-running tool) its first progress message.
 */
import { Cause, Data, Duration, Exit, Option } from "effect"
import { type Agent, isAgent } from "../Agent.ts"
import type { OutputStatus } from "../ChatContext.ts"
import type { ErrorReason } from "../ErrorInfo.ts"
import * as Handoff from "../Handoff.ts"
import * as Tool from "../Tool.ts"
import * as ToolOutput from "../ToolOutput.ts"

export type CallResult =
  | { readonly _tag: "Value"; readonly output: string; readonly reply: boolean }
  /** A long-running tool's first report; `answer` is called once it is in history. */
  | { readonly _tag: "Progress"; readonly output: string; readonly answered: () => void }
  | { readonly _tag: "Handoff"; readonly handoff: Handoff.Handoff; readonly target: Agent }
  | { readonly _tag: "Error"; readonly output: string }
  | { readonly _tag: "Cancelled"; readonly output: string; readonly status: Extract<OutputStatus, "cancelled" | "interrupted"> }

/** A failure the session should hear about besides the model (an `error` event). */
export interface Classified {
  readonly result: CallResult
  readonly event?: string | undefined
  /** The event's reason, where it has one (`Timeout`). */
  readonly reason?: ErrorReason | undefined
}

/** A call ran past its tool's `timeout` and was interrupted (ToolCall.ts fails it with this). */
export class TimedOut extends Data.TaggedError("TimedOut")<{ readonly after: Duration.Input }> {}

export const cancelled = (output: string): CallResult => ({ _tag: "Cancelled", output, status: "cancelled" })

export const classify = (name: string, exit: Exit.Exit<unknown, unknown>): Classified => {
  if (Exit.isSuccess(exit)) {
    const value = exit.value
    if (Handoff.isHandoff(value) || isAgent(value)) {
      const handoff = Handoff.isHandoff(value) ? value : Handoff.to(value)
      const target = resolveTarget(handoff)
      return target
        ? { result: { _tag: "Handoff", handoff, target } }
        : {
          result: { _tag: "Error", output: `${name} did not name an agent to transfer to.` },
          event: `${name}: the handoff target is not an agent`
        }
    }
    const noReply = Tool.isNoReply(value)
    const rendered = ToolOutput.render(name, noReply ? value.output : value)
    if (rendered.isError) return { result: { _tag: "Error", output: rendered.text }, event: rendered.text }
    return { result: { _tag: "Value", output: rendered.text, reply: !noReply } }
  }
  const cause = exit.cause
  if (Cause.hasInterruptsOnly(cause)) {
    return { result: { _tag: "Cancelled", output: `${name} was interrupted before it finished.`, status: "interrupted" } }
  }
  const failure = Cause.findErrorOption(cause)
  if (Option.isSome(failure)) {
    const e = failure.value
    if (e instanceof Tool.InvalidArguments || e instanceof Tool.ToolError) return { result: { _tag: "Error", output: e.message } }
    if (e instanceof TimedOut) {
      const after = Duration.format(Duration.fromInputUnsafe(e.after))
      return {
        result: { _tag: "Error", output: `${name} timed out after ${after} and was stopped: it has no result.` },
        event: `${name} timed out after ${after} and was stopped; the model was told`,
        reason: "Timeout"
      }
    }
    return { result: { _tag: "Error", output: `${name} failed: ${describe(e)}` }, event: `${name} failed: ${Cause.pretty(cause)}` }
  }
  return { result: { _tag: "Error", output: `${name} failed unexpectedly.` }, event: `${name} died: ${Cause.pretty(cause)}` }
}

const resolveTarget = (handoff: Handoff.Handoff): Agent | undefined => {
  try {
    const target = Handoff.resolveAgent(handoff.target)
    return isAgent(target) ? target : undefined
  } catch {
    return undefined
  }
}

const describe = (e: unknown): string => {
  if (typeof e === "object" && e !== null) {
    const tag = (e as { _tag?: unknown })._tag
    const msg = (e as { message?: unknown }).message
    if (typeof msg === "string" && msg !== "") return typeof tag === "string" ? `${tag}: ${msg}` : msg
    if (typeof tag === "string") return tag
  }
  return String(e)
}
