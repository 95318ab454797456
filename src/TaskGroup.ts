/**
 * `TaskGroup`: an ordered set of tasks run one after the other, itself an `AgentTask` whose
 * result is the record of its tasks' results. Each task gets a tool to go back to an earlier
 * one (when the user wants to change what they gave there): the group then re-runs the tasks
 * from that one on.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Schema } from "effect"
import * as AgentTask from "./AgentTask.ts"
import { CurrentAgent } from "./CurrentAgent.ts"
import * as Tool from "./Tool.ts"

/**
 * One step of a task group: an id, a description (shown to the model for going back) and the task
 * to run.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskGroupEntry<R = never> {
  readonly id: string
  readonly description: string
  /** A task value, or a function making one (a fresh task each time it runs); it needs `R`. */
  readonly task: AgentTask.AgentTask<unknown, R> | (() => AgentTask.AgentTask<unknown, R>)
}

/**
 * What the tasks of a group's entries need.
 *
 * @since 0.1.0
 * @category utils
 */
export type EntryRequirements<Entries> = Entries extends ReadonlyArray<infer Entry>
  ? Entry extends TaskGroupEntry<infer R> ? R : never
  : never

/**
 * The options of `TaskGroup.make`: the group's name, its steps in order, and a callback after each
 * one.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskGroupOptions<R = never> {
  readonly name: string
  readonly instructions?: string
  readonly tasks: ReadonlyArray<TaskGroupEntry<R>>
  /** Called after each task with its id and result (the record so far included). */
  readonly onTaskCompleted?: (id: string, result: unknown, results: Readonly<Record<string, unknown>>) => Effect.Effect<void>
}

/**
 * The results of a task group's steps, by step id.
 *
 * @since 0.1.0
 * @category models
 */
export type TaskGroupResult = Readonly<Record<string, unknown>>

/** The value a task completes with when the user goes back: the group re-runs from `id`. */
class GoBack {
  readonly _tag = "GoBack"
  readonly id: string
  constructor(id: string) {
    this.id = id
  }
}

const goBackTool = (earlier: ReadonlyArray<TaskGroupEntry<unknown>>): Tool.Tool => {
  const ids = earlier.map((entry) => entry.id) as [string, ...Array<string>]
  return Tool.make("return_to_earlier_step", {
    description: "Go back to an earlier step when the user wants to change something they gave there. Steps: " +
      earlier.map((entry) => `${entry.id} (${entry.description})`).join("; "),
    parameters: Schema.Struct({ step: Schema.Literals(ids) }),
    handler: ({ step }) =>
      CurrentAgent.use((agent) => agent.completeTask({ _tag: "Success", value: new GoBack(step) })).pipe(
        Effect.as(Tool.noReply(`Going back to ${step}.`))
      )
  })
}

/**
 * A task that runs `tasks` in order, each lent the floor in turn, and completes with their results
 * by id. Each later step gets a tool to go back to an earlier one when the user wants to change
 * what they gave there; the group then re-runs from that step. Throws when two steps share an id.
 *
 * @example
 * ```ts
 * import { AgentTask, TaskGroup } from "@baton-voice/baton"
 *
 * const intake = TaskGroup.make({
 *   name: "intake",
 *   tasks: [
 *     { id: "name", description: "the caller's name", task: askName },
 *     { id: "email", description: "the caller's email", task: askEmail }
 *   ]
 * })
 * // in a tool handler or hook: the record of both results
 * const results = AgentTask.run(intake)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const Entries extends ReadonlyArray<TaskGroupEntry<unknown>>>(
  options: Omit<TaskGroupOptions, "tasks"> & { readonly tasks: Entries }
): AgentTask.AgentTask<TaskGroupResult, EntryRequirements<Entries>> => {
  const ids = new Set<string>()
  for (const entry of options.tasks) {
    if (ids.has(entry.id)) throw new Error(`TaskGroup "${options.name}" has two tasks with id "${entry.id}"`)
    ids.add(entry.id)
  }
  const group: AgentTask.AgentTask<TaskGroupResult> = AgentTask.make<TaskGroupResult>({
    name: options.name,
    instructions: options.instructions ?? "You coordinate a sequence of steps; each step talks to the user itself.",
    onEnter: Effect.gen(function*() {
      const agent = yield* CurrentAgent
      const results: Record<string, unknown> = {}
      let index = 0
      while (index < options.tasks.length) {
        const entry = options.tasks[index]!
        const task = typeof entry.task === "function" ? entry.task() : entry.task
        const earlier = options.tasks.slice(0, index)
        // What the task needs is in the group's type, so in its runner's and the session's.
        const result = yield* agent.runTask(task as AgentTask.AgentTask<unknown>, { extraTools: earlier.length > 0 ? [goBackTool(earlier)] : [] })
        if (result instanceof GoBack) {
          index = options.tasks.findIndex((e) => e.id === result.id)
          continue
        }
        results[entry.id] = result
        if (options.onTaskCompleted) yield* options.onTaskCompleted(entry.id, result, { ...results })
        index++
      }
      yield* AgentTask.complete(group, { ...results })
    }).pipe(
      Effect.catchTag("TaskError", (error) => AgentTask.fail(group, `${error.task}: ${error.message}`))
    )
  })
  return group
}
