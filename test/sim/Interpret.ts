/**
 * Builds a scenario's agents, tools, hooks and scripted model from its data. Everything the
 * checker needs to know about what happened outside the event log is recorded in a `World`:
 * hook calls, model requests (with who held the floor at that instant) and task results seen by
 * the flows that awaited them.
 */
import type { SessionStoreService } from "../../services/SessionStore.ts"
import * as Cascade from "./Cascade.ts"
import { type CascadeWorld, makeCascadeWorld } from "./Cascade.ts"
import { Data, Effect, Schema, type Scope } from "effect"
import type { Prompt } from "effect/ai"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, ChatContext, Guardrail, Handoff, TaskGroup, Tool, Turn } from "../../src/index.ts"
import type { ContextPolicy } from "../../src/Handoff.ts"
import { type AgentSpec, type ContextPolicyName, GUARDED, type HookSpec, type OddShape, type ResponseSpec, type Scenario, type TaskSpec, type ToolSpec, type Trigger } from "./Scenario.ts"

export type HookName = "onEnter" | "onExit" | "onResume"

export interface HookCall {
  readonly agent: string
  readonly hook: HookName
  /** The sequence number the next session event will get. */
  readonly seq: number
  readonly order: number
}

export interface ModelRequest {
  readonly index: number
  readonly agent: string
  /** Who held the floor when the request was made. */
  readonly holder: string | undefined
  readonly seq: number
  readonly order: number
  readonly trigger: Trigger
  /** The user's text when the request's last input is the user's. */
  readonly userText?: string | undefined
  readonly toolChoice: string
  /** Ids of the tool calls the prompt carries (with their outputs). */
  readonly callIds: ReadonlyArray<string>
  /** A response the realtime server started by itself (its turn detection heard the user), not
   * one baton asked for. */
  readonly byServer: boolean
}

export interface TaskOutcome {
  readonly caller: string
  readonly task: string
  readonly via: "tool" | "hook"
  readonly ok: boolean
  readonly detail: string
  readonly seq: number
}

/** A long-running call's handler has finished (before its result is delivered). */
export interface BackgroundFinish {
  readonly agent: string
  readonly callId: string
  readonly tool: string
  readonly seq: number
  readonly holder: string | undefined
}

/** A call of a `timed` tool: whether it runs past the timeout, when it started, how it ended (test clock ms). */
export interface TimedCall {
  readonly agent: string
  readonly tool: string
  readonly callId: string
  readonly long: boolean
  readonly startedAt: number
  finishedAt: number | undefined
  stoppedAt: number | undefined
}

/** An `onUserTurnCompleted` run: the user's text and whether the hook stopped the reply. */
export interface TurnHookCall {
  readonly agent: string
  readonly text: string
  readonly stopped: boolean
  readonly seq: number
  readonly order: number
}

/** An `onUserAway` run, and who held the floor then. */
export interface AwayCall {
  readonly agent: string
  readonly holder: string | undefined
  readonly times: number
  readonly seq: number
}

export interface World {
  session: AgentSession.AgentSession | undefined
  /** When a tool hung up (closed the session from inside): sequence number and tick. */
  hungUp: { readonly seq: number; readonly order: number } | undefined
  /** Long-running handlers that reported their first progress. */
  longStarted: number
  readonly finishes: Array<BackgroundFinish>
  readonly hooks: Array<HookCall>
  readonly requests: Array<ModelRequest>
  readonly taskOutcomes: Array<TaskOutcome>
  readonly timed: Array<TimedCall>
  readonly turns: Array<TurnHookCall>
  readonly away: Array<AwayCall>
  /** Expected refusals seen by hooks and the application (FloorError and the like). */
  readonly notes: Array<string>
  readonly seq: () => number
  /**
   * A tick for every record of the world and the timeline (requests, hooks, actions, close):
   * orders records that fall between the same two events.
   */
  readonly tick: () => number
  readonly holder: () => string | undefined
  /** Flows (tools, hooks) waiting for an AgentTask now. */
  readonly awaiting: () => number
  readonly track: (delta: number) => void
  /** Cascade scenarios: what the voice pipeline played, cut and heard. */
  readonly cascade: CascadeWorld
}

export const makeWorld = (): World => {
  let awaiting = 0
  let ticks = 0
  const world: World = {
    tick: () => ticks++,
    hungUp: undefined,
    longStarted: 0,
    finishes: [],
    track: (delta) => {
      awaiting += delta
    },
    awaiting: () => awaiting,
    cascade: makeCascadeWorld(),
    session: undefined,
    hooks: [],
    requests: [],
    taskOutcomes: [],
    timed: [],
    turns: [],
    away: [],
    notes: [],
    seq: () => {
      if (!world.session) return 0
      const log = Effect.runSync(world.session.eventLog)
      return log.length === 0 ? 0 : log[log.length - 1]!.seq + 1
    },
    holder: () => (world.session ? Effect.runSync(world.session.currentAgent)?.name : undefined)
  }
  return world
}

export class SimToolFailure extends Data.TaggedError("SimToolFailure")<{ readonly message: string }> {}
export class SimHookFailure extends Data.TaggedError("SimHookFailure")<{ readonly message: string }> {}

export interface Built {
  /** Starts the session (in the Scope of the caller). */
  readonly start: Effect.Effect<AgentSession.AgentSession, never, Scope.Scope>
  readonly agents: ReadonlyMap<string, Agent.Agent>
  /** Every agent a session of the scenario may run: agents, tasks and groups (resume finds them by name). */
  readonly all: ReadonlyArray<Agent.Agent>
  readonly rules: ReadonlyArray<ScriptedModel.Rule>
  /** The session's own options (its tools, the user-away timeout): a resume is given them too. */
  readonly options: { readonly tools?: ReadonlyArray<Tool.Tool<unknown, never>>; readonly userAwayTimeout?: `${number} millis` }
}

const policy = (name: ContextPolicyName | undefined): ContextPolicy =>
  name === "none" ? "none" : name === "last1" ? { lastTurns: 1 } : "full"

const sleep = (ms: number) => (ms > 0 ? Effect.sleep(ms) : Effect.void)

const Typed = Schema.Struct({ n: Schema.Int })

/** The owner name of session tools' background calls (in `BackgroundFinish.agent`). */
export const SESSION = "session"

/**
 * Model requests a scenario may make before the model answers in words only: a scenario can
 * script a handoff ping-pong with no delay, an endless loop of the application, not of baton.
 */
export const MODEL_BUDGET = 120

/** Replies the scenario's tools may start: a reply whose answer calls the same tool again would
 * nest for ever (the application's loop, not baton's); past the cap they say instead. */
const TOOL_REPLIES = 3

/** What an `odd` tool returns. */
const oddValue = (shape: OddShape): unknown => {
  switch (shape) {
    case "cyclic": {
      const value: Record<string, unknown> = { name: "loop" }
      value.self = value
      return value
    }
    case "bigint":
      return { id: 12345678901234567890n }
    case "undefined":
      return undefined
    case "function":
      return () => "a function"
    case "symbol":
      return Symbol("odd")
    case "huge":
      return "x".repeat(40_000)
    case "collections":
      return { map: new Map([["a", 1]]), set: new Set([1, 2]) }
    case "throwing":
      return {
        toJSON: () => {
          throw new Error("cannot serialise")
        }
      }
  }
}

/** A say or reply a program's flow could not start (it no longer holds the floor): noted. */
const isFloorError = (e: unknown): e is { readonly _tag: "FloorError"; readonly message: string } =>
  (e as { _tag?: unknown })?._tag === "FloorError"

/** `store`: the session is durable, journaled there under `id` (the crash simulation, Crash.ts). */
export interface InterpretOptions {
  readonly store?: SessionStoreService | undefined
  readonly id?: string | undefined
}

export const interpret = (scenario: Scenario, world: World, options: InterpretOptions = {}): Built => {
  let toolReplies = 0
  const agents = new Map<string, Agent.Agent>()
  const tasks = new Map<string, AgentTask.AgentTask<string>>()
  const groups = new Map<string, AgentTask.AgentTask<TaskGroup.TaskGroupResult>>()
  const agentRef = (name: string) => () => agents.get(name)!

  const outcome = (caller: string, task: string, via: TaskOutcome["via"]) => <A, E extends { readonly message: string }, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(
      Effect.tap((value) =>
        Effect.sync(() => world.taskOutcomes.push({ caller, task, via, ok: true, detail: String(value), seq: world.seq() }))
      ),
      Effect.tapError((error) =>
        Effect.sync(() =>
          world.taskOutcomes.push({ caller, task, via, ok: false, detail: error.message, seq: world.seq() })
        )
      )
    )

  const awaitTask = (caller: string, name: string, via: TaskOutcome["via"]) => {
    const target: AgentTask.AgentTask<unknown> | undefined = tasks.get(name) ?? groups.get(name)
    if (!target) return Effect.succeed(`no task ${name}`)
    const awaited = Effect.suspend(() => {
      world.track(1)
      return AgentTask.run(target).pipe(Effect.ensuring(Effect.sync(() => world.track(-1))))
    })
    return awaited.pipe(
      outcome(caller, name, via),
      Effect.map((value) => `${name} gave ${typeof value === "string" ? value : JSON.stringify(value)}`),
      Effect.catch((e) => Effect.succeed(`${name} failed: ${e.message}`))
    )
  }

  const answerApproval = (spec: ToolSpec, context: Tool.ToolContext<unknown>): Effect.Effect<void> => {
    const session = context.session
    switch (spec.decision) {
      case "reject":
        return Effect.ignore(session.reject(context.call.id, { reason: "the sim said no" }))
      case "close":
        return Effect.sync(() => {
          world.hungUp ??= { seq: world.seq(), order: world.tick() }
        }).pipe(Effect.andThen(session.close))
      default:
        return Effect.ignore(session.approve(context.call.id))
    }
  }

  const tool = (owner: string, spec: ToolSpec): Tool.Tool => {
    const done = `${spec.name} done`
    switch (spec.kind) {
      case "immediate":
        return Tool.make(spec.name, { description: spec.kind, handler: () => Effect.succeed(done) })
      case "slow":
        return Tool.make(spec.name, { description: spec.kind, handler: () => sleep(spec.delay).pipe(Effect.as(done)) })
      case "failing":
        return Tool.make(spec.name, {
          description: spec.kind,
          handler: () =>
            sleep(spec.delay).pipe(
              Effect.andThen(
                Effect.fail<SimToolFailure | Tool.ToolError>(
                  spec.plainError ? new SimToolFailure({ message: `${spec.name} broke` }) : new Tool.ToolError({ message: `${spec.name} refused` })
                )
              )
            )
        })
      case "dying":
        return Tool.make(spec.name, {
          description: spec.kind,
          handler: () => sleep(spec.delay).pipe(Effect.andThen(Effect.die(new Error(`${spec.name} crashed`))))
        })
      case "typed":
        return Tool.make(spec.name, {
          description: spec.kind,
          parameters: Typed,
          handler: ({ n }) => sleep(spec.delay).pipe(Effect.as(`${spec.name} got ${n * 2}`))
        })
      case "handoff":
        return Tool.make(spec.name, {
          description: spec.kind,
          handler: () => sleep(spec.delay).pipe(Effect.as(Handoff.to(agentRef(spec.target!), { context: policy(spec.context) })))
        })
      case "task":
        return Tool.make(spec.name, {
          description: spec.kind,
          handler: () => sleep(spec.delay).pipe(Effect.andThen(awaitTask(owner, spec.target!, "tool")))
        })
      case "complete":
        return Tool.make(spec.name, {
          description: spec.kind,
          handler: (_, context) => sleep(spec.delay).pipe(Effect.andThen(AgentTask.complete(tasks.get(owner)!, `${owner}:${context.call.id}`)))
        })
      case "giveUp":
        return Tool.make(spec.name, {
          description: spec.kind,
          handler: () => sleep(spec.delay).pipe(Effect.andThen(AgentTask.fail(tasks.get(owner)!, `${owner} gave up`)))
        })
      case "longRunning":
        return longRunning(owner, spec)
      case "speaks":
        return Tool.make(spec.name, {
          description: spec.kind,
          handler: () => {
            const reply = spec.speech === "reply" && toolReplies < TOOL_REPLIES
            if (reply) toolReplies++
            const started = reply
              ? Agent.reply({ instructions: `${spec.name} of ${owner}` })
              : Agent.say(`${owner} ${spec.name} says a word`)
            return sleep(spec.delay).pipe(
              Effect.andThen(started),
              Effect.flatMap((handle) => (spec.awaits ? Effect.map(handle.wait, (outcome) => `${done} (${outcome._tag})`) : Effect.succeed(done))),
              Effect.catchIf(isFloorError, (e) => Effect.succeed(`${spec.name}: ${e.message}`))
            )
          }
        })
      case "odd":
        return Tool.make(spec.name, { description: spec.kind, handler: () => sleep(spec.delay).pipe(Effect.map(() => oddValue(spec.shape!))) })
      case "approval":
        return Tool.make(spec.name, {
          description: spec.kind,
          // The program's answer comes `delay` after the request, from a fiber of the waiting call
          // (a barge-in or a handoff may have answered it first: the late answer is refused).
          needsApproval: (_, context) =>
            Effect.as(
              Effect.forkChild(sleep(spec.delay).pipe(Effect.andThen(answerApproval(spec, context)))),
              true
            ),
          handler: () => Effect.succeed(done)
        })
      case "timed":
        return timed(owner, spec)
      case "waitsForItself":
        return Tool.make(spec.name, { description: spec.kind, handler: (_, context) => context.speech.wait.pipe(Effect.as(done)) })
      case "hangUp":
        return Tool.make(spec.name, {
          description: spec.kind,
          handler: (_, context) =>
            sleep(spec.delay).pipe(
              Effect.andThen(Effect.sync(() => {
                world.hungUp ??= { seq: world.seq(), order: world.tick() }
              })),
              Effect.andThen(context.session.close),
              Effect.as("bye")
            )
        })
    }
  }

  /** Runs past its timeout on its 1st, 3rd, ... call, within it on the others; each call recorded. */
  const timed = (owner: string, spec: ToolSpec): Tool.Tool => {
    let calls = 0
    const now: Effect.Effect<number> = Effect.clockWith((clock) => clock.currentTimeMillis)
    return Tool.make(spec.name, {
      description: spec.kind,
      timeout: `${spec.timeout!} millis`,
      handler: (_, context) =>
        Effect.flatMap(now, (startedAt) => {
          const long = calls++ % 2 === 0
          const call: TimedCall = { agent: owner, tool: spec.name, callId: context.call.id, long, startedAt, finishedAt: undefined, stoppedAt: undefined }
          world.timed.push(call)
          return sleep(long ? spec.delay : spec.duration ?? 0).pipe(
            Effect.andThen(now),
            Effect.map((at): string => {
              call.finishedAt = at
              return `${spec.name} done`
            }),
            Effect.onInterrupt(() => Effect.map(now, (at) => void (call.stoppedAt = at)))
          )
        })
    })
  }

  const turnHook = (owner: string, kind: "add" | "stop") => (turn: Turn.UserTurn) =>
    Effect.sync(() => {
      const text = turn.message.text
      const input = Number(/^u(\d+) please$/.exec(text)?.[1] ?? NaN)
      const stopped = kind === "stop" && input % 2 === 0
      world.turns.push({ agent: owner, text, stopped, seq: world.seq(), order: world.tick() })
      return stopped
        ? Turn.stopResponse("the sim stops even turns")
        : kind === "add"
        ? Turn.reply({ add: [ChatContext.message("developer", `${owner} notes: ${text}`)] })
        : Turn.reply()
    })

  const awayHook = (owner: string, kind: "say" | "close") => (away: Agent.UserAway) =>
    Effect.sync(() => void world.away.push({ agent: owner, holder: world.holder(), times: away.times, seq: world.seq() })).pipe(
      Effect.andThen(
        kind === "close" && away.times >= 2
          ? Effect.sync(() => {
            world.hungUp ??= { seq: world.seq(), order: world.tick() }
          }).pipe(Effect.andThen(Agent.CurrentAgent.use((agent) => agent.session.close)))
          : away.times === 1
          ? Agent.say(`${owner} asks whether you are still there`).pipe(Effect.asVoid)
          : Effect.void
      ),
      Effect.catchIf(isFloorError, (e) => Effect.sync(() => void world.notes.push(`onUserAway of ${owner}: ${e.message}`)))
    )

  /** Progress after `delay`, `updates` more reports, the result (or a handoff) after `duration`. */
  const longRunning = (owner: string, spec: ToolSpec): Tool.Tool => {
    const updates = spec.updates ?? 0
    const step = Math.floor((spec.duration ?? 0) / (updates + 1))
    return Tool.make(spec.name, {
      description: spec.kind,
      ...(spec.onDuplicate ? { onDuplicate: spec.onDuplicate } : {}),
      handler: (_, context) =>
        Effect.gen(function*() {
          yield* sleep(spec.delay)
          yield* context.progress(`${spec.name} started, please hold on`)
          world.longStarted++
          for (let i = 1; i <= updates; i++) {
            yield* sleep(step)
            yield* context.progress(`${spec.name} update ${i}`)
          }
          yield* sleep((spec.duration ?? 0) - step * updates)
          world.finishes.push({ agent: owner, callId: context.call.id, tool: spec.name, seq: world.seq(), holder: world.holder() })
          return spec.target ? Handoff.to(agentRef(spec.target)) : `${spec.name} finished`
        })
    })
  }

  const hook = (owner: string, name: HookName, spec: HookSpec | undefined): Agent.Hook | undefined => {
    if (!spec) return undefined
    const action = (): Effect.Effect<unknown, unknown, any> => {
      switch (spec.action) {
        case "none":
          return Effect.void
        case "reply":
          return Agent.reply({ instructions: `${name} of ${owner}` })
        case "say":
          return Agent.say(`${owner} ${name} says hello`)
        case "task":
        case "group":
          return awaitTask(owner, spec.target!, "hook").pipe(Effect.andThen(Agent.reply({ instructions: `after ${spec.target}` })))
        case "fail":
          return Effect.fail(new SimHookFailure({ message: `${name} of ${owner} broke` }))
        case "awaitReply":
          return Agent.reply({ instructions: `${name} of ${owner}` }).pipe(Effect.flatMap((handle) => handle.wait))
        case "awaitSay":
          return Agent.say(`${owner} ${name} says hello`).pipe(Effect.flatMap((handle) => handle.wait))
      }
    }
    return Effect.sync(() => void world.hooks.push({ agent: owner, hook: name, seq: world.seq(), order: world.tick() })).pipe(
      Effect.andThen(sleep(spec.delay)),
      Effect.andThen(Effect.suspend(action)),
      Effect.catchIf(isFloorError, (e) => Effect.sync(() => void world.notes.push(`${name} of ${owner}: ${e.message}`))),
      Effect.asVoid
    )
  }

  const agentOptions = (spec: AgentSpec): Agent.AgentOptions => {
    const onEnter = hook(spec.name, "onEnter", spec.onEnter)
    const onExit = hook(spec.name, "onExit", spec.onExit)
    const onResume = hook(spec.name, "onResume", spec.onResume)
    return {
      name: spec.name,
      instructions: `You are ${spec.name}.`,
      tools: spec.tools.map((t) => tool(spec.name, t)),
      maxToolSteps: spec.maxToolSteps,
      ...(spec.guardrail
        ? {
          guardrails: [Guardrail.output(`${spec.name}_guard`, {
            check: (text) => Effect.succeed(text.includes(GUARDED) ? "said the guarded word" : undefined),
            policy: Guardrail.say(`${spec.name} rephrases.`)
          })]
        }
        : {}),
      ...(spec.turnHook ? { onUserTurnCompleted: turnHook(spec.name, spec.turnHook) } : {}),
      ...(spec.onUserAway ? { onUserAway: awayHook(spec.name, spec.onUserAway) } : {}),
      ...(onEnter ? { onEnter } : {}),
      ...(onExit ? { onExit } : {}),
      ...(onResume ? { onResume } : {})
    }
  }

  // Tasks first (agents' tools refer to them), then groups, then agents.
  for (const spec of scenario.tasks as ReadonlyArray<TaskSpec>) {
    tasks.set(spec.name, AgentTask.make<string>({ ...agentOptions(spec), context: policy(spec.context) }))
  }
  for (const group of scenario.groups) {
    groups.set(group.name, TaskGroup.make({
      name: group.name,
      // Named like every agent, so an answer the server starts by itself (voice) while the group
      // holds the floor between steps is known to be the group's.
      instructions: `You are ${group.name}.`,
      tasks: group.tasks.flatMap((name, i) => {
        const task = tasks.get(name)
        return task ? [{ id: `step${i}`, description: name, task }] : []
      })
    }))
  }
  for (const spec of scenario.agents) agents.set(spec.name, Agent.make(agentOptions(spec)))

  const specs = new Map<string, AgentSpec>([...scenario.agents, ...scenario.tasks].map((a) => [a.name, a]))
  const counters = new Map<string, number>()
  const respond = (request: ScriptedModel.RecordedRequest): ScriptedModel.ScriptedResponse => {
    // A response the server started by itself (voice) is for the agent it is configured for.
    const agent = request.agent ?? /^You are (.+)\.$/.exec(request.instructions ?? "")?.[1] ?? "?"
    const trigger: Trigger = request.last.kind === "user" ? "user" : request.last.kind === "tool" ? "tool" : "other"
    world.requests.push({
      index: request.index,
      agent,
      holder: world.holder(),
      seq: world.seq(),
      order: world.tick(),
      trigger,
      ...(request.last.kind === "user" ? { userText: request.last.text } : {}),
      toolChoice: typeof request.toolChoice === "string" ? request.toolChoice : "tool",
      callIds: toolCallIds(request.prompt),
      byServer: request.agent === undefined
    })
    if (world.requests.length > MODEL_BUDGET) {
      if (world.requests.length === MODEL_BUDGET + 1) world.notes.push(`the model budget (${MODEL_BUDGET} requests) ran out`)
      return { text: "out of budget" }
    }
    const list = scenario.responses[agent]?.[trigger] ?? []
    if (list.length === 0) return {}
    const key = `${agent}.${trigger}`
    const n = counters.get(key) ?? 0
    counters.set(key, n + 1)
    return scripted(list[n % list.length]!, specs.get(agent), request.toolChoice === "none")
  }

  const first = agents.get(scenario.agents[0]!.name)!
  const sessionTools = (scenario.sessionTools ?? []).map((spec) => tool(SESSION, spec))
  const startOptions = {
    agent: first,
    ...(sessionTools.length ? { tools: sessionTools } : {}),
    ...(scenario.userAwayTimeout !== undefined ? { userAwayTimeout: `${scenario.userAwayTimeout} millis` as const } : {})
  }
  return {
    start: scenario.cascade
      ? Cascade.start(scenario.cascade, world.cascade, world.seq, world.tick, startOptions, options.store ? { store: options.store, id: options.id ?? "sim-session" } : undefined)
      : options.store
      ? Effect.orDie(AgentSession.start({ ...startOptions, store: options.store, id: options.id }))
      // (Every scenario runs on a scripted model: no MissingModel.)
      : AgentSession.start(startOptions).pipe(Effect.orDie),
    agents,
    all: [...agents.values(), ...tasks.values(), ...groups.values()],
    rules: [{ when: () => true, reply: respond }],
    options: {
      ...(sessionTools.length ? { tools: sessionTools } : {}),
      ...(scenario.userAwayTimeout !== undefined ? { userAwayTimeout: `${scenario.userAwayTimeout} millis` as const } : {})
    }
  }
}

const scripted = (spec: ResponseSpec, agent: AgentSpec | undefined, textOnly: boolean): ScriptedModel.ScriptedResponse => {
  const kinds = new Map((agent?.tools ?? []).map((t) => [t.name, t.kind] as const))
  const calls = textOnly ? [] : spec.calls.map((call): ScriptedModel.ScriptedToolCall => {
    const typed = kinds.get(call.tool) === "typed"
    const args = call.badArgs === "json"
      ? "{not json"
      : call.badArgs === "schema"
      ? { n: "two" }
      : typed
      ? { n: 2 }
      : call.tool === "return_to_earlier_step"
      ? { step: "step0" }
      : {}
    return { name: call.tool, arguments: args }
  })
  return {
    ...(spec.delay > 0 ? { delay: `${spec.delay} millis` } : {}),
    ...(spec.text.length > 0 ? { text: spec.text } : {}),
    ...(spec.chunkDelay > 0 ? { chunkDelay: `${spec.chunkDelay} millis` } : {}),
    ...(calls.length > 0 ? { toolCalls: calls } : {}),
    ...(spec.error ? { error: "scripted failure" } : {})
  }
}

const toolCallIds = (prompt: Prompt.Prompt): Array<string> =>
  prompt.content.flatMap((message) =>
    message.role === "assistant"
      ? message.content.flatMap((part) => (part.type === "tool-call" ? [part.id] : []))
      : []
  )
