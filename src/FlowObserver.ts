/**
 * What the runtime tells an observer about the user's own code as it runs it: each hook
 * (onEnter, onResume, onExit, onUserAway) as it starts and ends, each task result as it reaches
 * the flow that awaited it, each background (long-running) handler as it ends. `baton sim
 * --agents` (src/sim) provides one to check rules 5, 6 and 9 on a user's agents without wrapping
 * them: an agent stays the user's value, compared by reference, the target of the user's
 * handoffs and the agent the user's tools close over.
 *
 * A session reads it once as it starts (`SessionCore.observer`); absent, each place that would
 * report tests one field and does nothing more. Not part of the package's API.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context } from "effect"
import type { AgentSession } from "./AgentSession.ts"

/**
 * The hooks an actor runs in its hook lane.
 *
 * @since 0.1.0
 * @category models
 */
export type HookName = "onEnter" | "onExit" | "onResume" | "onRestore" | "onUserAway"

/**
 * What an observer hears; each report names the session it comes from (its event log says
 * where in it this happened).
 *
 * @since 0.1.0
 * @category models
 */
export interface FlowObserver {
  /** `agent`'s `hook` starts: every hook it waited for (the lane, earlier holders' onExits) has ended. */
  readonly hookStarted: (session: AgentSession<unknown>, agent: string, hook: HookName) => void
  /** `agent`'s `hook` ended (returned, failed or was interrupted). */
  readonly hookEnded: (session: AgentSession<unknown>, agent: string, hook: HookName) => void
  /** The flow of `caller` that ran `task` (AgentTask.run) got its result: a value (`ok`) or a TaskError. */
  readonly taskReturned: (session: AgentSession<unknown>, caller: string, task: string, ok: boolean) => void
  /** The handler of a call gone to the background (it reported progress) returned or failed. */
  readonly backgroundFinished: (session: AgentSession<unknown>, agent: string, callId: string, tool: string) => void
}

/**
 * The observer sessions started where it is provided get; none by default.
 *
 * @since 0.1.0
 * @category references
 */
export const CurrentFlowObserver = Context.Reference<FlowObserver | undefined>("baton/FlowObserver", { defaultValue: () => undefined })
