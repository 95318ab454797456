/**
 * `AgentTask<A>`: an agent that runs until it completes with a typed result. Awaiting one (from
 * a tool or a hook) lends the caller's floor to the task; its completion returns the floor to
 * the caller, merges the task's messages into the caller's context (function calls only if
 * asked) and resumes the caller with the result.
 *
 * ```ts
 * const askName: AgentTask<string> = AgentTask.make({
 *   name: "ask_name",
 *   instructions: "Ask the caller's name.",
 *   tools: [Tool.make("record_name", {
 *     description: "Record the caller's name",
 *     parameters: Schema.Struct({ name: Schema.String }),
 *     handler: ({ name }) => AgentTask.complete(askName, name)
 *   })],
 *   onEnter: Agent.reply()
 * })
 * // in a tool or hook of another agent:
 * const name = yield* AgentTask.run(askName)
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect } from "effect"
import type { Agent, AgentOptions, ToolRequirements, TypedAgentOptions } from "./Agent.ts"
import * as AgentModule from "./Agent.ts"
import { CurrentAgent } from "./CurrentAgent.ts"
import { TaskError } from "./Errors.ts"
import type { ContextPolicy } from "./Handoff.ts"
import type * as Tool from "./Tool.ts"
import type * as Toolset from "./Toolset.ts"
import { type NoReply, noReply } from "./Tool.ts"

declare const Result: unique symbol

/**
 * A task with result `A` whose tools, hooks and model need `R` (as for `Agent<R>`):
 * `AgentTask.run` needs the same. `AgentTask<A>` is a task that needs nothing; an annotation
 * `AgentTask<A, CrmApi>` is checked against what its parts need.
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentTask<out A, out R = never> extends Agent<R> {
  readonly task: NonNullable<Agent["task"]>
  /** Phantom: the result type. */
  readonly [Result]?: A
}

/**
 * The options of `AgentTask.make`: an agent's options plus what the task sees of its caller's
 * context and whether its function calls go back into it.
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentTaskOptions<R = never> extends AgentOptions<R> {
  /** Merge the task's function calls back into the caller's context too (default false). */
  readonly includeFunctionCalls?: boolean
  /** What the task sees of its caller's context (default "full"). */
  readonly context?: ContextPolicy
}

/**
 * `AgentTaskOptions` with each part's requirements seen by the type checker.
 *
 * @since 0.1.0
 * @category models
 */
export interface TypedAgentTaskOptions<T extends ReadonlyArray<Tool.Any | Toolset.Any>, E, X, S, M, H = never, G = never, Rs = never>
  extends TypedAgentOptions<T, E, X, S, M, H, G, Rs>
{
  readonly includeFunctionCalls?: boolean
  readonly context?: ContextPolicy
}

/**
 * Makes a task. Its result type comes from the annotation (`const ask: AgentTask<string, Crm> =
 * AgentTask.make({...})`, checked against what its parts need) or an explicit
 * `AgentTask.make<string>({...})` (then its parts must need nothing but `CurrentAgent`: the
 * other type parameters take their defaults; annotate instead when they need services).
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { AgentTask, Tool } from "@baton-voice/baton"
 *
 * const askEmail: AgentTask.AgentTask<string> = AgentTask.make<string>({
 *   name: "ask_email",
 *   instructions: "Ask the user for their email address, then record it.",
 *   tools: [
 *     Tool.make("record_email", {
 *       description: "Record the user's email address",
 *       parameters: Schema.Struct({ email: Schema.String }),
 *       handler: ({ email }) => AgentTask.complete(askEmail, email)
 *     })
 *   ]
 * })
 *
 * // in a tool handler or hook of the agent holding the floor:
 * const email = AgentTask.run(askEmail)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: <
  A,
  const T extends ReadonlyArray<Tool.Any | Toolset.Any> = ReadonlyArray<Tool.Tool | Toolset.Toolset>,
  E = CurrentAgent,
  X = CurrentAgent,
  S = CurrentAgent,
  M = never,
  H = CurrentAgent,
  G = never,
  Rs = CurrentAgent
>(options: TypedAgentTaskOptions<T, E, X, S, M, H, G, Rs>) => AgentTask<A, ToolRequirements<T> | Exclude<E | X | S | H | Rs, CurrentAgent> | M | G> = (
  options: TypedAgentTaskOptions<ReadonlyArray<Tool.Any | Toolset.Any>, unknown, unknown, unknown, unknown, unknown, unknown, unknown>
): AgentTask<never> =>
  // The signature above infers what the task needs from its parts (as `Agent.make` does).
  ({
    ...AgentModule.make(options),
    task: { includeFunctionCalls: options.includeFunctionCalls ?? false, context: options.context ?? "full" }
  }) as AgentTask<never>

/**
 * Runs `task` with the floor lent by the current agent, and returns its result. Needs what the
 * task needs, so the tool or hook that runs it does too.
 *
 * @since 0.1.0
 * @category combinators
 */
export const run: <A, R>(task: AgentTask<A, R>) => Effect.Effect<A, TaskError, CurrentAgent | R> = Effect
  .fn("AgentTask.run")(
    // What the task needs is in this Effect's requirements, so the session was started with it.
    (task: AgentTask<unknown, unknown>): Effect.Effect<never, TaskError, CurrentAgent> =>
      CurrentAgent.use((agent) => agent.runTask(task as AgentTask<unknown>) as Effect.Effect<never, TaskError>)
  )

const checkOwner = (task: Agent<unknown>) =>
  CurrentAgent.use((agent) =>
    agent.agent === task
      ? Effect.succeed(agent)
      : Effect.fail(
        new TaskError({ task: task.name, reason: "invalid", message: `${agent.name} cannot complete ${task.name}` })
      )
  )

/**
 * Completes `task` with `value`, from one of its own tools or hooks. Returns a tool result the
 * task's model does not reply to (the floor goes back to the caller). From a tool in its batch,
 * the floor goes back once the batch has settled; from a hook, or a tool that reported progress
 * and went on in the background, once what the task was saying has been cut and recorded.
 *
 * @since 0.1.0
 * @category combinators
 */
export const complete: <A>(task: AgentTask<A, unknown>, value: NoInfer<A>) => Effect.Effect<NoReply, TaskError, CurrentAgent> = Effect.fn(
  "AgentTask.complete"
)((task: AgentTask<unknown, unknown>, value: unknown) =>
  checkOwner(task).pipe(
    Effect.flatMap((agent) => agent.completeTask({ _tag: "Success", value })),
    Effect.as(noReply(`${task.name} completed.`))
  )
)

/**
 * Ends `task` with a failure its caller receives as a `TaskError`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const fail: (task: AgentTask<unknown, unknown>, message: string) => Effect.Effect<NoReply, TaskError, CurrentAgent> = Effect.fn(
  "AgentTask.fail"
)((task: AgentTask<unknown, unknown>, message: string) =>
  checkOwner(task).pipe(
    Effect.flatMap((agent) =>
      agent.completeTask({ _tag: "Failure", error: new TaskError({ task: task.name, reason: "failed", message }) })
    ),
    Effect.as(noReply(`${task.name} ended: ${message}`))
  )
)
