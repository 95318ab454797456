/**
 * Runs one scenario under its own TestClock (time starts at 0 for every scenario, so a seed
 * always gives the same schedule and the same event log) and records what the checker needs:
 * the event log, the history, the world (hooks, model requests, task results), what each
 * application action saw, the state at the final quiescent point and the Diagnostics counts
 * before and after.
 */
import { Cause, Effect, Fiber, Layer, Logger } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as ScriptedRealtime from "../../layers/testing/ScriptedRealtime.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"
import * as Faults from "../../src/Faults.ts"
import type { SessionStoreService } from "../../services/SessionStore.ts"
import type { ChatItem } from "../../src/ChatContext.ts"
import type { SessionEvent } from "../../src/Events.ts"
import {
  type AwayCall,
  type BackgroundFinish,
  type Built,
  type HookCall,
  interpret,
  makeWorld,
  type ModelRequest,
  type TaskOutcome,
  type TimedCall,
  type TurnHookCall,
  type World
} from "./Interpret.ts"
import type { CascadeWorld } from "./Cascade.ts"
import type { Scenario } from "./Scenario.ts"
import { type ActionRecord, type HandoffRecord, inputNumber, makeTimelineState, playTimeline, type RunRecord, type Settled } from "./Timeline.ts"

export type { ActionRecord, HandoffRecord, RunRecord, Settled }

export interface Recording {
  readonly scenario: Scenario
  readonly events: ReadonlyArray<SessionEvent>
  readonly history: ReadonlyArray<ChatItem>
  readonly hooks: ReadonlyArray<HookCall>
  readonly requests: ReadonlyArray<ModelRequest>
  readonly taskOutcomes: ReadonlyArray<TaskOutcome>
  /** Long-running calls whose handlers finished (before their results were delivered). */
  readonly finishes: ReadonlyArray<BackgroundFinish>
  /** Calls of timeout tools, turn hook and user-away runs (CheckWaits.ts). */
  readonly timed: ReadonlyArray<TimedCall>
  readonly turns: ReadonlyArray<TurnHookCall>
  readonly away: ReadonlyArray<AwayCall>
  readonly notes: ReadonlyArray<string>
  readonly actions: ReadonlyArray<ActionRecord>
  readonly runs: ReadonlyArray<RunRecord>
  readonly handoffs: ReadonlyArray<HandoffRecord>
  readonly settled: Settled | undefined
  /** The sequence number and tick when `close` was asked (by the timeline, a tool or at the end). */
  readonly closeSeq: number | undefined
  readonly closeOrder: number | undefined
  /** Whether the timeline closed the session (rather than the end of the scenario). */
  readonly closedEarly: boolean
  readonly before: Diagnostics.Counts
  readonly after: Diagnostics.Counts
  /** Hangs, defects, unexpected logs and rejections seen by the harness itself. */
  readonly failures: ReadonlyArray<{ readonly rule: string; readonly message: string }>
  readonly endTime: number
  /** The realtime model's connections (realtime scenarios): operations, responses, closed. */
  readonly connections: ReadonlyArray<ScriptedRealtime.ConnectionRecord>
  /** Cascade scenarios: frames played, cuts, each speech's text, the STT's finals. */
  readonly cascade: CascadeWorld
}

export interface RunOptions {
  readonly faults?: Faults.ProtocolFaults | undefined
  /** Test time a wait may take before it counts as a hang (ms). */
  readonly waitLimit?: number
  /** The session is durable, journaled to this store (the crash simulation, Crash.ts). */
  readonly store?: SessionStoreService | undefined
  readonly storeId?: string | undefined
  /** Called with the world as the run starts (the crash simulation reads its session). */
  readonly watch?: ((world: World) => void) | undefined
}

/** The clock moves by this much per step while the timeline runs (the step size does not change
 * the schedule: each step wakes every sleeper up to its end, in order, each cascade run out). */
const DRIVE_STEP = 1_000
/** A scenario that has not ended after this much test time is a hang. */
const HARD_LIMIT = 7_200_000

let rejections = 0
let listening = false
const listen = () => {
  if (listening) return
  listening = true
  process.on("unhandledRejection", () => void rejections++)
}

export const runScenario = (scenario: Scenario, options: RunOptions = {}): Effect.Effect<Recording> =>
  Effect.gen(function*() {
    listen()
    const rejectionsBefore = rejections
    const world = makeWorld()
    options.watch?.(world)
    const built = interpret(scenario, world, { store: options.store, id: options.storeId })
    const logs: Array<string> = []
    const state = makeTimelineState(scenario, world, built, options.waitLimit ?? 300_000)
    let events: ReadonlyArray<SessionEvent> = []
    let history: ReadonlyArray<ChatItem> = []
    let endTime = 0
    let connections: ReadonlyArray<ScriptedRealtime.ConnectionRecord> = []
    const before = Diagnostics.snapshot()

    const body = Effect.gen(function*() {
      // The timeline runs in a fiber the clock wakes (time starts at -1 and it first sleeps 1 ms):
      // the TestClock then runs every cascade it triggers to completion before time moves on.
      yield* TestClock.setTime(-1)
      const fiber = yield* Effect.forkChild(Effect.sleep(1).pipe(Effect.andThen(playTimeline(state))))
      let elapsed = 0
      while (!fiber.pollUnsafe()) {
        if (elapsed > HARD_LIMIT) {
          state.failures.push({ rule: "rule 10", message: `the scenario did not end within ${HARD_LIMIT} ms of test time` })
          yield* Fiber.interrupt(fiber)
          break
        }
        yield* TestClock.adjust(DRIVE_STEP)
        elapsed += DRIVE_STEP
      }
      const exit = fiber.pollUnsafe()
      if (exit && exit._tag === "Failure" && !Cause.hasInterruptsOnly(exit.cause)) {
        state.failures.push({ rule: "no unhandled error", message: `the timeline failed: ${Cause.pretty(exit.cause)}` })
      }
      const session = world.session
      const hungUp = world.hungUp
      if (hungUp !== undefined && (state.closeOrder === undefined || hungUp.order < state.closeOrder)) {
        state.closeSeq = hungUp.seq
        state.closeOrder = hungUp.order
        state.closedEarly = true
      }
      if (session) {
        if (state.closeSeq === undefined) {
          state.closeSeq = world.seq()
          state.closeOrder = world.tick()
          yield* session.close
        }
        events = yield* session.eventLog
        history = (yield* session.history).items
      }
      endTime = state.endTime
      const rt = yield* Effect.serviceOption(ScriptedRealtime.ScriptedRealtime)
      if (rt._tag === "Some") connections = rt.value.connections
    })

    yield* body.pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(ScriptedModel.layer(built.rules), realtimeLayer(scenario, built), TestClock.layer(), captureLogs(logs, world.notes))),
      Effect.provideService(Faults.ProtocolFaults, options.faults ?? Faults.none),
      Effect.catchCause((cause) =>
        Effect.sync(() => void state.failures.push({ rule: "no unhandled error", message: `the scenario failed: ${Cause.pretty(cause)}` }))
      )
    )
    // Let forked closes (finished tasks close their own Scope from a session fiber) run out.
    for (let i = 0; i < 3; i++) yield* Effect.yieldNow
    const after = Diagnostics.snapshot()
    for (const log of logs) state.failures.push({ rule: "no unhandled error", message: `log: ${log}` })
    if (rejections > rejectionsBefore) {
      state.failures.push({ rule: "rule 11", message: `${rejections - rejectionsBefore} unhandled rejection(s)` })
    }
    return {
      scenario,
      events,
      history,
      hooks: world.hooks,
      requests: world.requests,
      taskOutcomes: world.taskOutcomes,
      finishes: world.finishes,
      timed: world.timed,
      turns: world.turns,
      away: world.away,
      notes: world.notes,
      actions: state.actions,
      runs: state.runs,
      handoffs: state.handoffs,
      settled: state.settled,
      closeSeq: state.closeSeq,
      closeOrder: state.closeOrder,
      closedEarly: state.closedEarly,
      before,
      after,
      failures: state.failures,
      endTime,
      connections,
      cascade: world.cascade
    } satisfies Recording
  })

/** The scripted realtime model of a realtime scenario (agents without a model of their own use it). */
export const realtimeLayer = (scenario: Scenario, built: Built, firstId = 0) => {
  const spec = scenario.realtime
  if (!spec) return Layer.empty
  return ScriptedRealtime.layer({
    rules: built.rules,
    ...(firstId > 0 ? { firstId } : {}),
    capabilities: spec.capabilities === "openai" ? ScriptedRealtime.openAiLike : ScriptedRealtime.geminiLike,
    ...(spec.ackDelay > 0 ? { ackDelay: `${spec.ackDelay} millis` } : {}),
    ...(spec.responseDelay > 0 ? { responseDelay: `${spec.responseDelay} millis` } : {}),
    ...(spec.rejectEvery ? { rejectUpdate: (n: number) => n % spec.rejectEvery! === 0 } : {}),
    ...(spec.speechMs !== undefined ? { speechDuration: `${spec.speechMs} millis` } : {}),
    ...(spec.transcriptMs !== undefined ? { transcriptDelay: `${spec.transcriptMs} millis` } : {}),
    ...(spec.untranscribedEvery ? { untranscribable: (text: string) => inputNumber(text) % spec.untranscribedEvery! === 0 } : {}),
    ...(spec.dropEvery ? { dropConnection: (n: number) => n % spec.dropEvery! === 0 } : {}),
    ...(spec.failEvery ? { failResponse: (n: number) => n % spec.failEvery! === 0 } : {}),
    ...(spec.stallEvery ? { stallResponse: (n: number) => n % spec.stallEvery! === 0 } : {}),
    speechEvents: spec.capabilities === "openai"
  })
}

/**
 * Records warnings and errors logged while the scenario runs. The TestClock's own warnings
 * (a cascade that ran for more than a second of real time) are notes, not violations.
 */
const captureLogs = (logs: Array<string>, notes: Array<string>) =>
  Logger.layer([
    Logger.make((options) => {
      if (options.logLevel !== "Warn" && options.logLevel !== "Error" && options.logLevel !== "Fatal") return
      const message = Array.isArray(options.message) ? options.message.map(String).join(" ") : String(options.message)
      if (message.includes("test clock")) return void notes.push(`harness: ${message}`)
      logs.push(`${options.logLevel}: ${message}`)
    })
  ])
