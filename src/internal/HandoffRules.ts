/**
 * Whether a transfer of the floor is refused, and why: one decision for the three places that
 * ask it (a tool batch as it settles, ToolBatch.ts; the supervisor as it applies the handoff,
 * Floor.ts; a background call's handoff result as it is delivered, Background.ts), so a reason
 * has one wording wherever it is reported: in the refused call's output (`Not transferred to B:
 * <reason>.`) and in the `handoff_not_applied` event (`<reason>`).
 *
 * Pure: it reads the facts its callers gather (who asks, who holds the floor, the target) and
 * returns a tagged refusal, or undefined when the transfer may go on. Tested alone
 * (test/src/internal/HandoffRules.test.ts).
 */

/** An agent in the session (an actor): `task` is set when it runs as a task. */
export interface Party {
  readonly name: string
  readonly agent: unknown
  readonly task?: unknown
}

/** The agent a transfer goes to: `task` is set when it is a task agent. */
export interface Target {
  readonly name: string
  readonly task?: unknown
}

export interface Transfer {
  /** The agent handing off; undefined when the application forces the handoff (the holder is
   * asked to hand off). */
  readonly from: Party | undefined
  /** Who holds the floor: undefined when no one does; `"other"` when `from` does not hold it and
   * the caller does not know who does. */
  readonly holder: Party | "other" | undefined
  readonly target: Target
  /** An earlier call of the same response transferred the floor, to this agent. */
  readonly earlier?: string | undefined
  /** The asking agent is already passing the floor (a batch under this one passes it). */
  readonly passing?: boolean | undefined
  /** The session closed before the transfer could be applied. */
  readonly closing?: boolean | undefined
}

export type Refusal =
  | { readonly _tag: "SessionClosing" }
  | { readonly _tag: "AlreadyPassing"; readonly agent: string }
  | { readonly _tag: "NoHolder" }
  | { readonly _tag: "NotHolder"; readonly agent: string; readonly holder: string | undefined }
  | { readonly _tag: "FromTask"; readonly agent: string }
  | { readonly _tag: "TargetIsTask"; readonly target: string }
  | { readonly _tag: "TargetHoldsFloor"; readonly target: string }
  | { readonly _tag: "NotFirst"; readonly first: string }

/** The refusal of `transfer`, if any; the first that applies in the order below. */
export const refusal = (transfer: Transfer): Refusal | undefined => {
  const { from, holder, target } = transfer
  if (transfer.closing) return { _tag: "SessionClosing" }
  if (from && transfer.passing) return { _tag: "AlreadyPassing", agent: from.name }
  if (holder === undefined) return { _tag: "NoHolder" }
  if (holder === "other") return { _tag: "NotHolder", agent: from?.name ?? "", holder: undefined }
  if (from && from !== holder) return { _tag: "NotHolder", agent: from.name, holder: holder.name }
  if (holder.task !== undefined) return { _tag: "FromTask", agent: holder.name }
  if (target.task !== undefined) return { _tag: "TargetIsTask", target: target.name }
  if (target === holder.agent) return { _tag: "TargetHoldsFloor", target: target.name }
  if (transfer.earlier !== undefined) return { _tag: "NotFirst", first: transfer.earlier }
  return undefined
}

/** The one wording of each reason (the `handoff_not_applied` event's `reason`). */
export const reason = (refusal: Refusal): string => {
  switch (refusal._tag) {
    case "SessionClosing":
      return "the session closed"
    case "AlreadyPassing":
      return `${refusal.agent} is already passing the floor`
    case "NoHolder":
      return "no agent holds the floor"
    case "NotHolder":
      return refusal.holder === undefined
        ? `${refusal.agent} no longer holds the floor`
        : `${refusal.agent} no longer holds the floor (${refusal.holder} does)`
    case "FromTask":
      return `${refusal.agent} is a task: only its completion returns the floor`
    case "TargetIsTask":
      return `${refusal.target} is a task: start it with AgentTask.run, not a transfer`
    case "TargetHoldsFloor":
      return `${refusal.target} already holds the floor`
    case "NotFirst":
      return `only the first transfer of a response is applied (to ${refusal.first})`
  }
}

/** The output of a refused transfer's tool call. */
export const output = (target: string, refused: Refusal): string => `Not transferred to ${target}: ${reason(refused)}.`
