/**
 * Runs one schedule against a user's agents under a TestClock of its own (time starts at 0, so a
 * seed always gives the same run): the scripted model answers as the schedule says, the faults
 * wrap the agents' real tool handlers (`MockTools`: a delay before the handler, or a `ToolError`
 * instead of it), and the application's actions play in a fiber the clock wakes. Records what
 * the checker needs: the event log, the history, the model requests with who held the floor,
 * the runs that never resolved, the Diagnostics counts before and after, and unexpected logs.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Duration, Effect, Fiber, Layer, Logger } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import type { Agent } from "../Agent.ts"
import * as AgentSession from "../AgentSession.ts"
import type { ChatItem } from "../ChatContext.ts"
import * as Diagnostics from "../Diagnostics.ts"
import type { SessionEvent } from "../Events.ts"
import { CurrentFlowObserver, type FlowObserver } from "../FlowObserver.ts"
import * as MockTools from "../MockTools.ts"
import * as Tool from "../Tool.ts"
import type { Answer, Schedule } from "./Schedule.ts"

/**
 * The agents a simulation runs: the entry agent first, then every other agent a forced handoff
 * may go to and the scripted model answers for.
 *
 * @since 0.1.0
 * @category models
 */
export interface SimAgents {
  readonly agents: ReadonlyArray<Agent>
  readonly userdata?: (() => unknown) | undefined
}

/**
 * One model request: which agent made it, who held the floor then, and the event sequence number
 * it came before.
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelRequest {
  readonly agent: string
  readonly holder: string | undefined
  readonly seq: number
}

/**
 * A hook of the user's that ran: its start (and end, once it ended) as the sequence numbers of
 * the next event then.
 *
 * @since 0.1.0
 * @category models
 */
export interface HookRun {
  readonly agent: string
  readonly hook: "onEnter" | "onExit" | "onResume" | "onRestore" | "onUserAway"
  readonly seq: number
  endSeq?: number
}

/**
 * A task's result reaching the flow that ran it (`AgentTask.run`): a value (`ok`) or a TaskError.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskReturn {
  readonly caller: string
  readonly task: string
  readonly ok: boolean
  readonly seq: number
}

/**
 * The handler of a call gone to the background (it reported progress) ended, and who held the
 * floor then.
 *
 * @since 0.1.0
 * @category models
 */
export interface BackgroundFinish {
  readonly agent: string
  readonly callId: string
  readonly tool: string
  readonly seq: number
  readonly holder: string | undefined
}

/**
 * The session became quiescent before the final close (no flow waiting, no background call
 * running): what had happened by then.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settled {
  readonly seq: number
  readonly hooks: number
  readonly taskReturns: number
}

/**
 * What one run recorded for the checker.
 *
 * @since 0.1.0
 * @category models
 */
export interface Recording {
  readonly schedule: Schedule
  readonly events: ReadonlyArray<SessionEvent>
  readonly history: ReadonlyArray<ChatItem>
  readonly requests: ReadonlyArray<ModelRequest>
  /** The sequence number of the first event after `close` was asked (Infinity when it was not). */
  readonly closeSeq: number
  /** The user's hooks as they ran, task results as they reached their flows, background handlers
   * as they ended (the runtime's observer tells them: the agents are not wrapped). */
  readonly hooks: ReadonlyArray<HookRun>
  readonly taskReturns: ReadonlyArray<TaskReturn>
  readonly finishes: ReadonlyArray<BackgroundFinish>
  /** Absent when the schedule closed the session first, or it never became quiescent. */
  readonly settled?: Settled | undefined
  readonly before: Diagnostics.Counts
  readonly after: Diagnostics.Counts
  /** What the harness saw go wrong itself: runs that never resolved, defects, unexpected logs. */
  readonly failures: ReadonlyArray<{ readonly rule: "rule 10" | "rule 11" | "no unhandled error"; readonly message: string }>
}

/** Test time a run, a forced handoff or the settling at the end may take before it counts as a hang. */
const WAIT_LIMIT = 300_000
/** The clock moves by this much per step (the step does not change the schedule). */
const DRIVE_STEP = 1_000
/** Model requests before the model answers in words only (a handoff ping-pong of the schedule's). */
const MODEL_BUDGET = 80

const sleep = (ms: number) => (ms > 0 ? Effect.sleep(ms) : Effect.void)

const scripted = (answer: Answer, textOnly: boolean): ScriptedModel.ScriptedResponse => ({
  ...(answer.delay > 0 ? { delay: Duration.millis(answer.delay) } : {}),
  ...(answer.text.length > 0 ? { text: answer.text } : {}),
  ...(answer.calls.length > 0 && !textOnly ? { toolCalls: answer.calls.map((c) => ({ name: c.tool, arguments: c.args })) } : {}),
  ...(answer.error ? { error: "scripted failure" } : {})
})

/**
 * The faults of the schedule around the agents' real handlers, as `MockTools` layers.
 *
 * @since 0.1.0
 * @category layers
 */
export const faultLayer = (schedule: Schedule, agents: ReadonlyArray<Agent>): Layer.Layer<never> =>
  agents.reduce<Layer.Layer<never>>((layer, agent) => {
    const faults = schedule.faults[agent.name]
    if (!faults) return layer
    const mocks: Record<string, MockTools.Mock<unknown, unknown, unknown>> = {}
    for (const tool of agent.tools) {
      const fault = faults[tool.name]
      if (!fault) continue
      mocks[tool.name] = (params, context) =>
        sleep(fault.delay).pipe(Effect.andThen(
          fault.fails
            ? Effect.fail(new Tool.ToolError({ message: `${tool.name} failed (injected by baton sim)` }))
            : tool.handler(params, context)
        ))
    }
    return Object.keys(mocks).length > 0 ? Layer.provideMerge(MockTools.layer(agent as Agent<unknown>, mocks as never), layer) : layer
  }, Layer.empty)

/**
 * Runs `schedule` against `sim`'s agents.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (schedule: Schedule, sim: SimAgents): Effect.Effect<Recording> =>
  Effect.gen(function*() {
    const byName = new Map(sim.agents.map((a) => [a.name, a]))
    const failures: Array<Recording["failures"][number]> = []
    const requests: Array<ModelRequest> = []
    const logs: Array<string> = []
    let session: AgentSession.AgentSession | undefined
    let closeSeq = Infinity
    let events: ReadonlyArray<SessionEvent> = []
    let history: ReadonlyArray<ChatItem> = []
    const seqOf = (of: AgentSession.AgentSession<unknown>) => {
      const log = Effect.runSync(of.eventLog)
      return log.length === 0 ? 0 : log[log.length - 1]!.seq + 1
    }
    const nextSeq = () => (session ? seqOf(session) : 0)
    const hooks: Array<HookRun> = []
    const taskReturns: Array<TaskReturn> = []
    const finishes: Array<BackgroundFinish> = []
    let settled: Settled | undefined
    const observer: FlowObserver = {
      hookStarted: (of, agent, hook) => void hooks.push({ agent, hook, seq: seqOf(of) }),
      hookEnded: (of, agent, hook) => {
        const run = hooks.findLast((h) => h.agent === agent && h.hook === hook && h.endSeq === undefined)
        if (run) run.endSeq = seqOf(of)
      },
      taskReturned: (of, caller, task, ok) => void taskReturns.push({ caller, task, ok, seq: seqOf(of) }),
      backgroundFinished: (of, agent, callId, tool) =>
        void finishes.push({ agent, callId, tool, seq: seqOf(of), holder: Effect.runSync(of.currentAgent)?.name })
    }
    const counters = new Map<string, number>()
    const respond = (request: ScriptedModel.RecordedRequest): ScriptedModel.ScriptedResponse => {
      const agent = request.agent ?? "?"
      requests.push({ agent, holder: session ? Effect.runSync(session.currentAgent)?.name : undefined, seq: nextSeq() })
      if (requests.length > MODEL_BUDGET) return { text: "(out of budget)" }
      const trigger = request.last.kind === "user" ? "user" : "other"
      const list = schedule.answers[agent]?.[trigger] ?? []
      if (list.length === 0) return { text: `${agent} answers.` }
      const key = `${agent}.${trigger}`
      const n = counters.get(key) ?? 0
      counters.set(key, n + 1)
      return scripted(list[n % list.length]!, request.toolChoice === "none")
    }

    const before = Diagnostics.snapshot()
    const play = Effect.gen(function*() {
      const started = yield* AgentSession.start({
        agent: sim.agents[0]!,
        ...(sim.userdata ? { userdata: sim.userdata() } : {})
      }).pipe(Effect.orDie)
      session = started
      const pending: Array<{ readonly what: string; readonly fiber: Fiber.Fiber<unknown, unknown> }> = []
      const bounded = (what: string, effect: Effect.Effect<unknown, unknown>) =>
        effect.pipe(
          Effect.timeoutOption(WAIT_LIMIT),
          Effect.tap((o) =>
            Effect.sync(() => {
              if (o._tag === "None") failures.push({ rule: "rule 10", message: `${what} did not end within ${WAIT_LIMIT / 1000} s of test time` })
            })
          ),
          Effect.ignore
        )
      for (const action of schedule.actions) {
        yield* sleep(action.after)
        switch (action.op) {
          case "run": {
            const turn = bounded(`run "${action.text}"`, started.run(action.text))
            if (action.wait) yield* turn
            else pending.push({ what: "run", fiber: yield* Effect.forkChild(turn) })
            break
          }
          case "send":
            yield* Effect.ignore(started.send(action.text))
            break
          case "interrupt":
            yield* started.interrupt
            break
          case "speak":
            pending.push({
              what: "speak",
              fiber: yield* Effect.forkChild(
                started.setUserSpeaking(true).pipe(Effect.andThen(sleep(action.duration)), Effect.andThen(started.setUserSpeaking(false)))
              )
            })
            break
          case "handoff": {
            const target = byName.get(action.target)
            if (target) pending.push({ what: "handoff", fiber: yield* Effect.forkChild(bounded(`the forced handoff to ${action.target}`, started.handoff(target))) })
            break
          }
          case "say":
            yield* Effect.ignore(started.say(action.text))
            break
          case "close":
            if (closeSeq === Infinity) closeSeq = nextSeq()
            yield* started.close
        }
      }
      for (const p of pending) yield* Fiber.join(p.fiber).pipe(Effect.ignore)
      // Let what the last actions started run out before the close: the session quiescent, no
      // background call running (what the hooks and tasks did is then complete: rules 5, 6, 9).
      if (closeSeq === Infinity) {
        const quiet = yield* Effect.timeoutOption(started.idleWithBackground, WAIT_LIMIT)
        if (quiet._tag === "Some" && closeSeq === Infinity && !Effect.runSync(started.closed)) {
          settled = { seq: nextSeq(), hooks: hooks.length, taskReturns: taskReturns.length }
        }
      }
      yield* sleep(60_000)
      if (closeSeq === Infinity) closeSeq = nextSeq()
      yield* started.close
      events = yield* started.eventLog
      history = (yield* started.history).items
    })

    const body = Effect.gen(function*() {
      yield* TestClock.setTime(-1)
      const fiber = yield* Effect.forkChild(Effect.sleep(1).pipe(Effect.andThen(play)))
      let elapsed = 0
      while (!fiber.pollUnsafe()) {
        if (elapsed > 20 * WAIT_LIMIT) {
          failures.push({ rule: "rule 10", message: `the schedule did not end within ${(20 * WAIT_LIMIT) / 1000} s of test time` })
          yield* Fiber.interrupt(fiber)
          break
        }
        yield* TestClock.adjust(DRIVE_STEP)
        elapsed += DRIVE_STEP
      }
      const exit = fiber.pollUnsafe()
      if (exit && exit._tag === "Failure" && !Cause.hasInterruptsOnly(exit.cause)) {
        failures.push({ rule: "no unhandled error", message: `the schedule failed: ${Cause.pretty(exit.cause).split("\n")[0]}` })
      }
      if (session && events.length === 0) {
        events = yield* session.eventLog
        history = (yield* session.history).items
      }
    })
    yield* body.pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(ScriptedModel.layer([{ when: () => true, reply: respond }]), faultLayer(schedule, sim.agents), TestClock.layer(), captureLogs(logs))),
      Effect.provideService(CurrentFlowObserver, observer),
      Effect.catchCause((cause) => Effect.sync(() => void failures.push({ rule: "no unhandled error", message: `the run failed: ${Cause.pretty(cause).split("\n")[0]}` })))
    )
    // Let forked closes run out.
    for (let i = 0; i < 3; i++) yield* Effect.yieldNow
    const after = Diagnostics.snapshot()
    for (const log of logs) failures.push({ rule: "no unhandled error", message: `log: ${log}` })
    return { schedule, events, history, requests, hooks, taskReturns, finishes, settled, closeSeq, before, after, failures } satisfies Recording
  })

/** Warnings and errors logged while the schedule runs (the TestClock's own notes aside). */
const captureLogs = (logs: Array<string>) =>
  Logger.layer([
    Logger.make((options) => {
      if (options.logLevel !== "Warn" && options.logLevel !== "Error" && options.logLevel !== "Fatal") return
      const message = Array.isArray(options.message) ? options.message.map(String).join(" ") : String(options.message)
      if (message.includes("test clock")) return
      logs.push(`${options.logLevel}: ${message.split("\n")[0]}`)
    })
  ])
