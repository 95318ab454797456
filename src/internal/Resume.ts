/**
 * A resumed session's actors, rebuilt from its folded journal: the agent that held the floor
 * holds it again with its context, paused agents are paused with theirs (their `onResume` runs
 * when the floor comes back, their `onEnter` never again), a task holds the floor for the caller
 * it was lent by; a holder whose `onEnter` (`onResume`) was running gets its `onRestore`. What
 * could not survive the process is answered: a call that was running gets
 * an output saying a restart interrupted it (rule 4), and a task's result reaches the caller's
 * call that awaited it as that call's output.
 */
import { Deferred, Effect } from "effect"
import type { Agent } from "../Agent.ts"
import { ChatContext, type ChatItem, type FunctionCall, functionCall, functionCallOutput, reserveIds } from "../ChatContext.ts"
import type { TaskResult } from "../CurrentAgent.ts"
import type { TaskError } from "../Errors.ts"
import * as ToolOutput from "../ToolOutput.ts"
import * as Actor from "./actor/Actor.ts"
import * as Hooks from "./actor/Hooks.ts"
import * as Lifecycle from "./actor/Lifecycle.ts"
import type { FloorState } from "./Floor.ts"
import * as Journal from "./Journal.ts"
import type { SessionCore } from "./SessionCore.ts"
import * as Work from "./Work.ts"

/** What a call that was running when the process stopped gets as its output. */
export const INTERRUPTED = "interrupted by a restart: the call stopped before it finished and its result is unknown"

/** The names of the agents the journal needs, in the order it met them. */
export const agentNames = (folded: Journal.Folded): ReadonlyArray<string> =>
  [...new Set([...folded.actors.values()].map(({ entry }) => entry.agent))]

/** The actors the journal says are live, in the order they appeared (callers before tasks). */
const liveKeys = (folded: Journal.Folded): Map<number, string> => new Map(folded.floor?.actors.map(([key, tag]) => [key, tag]) ?? [])

/**
 * Calls of `chat` made by `agent` that have no output. A model may use a call id again in a
 * later turn: an output answers the oldest open call with its id.
 */
const unanswered = (chat: ChatContext, agent: string): ReadonlyArray<{ readonly callId: string; readonly name: string }> => {
  const open: Array<FunctionCall> = []
  for (const item of chat) {
    if (item._tag === "FunctionCall") open.push(item)
    else if (item._tag === "FunctionCallOutput") {
      const at = open.findIndex((call) => call.callId === item.callId)
      if (at >= 0) open.splice(at, 1)
    }
  }
  return open.filter((call) => call.agent === agent)
}

const output = (agent: string, call: { readonly callId: string; readonly name: string }, result: TaskResult): ChatItem => {
  if (result._tag === "Success") {
    const rendered = ToolOutput.render(call.name, result.value)
    return functionCallOutput({ callId: call.callId, name: call.name, output: rendered.text, isError: rendered.isError, status: rendered.isError ? "error" : "ok", agent })
  }
  const error = result.error as TaskError
  return functionCallOutput({
    callId: call.callId,
    name: call.name,
    output: error.message,
    isError: true,
    status: error.reason === "cancelled" ? "cancelled" : "error",
    agent
  })
}

/**
 * Calls gone to the background (answered with a progress output) whose result (the
 * `<callId>:result` pair, Background.ts) never came: their handlers died with the process.
 */
const backgroundRunning = (history: ChatContext): ReadonlyArray<FunctionCall> => {
  const calls = new Map<string, FunctionCall>()
  const progressed = new Set<string>()
  const resulted = new Set<string>()
  for (const item of history) {
    if (item._tag === "FunctionCall") {
      if (item.callId.endsWith(":result")) resulted.add(item.callId.slice(0, -":result".length))
      else if (!item.callId.includes(":")) calls.set(item.callId, item)
    } else if (item._tag === "FunctionCallOutput" && item.status === "progress" && calls.has(item.callId)) {
      progressed.add(item.callId)
    }
  }
  return [...progressed].filter((id) => !resulted.has(id)).map((id) => calls.get(id)!)
}

const askReply = (actor: Actor.Actor) => actor.send({ _tag: "Reply", options: {}, reply: Deferred.makeUnsafe() })

/**
 * The caller's call that lent the floor to `task` gets the task's result as its output, then the
 * caller answers. The session returns a work token for this flow when it wakes it (`handover`),
 * released once the reply is asked for.
 */
const awaitTask = (core: SessionCore, caller: Actor.Actor, role: Actor.TaskRole, call: { readonly callId: string; readonly name: string } | undefined) =>
  Deferred.await(role.result).pipe(
    Effect.matchEffect({
      onSuccess: (value): Effect.Effect<TaskResult> => Effect.succeed({ _tag: "Success", value }),
      onFailure: (error): Effect.Effect<TaskResult> => Effect.succeed({ _tag: "Failure", error })
    }),
    Effect.flatMap((result) =>
      Effect.sync(() => {
        if (!call) return
        caller.commit(output(caller.name, call, result))
        if (caller.holdsFloor()) askReply(caller)
      })
    ),
    // The session closed before the task returned: the call is answered as cancelled (rule 4).
    Effect.onInterrupt(() =>
      Effect.sync(() => {
        if (call && unanswered(caller.chat, caller.name).some((open) => open.callId === call.callId)) {
          caller.commit(functionCallOutput({ callId: call.callId, name: call.name, output: "cancelled: the session closed while the task ran", isError: true, status: "cancelled", agent: caller.name }))
        }
      })
    ),
    Effect.ensuring(Effect.sync(() => {
      // Woken: the session gave this flow a token. Not woken (the session closed first): a
      // later wake must not give it one.
      if (role.handover.pending) role.handover.pending = false
      else Work.release(core.work)
    })),
    Effect.forkIn(caller.scope),
    Effect.asVoid
  )

/**
 * Rebuilds the actors of `folded` in `state`, started and answered. `agents`: by name (every
 * name of `agentNames` is there: `resume` checked).
 */
export const restore = (
  core: SessionCore,
  state: FloorState,
  folded: Journal.Folded,
  agents: ReadonlyMap<string, Agent>,
  journal: Journal.Journal
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const live = liveKeys(folded)
    // The earlier process's ids are not given again (its counter started where this one's did).
    reserveIds(folded.history.map((item) => item.id))
    for (const { items } of folded.actors.values()) reserveIds(items.map((item) => item.id))
    const actors = new Map<number, Actor.Actor>()
    const tasks: Array<{ actor: Actor.Actor; caller: Actor.Actor; role: Actor.TaskRole }> = []
    for (const [key, { entry, items }] of folded.actors) {
      const tag = live.get(key)
      if (tag === undefined || tag === "Closing" || tag === "Terminated") continue
      const agent = agents.get(entry.agent)!
      const caller = entry.task ? actors.get(entry.task.caller) : undefined
      // A task whose caller is gone has no one to return to.
      if (entry.task && !caller) continue
      const role: Actor.TaskRole | undefined = entry.task && caller
        ? {
          caller,
          result: Deferred.makeUnsafe<unknown, TaskError>(),
          // The flow that waits is this module's: the session gives it a token when it wakes it.
          handover: { pending: true },
          baseline: new Set(entry.task.baseline),
          callId: entry.task.callId
        }
        : undefined
      const actor = yield* Actor.make(core, agent, ChatContext.make(items), { task: role, startLater: true })
      if (tag === "Paused") Lifecycle.deactivate(actor, false)
      else if (tag !== "Starting") Lifecycle.activate(actor)
      actors.set(key, actor)
      state.live.add(actor)
      if (!role) state.actors.set(agent, actor)
      else tasks.push({ actor, caller: caller!, role })
      Journal.adopt(journal, actor, key)
    }
    const holderKey = folded.floor?.holder
    const holder = holderKey === null || holderKey === undefined ? undefined : actors.get(holderKey)
    // A task gone with its caller leaves the floor to the innermost caller still there.
    state.holder = holder ?? [...actors.values()].find((actor) => Lifecycle.isActive(actor) && !actor.task) ?? actors.values().next().value
    // An agent that was passing the floor on (its Deactivate not handled yet) is paused: its
    // onExit does not run. A caller waiting for its task stays active.
    const callers = new Set(tasks.map(({ caller }) => caller))
    for (const actor of actors.values()) {
      if (actor !== state.holder && !callers.has(actor) && Lifecycle.isActive(actor)) Lifecycle.deactivate(actor, false)
    }
    const awaited = new Set<string>()
    for (const { caller, role } of tasks) {
      const call = role.callId === undefined ? undefined : unanswered(caller.chat, caller.name).find((c) => c.callId === role.callId)
      if (call) awaited.add(call.callId)
      yield* awaitTask(core, caller, role, call)
    }
    // Every other call that was running is answered (rule 4); the holder answers its own.
    let holderAnswered = false
    for (const actor of actors.values()) {
      for (const call of unanswered(actor.chat, actor.name)) {
        if (awaited.has(call.callId)) continue
        actor.commit(functionCallOutput({ callId: call.callId, name: call.name, output: INTERRUPTED, isError: true, status: "interrupted", agent: actor.name }))
        if (actor === state.holder) holderAnswered = true
      }
    }
    // A background call's result never comes: its `:result` pair says the restart interrupted it.
    for (const call of backgroundRunning(core.history())) {
      const owner = [...actors.values()].find((actor) => actor.chat.has(call.id)) ?? state.holder
      if (!owner) continue
      owner.commit(functionCall({ callId: `${call.callId}:result`, name: call.name, arguments: call.arguments, agent: owner.name }))
      owner.commit(functionCallOutput({ callId: `${call.callId}:result`, name: call.name, output: INTERRUPTED, isError: true, status: "interrupted", agent: owner.name }))
      if (owner === state.holder) holderAnswered = true
    }
    // A caller still paused (or not yet entered) was handed the floor and lent it to a waiting
    // task at once: its activation (onResume, onEnter) had not run yet.
    for (const caller of callers) {
      if (caller.lifecycle._tag === "Paused") caller.send({ _tag: "Activate", mode: "resume", reply: false })
      else if (caller.lifecycle._tag === "Starting") caller.send({ _tag: "Activate", mode: "enter", reply: false })
    }
    const current = state.holder
    for (const actor of actors.values()) yield* actor.start
    if (!current) return
    // Handed the floor again before the onExit of its earlier pass started: that onExit runs
    // first (its activation's hook waits for it in the lane). Others that had not run it are
    // paused without it (above).
    const currentKey = [...actors].find(([, actor]) => actor === current)?.[0]
    // (Once for each pass whose onExit had not started: a quick back and forth queues several.)
    const owed = folded.floor?.exiting?.filter((key) => key === currentKey).length ?? 0
    for (let i = 0; i < owed; i++) {
      Journal.exitQueued(current)
      yield* Hooks.run(current, current.agent.onExit, "onExit", { exit: true })
    }
    if (current.lifecycle._tag === "Starting") {
      // Its onEnter had not started: it runs now.
      current.send({ _tag: "Activate", mode: "enter", reply: !current.agent.onEnter })
    } else if (current.lifecycle._tag === "Paused") {
      // The floor had passed back to it, its onResume not started yet: it runs now.
      current.send({ _tag: "Activate", mode: "resume", reply: !current.agent.onResume })
    } else {
      // A fresh realtime connection, seeded with the context, comes with the floor.
      if (current.realtime) current.send({ _tag: "TakeConnection" })
      if (holderAnswered) askReply(current)
      // Its onEnter (onResume) had started and not ended: what it was doing died with the
      // process and never runs again; its onRestore picks it up, once.
      if (current.agent.onRestore && currentKey !== undefined && folded.floor?.activating?.includes(currentKey)) {
        current.inner.restorable = "owed"
        yield* Hooks.run(current, current.agent.onRestore, "onRestore", { holdsInput: true, restore: true })
      }
    }
  })
