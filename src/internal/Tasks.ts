/**
 * The actor side of `AgentTask`: lending the floor to a task and completing one.
 */
import { Deferred, Effect, Exit } from "effect"
import type { Actor } from "./actor/Actor.ts"
import { CurrentCall, HookLane, WorkToken } from "./FlowContext.ts"
import type { Agent } from "../Agent.ts"
import type { RunTaskOptions, TaskResult } from "../CurrentAgent.ts"
import { TaskError } from "../Errors.ts"
import type { FlowObserver } from "../FlowObserver.ts"
import type { Handover } from "./SessionCore.ts"
import * as Speeches from "./Speeches.ts"
import * as Work from "./Work.ts"
import * as Lifecycle from "./actor/Lifecycle.ts"

/**
 * Asks the session to lend the floor to `task` and waits for its result. The request waits
 * in the session until `caller` holds the floor (several tasks of one batch run one after the
 * other). A flow that holds a work token gives it up while it waits; the session acquires one
 * for it before waking it, so `run()` sees the session quiescent while the task talks to the
 * user, and never in between.
 */
export const run = (caller: Actor, task: Agent, options: RunTaskOptions = {}): Effect.Effect<unknown, TaskError> =>
  Effect.gen(function*() {
    if (!task.task) {
      return yield* new TaskError({ task: task.name, reason: "invalid", message: `${task.name} is not an AgentTask` })
    }
    // What the caller was saying is said before the task takes the floor, and nothing new
    // starts until the session has lent it (the `Lend` message clears this).
    yield* Speeches.settled(caller.speeches)
    if (caller.holdsFloor()) Lifecycle.startPassing(caller)
    const work = caller.core.work
    const handover: Handover = { pending: (yield* WorkToken).held }
    const result = yield* Deferred.make<unknown, TaskError>()
    waiting.set(handover, [])
    const call = yield* CurrentCall
    const callId = call?.actor === caller ? call.callId : undefined
    caller.core.send({ _tag: "StartTask", caller, task, result, handover, extraTools: options.extraTools ?? [], callId })
    if (handover.pending) Work.release(work)
    // A hook waiting for a task does not hold up the actor's next hook.
    ;(yield* HookLane)?.()
    const awaited = Deferred.await(result).pipe(
      Effect.onInterrupt(() => Effect.sync(() => returnToken(work, handover))),
      Effect.ensuring(Effect.sync(() => taken(handover)))
    )
    const observer = caller.core.observer
    return yield* observer === undefined ? awaited : observed(observer, caller, task.name, awaited)
  })

/** The observer (the simulation on a user's agents) hears the result reach the awaiting flow. */
const observed = <A, E>(observer: FlowObserver, caller: Actor, task: string, awaited: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  awaited.pipe(
    Effect.tap(() => Effect.sync(() => observer.taskReturned(caller.core.session(), caller.name, task, true))),
    Effect.tapError(() => Effect.sync(() => observer.taskReturned(caller.core.session(), caller.name, task, false)))
  )

/** Flows waiting for a task's result, by their handover: what is to happen once they have it
 * (`whenTaken`). */
const waiting = new WeakMap<Handover, Array<() => void>>()

/** The flow stopped waiting: it has its result, or it was interrupted. */
const taken = (handover: Handover) => {
  const then = waiting.get(handover)
  waiting.delete(handover)
  if (then) for (const f of then) f()
}

/**
 * Runs `f` once the flow awaiting the task of `handover` has its result (at once if none waits
 * any more). A task cancelled with the task it awaits closes only then, or its Scope would
 * interrupt the flow before the result reached it (rule 6). The session stays busy meanwhile.
 */
export const whenTaken = (work: Work.Work, handover: Handover, f: () => void): void => {
  const then = waiting.get(handover)
  if (!then) return f()
  Work.acquire(work)
  then.push(() => {
    f()
    Work.release(work)
  })
}

const returnToken = (work: Work.Work, handover: Handover) => {
  if (!handover.pending) return
  handover.pending = false
  Work.acquire(work)
}

/** Wakes a flow waiting for a task, returning its work token first (see Work.ts). */
export const wake = (work: Work.Work, handover: Handover, deferred: Deferred.Deferred<unknown, TaskError>, result: TaskResult) => {
  returnToken(work, handover)
  Deferred.doneUnsafe(deferred, result._tag === "Success" ? Exit.succeed(result.value) : Exit.fail(result.error))
}

/**
 * Completes the task `actor` runs. From a tool call still in its batch, the floor returns to
 * the caller once the whole batch has settled (the first completion in call order wins);
 * elsewhere (a hook, a call gone to the background, another flow), as soon as the actor has cut
 * what it was saying (its `Complete` message).
 */
export const complete = (actor: Actor, result: TaskResult): Effect.Effect<void, TaskError> =>
  Effect.gen(function*() {
    if (!actor.task) {
      return yield* new TaskError({ task: actor.name, reason: "invalid", message: `${actor.name} is not running as a task` })
    }
    const call = yield* CurrentCall
    // A call still in its batch: the batch applies it once all its calls have settled. A call
    // gone to the background (it reported progress) completes the task as any other flow.
    if (call && call.actor === actor && call.foreground()) {
      if (!actor.completions.has(call.callId)) actor.completions.set(call.callId, result)
      return
    }
    // The floor goes back: nothing new starts here (held input goes to the caller), and what
    // the task is saying ends before the floor moves (the actor's `Complete`).
    Lifecycle.startPassing(actor)
    actor.send({ _tag: "Complete", result })
  })
