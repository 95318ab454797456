/**
 * An actor's hooks (onEnter, onResume, onExit) run one after the other, in the order their
 * messages came: the hook lane. An onExit never starts before the onEnter it follows has ended,
 * or has started waiting for a task (it may wait for the floor to come back: the onExit must not
 * wait for that). Each hook is a fiber in the actor's Scope holding a work token (rule 10).
 */
import { Cause, Context, Deferred, Effect } from "effect"
import type { Agent } from "../../Agent.ts"
import { CurrentAgent } from "../../CurrentAgent.ts"
import * as Diagnostics from "../../Diagnostics.ts"
import { forkBodyWith } from "../EffectFastPaths.ts"
import { HookLane, WorkToken } from "../FlowContext.ts"
import type { Actor } from "./Actor.ts"
import type { FlowObserver, HookName } from "../../FlowObserver.ts"
import * as Journal from "../Journal.ts"
import * as Work from "../Work.ts"

export interface HookOptions {
  /** The user's input waits until the hook ends (onEnter, onResume; default false). */
  readonly holdsInput?: boolean | undefined
  /** Runs once the hook has ended (the next holder's activation, closing the actor). */
  readonly after?: Effect.Effect<void>
  /** The hook starts only once these complete (earlier holders' onExits have run). */
  readonly waitFor?: ReadonlyArray<Deferred.Deferred<void>> | undefined
  /** An activation's hook (onEnter, onResume): in a durable session, its start is journaled
   * before it runs, so a resume neither runs it again nor skips it. */
  readonly activation?: boolean | undefined
  /** An onExit: in a durable session, its start is journaled before it runs (Journal.exited). */
  readonly exit?: boolean | undefined
  /** An onRestore: in a durable session, its start is journaled before it runs (Journal.restoring). */
  readonly restore?: boolean | undefined
}

/** Starts `hook` in the lane. */
export const run = (
  actor: Actor,
  hook: Agent["onEnter"],
  name: HookName,
  options: HookOptions = {}
): Effect.Effect<void> => {
  const holdsInput = options.holdsInput ?? false
  const inner = actor.inner
  const work = actor.core.work
  const previous = inner.lane
  const done = Deferred.makeUnsafe<void>()
  inner.lane = done
  if (holdsInput) inner.inputHoldingHooks++
  Work.acquire(work)
  // What the hook waits for, awaited only when not already done (a handoff's onEnter usually
  // finds both done: no steps for them on its path).
  // `unknown`: the hook is the user's, and so are its errors (reported as an error event below).
  let body = (hook ?? Effect.void) as Effect.Effect<void, unknown>
  // An observer (the simulation on a user's agents) hears the hook start once what it waits for is done.
  if (hook !== undefined && actor.core.observer !== undefined) body = observed(actor.core.observer, actor, name, body)
  if (options.activation && inner.activation !== undefined) {
    body = Effect.andThen(Journal.activated(actor), body)
    if (actor.agent.onRestore) body = Effect.ensuring(body, Journal.activationEnded(actor))
  }
  if (options.restore && inner.restorable === "owed") body = Effect.andThen(Journal.restoring(actor), body)
  if (options.exit && Journal.exitPending(actor)) body = Effect.andThen(Journal.exited(actor), body)
  for (const exit of options.waitFor ?? []) if (!Deferred.isDoneUnsafe(exit)) body = Effect.andThen(Deferred.await(exit), body)
  if (!Deferred.isDoneUnsafe(previous)) body = Effect.andThen(Deferred.await(previous), body)
  // A hook that waits for a task lets the next hook go (Tasks.run calls HookLane's function).
  const letNextGo = () => Deferred.doneUnsafe(done, Effect.void)
  const hookFiber = body.pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.sync(() => {
        actor.core.emit({ type: "error", agent: actor.name, source: "hook", message: `${name} of ${actor.name} failed: ${Cause.pretty(cause)}`, recoverable: true })
      })
    ),
    Effect.onExit(ended(actor, holdsInput, options.after, () => {
      Deferred.doneUnsafe(done, Effect.void)
      Work.release(work)
    }))
  )
  // The fiber's services, one context for the three.
  return forkBodyWith(hookFiber, (outer) =>
    Context.add(Context.add(Context.add(outer, CurrentAgent, actor.handle), WorkToken, { held: true }), HookLane, letNextGo)).pipe(
      Diagnostics.startIn(actor.scope, { startImmediately: true })
    )
}

const observed = (observer: FlowObserver, actor: Actor, name: HookName, body: Effect.Effect<void, unknown>): Effect.Effect<void, unknown> =>
  Effect.suspend(() => {
    observer.hookStarted(actor.core.session(), actor.name, name)
    return body
  }).pipe(Effect.onExit(() => Effect.sync(() => observer.hookEnded(actor.core.session(), actor.name, name))))

/** After the hook: the loop hears it ended, `after` runs, and last the lane and the work token
 * are let go whatever happened before (on the hook's last step when there is no `after`). */
const ended = (actor: Actor, holdsInput: boolean, after: Effect.Effect<void> | undefined, release: () => void): () => Effect.Effect<void> => {
  const tell = () => actor.send({ _tag: "HookEnded", holdsInput })
  if (!after) {
    return () => {
      try {
        tell()
      } finally {
        release()
      }
      return Effect.void
    }
  }
  const rest = Effect.sync(tell).pipe(Effect.andThen(after), Effect.ensuring(Effect.sync(release)))
  return () => rest
}
