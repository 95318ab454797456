/**
 * Plays a scenario's timeline against a session: what the application does (send, run,
 * interrupt, forced handoff, say, generateReply, idle, close) at the times the scenario says,
 * then waits for everything in flight, checks the session stays quiet once quiescent, and
 * closes it. Runs inside a fiber the TestClock wakes (see Runner.ts). Every wait has a limit in
 * test time: a wait that never ends is recorded as a failure, never a hang of the simulation.
 */
import { Clock, Effect, Fiber, Option } from "effect"
import { type AgentSession, Human } from "../../src/index.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"
import * as ScriptedRealtime from "../../layers/testing/ScriptedRealtime.ts"
import * as Cascade from "./Cascade.ts"
import type { Built, HookCall, TaskOutcome, World } from "./Interpret.ts"
import type { Action, Scenario } from "./Scenario.ts"

export interface ActionRecord {
  readonly index: number
  /** When it happened among actions and run resolutions. */
  readonly order: number
  /** "speak" also marks the end of the user speaking; "operatorSays": the operator's answer. */
  readonly op: Action["op"] | "operatorSays"
  /** The sequence number the next event would get when the action was made. */
  readonly seq: number
  readonly at: number
  /** When the action's call returned: a voice push waits while the holder's connection is
   * acquired, and the user is heard from then on. */
  ended?: number
}

export interface RunRecord {
  readonly input: number
  readonly text: string
  /** The run also waited for background tools. */
  readonly background: boolean
  /** Set once the run resolved. */
  resolvedSeq: number | undefined
  resolvedOrder: number
  /** `session.idle` completed at once when the run resolved. */
  idleAtResolution: boolean
  /** The run's result holds the user message of its input. */
  containsInput: boolean
  resultSeqs: ReadonlyArray<number>
  /** The session was closed before the run resolved. */
  closedBefore: boolean
  /** Other runs were waiting when it resolved (one of them sends its input next). */
  othersPending: boolean
  /** Long-running handlers were still running when it resolved (they report later). */
  backgroundRunning: boolean
}

export interface HandoffRecord {
  readonly target: string
  readonly seq: number
  outcome: string | undefined
  answeredSeq: number | undefined
}

/** What the session looked like at the final quiescent point, before it was closed. */
export interface Settled {
  readonly seq: number
  readonly hooks: ReadonlyArray<HookCall>
  readonly taskOutcomes: ReadonlyArray<TaskOutcome>
  readonly holder: string | undefined
  readonly diagnostics: Diagnostics.Counts
  /** Flows (tools, hooks) still waiting for an AgentTask. */
  readonly awaiting: number
  /** Realtime connections open then (realtime scenarios). */
  readonly openConnections: number
  /** Events that happened during the quiet period after it (should be none). */
  readonly lateEvents: number
  readonly order: number
}

export interface Failure {
  readonly rule: string
  readonly message: string
}

export interface TimelineState {
  readonly scenario: Scenario
  readonly world: World
  readonly built: Built
  /** Test time a wait may take before it counts as a hang (ms). */
  readonly limit: number
  readonly actions: Array<ActionRecord>
  readonly runs: Array<RunRecord>
  readonly handoffs: Array<HandoffRecord>
  readonly failures: Array<Failure>
  settled: Settled | undefined
  closeSeq: number | undefined
  /** The tick when close was asked (see `World.tick`). */
  closeOrder: number | undefined
  closedEarly: boolean
  endTime: number
}

export const makeTimelineState = (scenario: Scenario, world: World, built: Built, limit: number): TimelineState => ({
  scenario,
  world,
  built,
  limit,
  actions: [],
  runs: [],
  handoffs: [],
  failures: [],
  settled: undefined,
  closeSeq: undefined,
  closeOrder: undefined,
  closedEarly: false,
  endTime: 0
})

/** Test time that must pass without any event once the session is quiescent. */
const QUIET = 20_000

export const inputText = (input: number) => `u${input} please`

/** The number of the input `text` says (`inputText`'s inverse; NaN for other text). */
export const inputNumber = (text: string): number => Number(/^u(\d+) please$/.exec(text)?.[1])

/** The name the sim's operator holds the floor under. */
export const OPERATOR = "operator"

const sleep = (ms: number) => (ms > 0 ? Effect.sleep(ms) : Effect.void)

export const playTimeline = (state: TimelineState) =>
  Effect.gen(function*() {
    const { world, limit, failures } = state
    const session = yield* state.built.start
    world.session = session
    // The person who can take the floor (takeOver / handBack actions): a scripted participant
    // that answers each turn of the user's, at the action, while it holds the floor.
    const operator = yield* Human.make({ name: OPERATOR })
    const pending: Array<{ readonly what: string; readonly fiber: Fiber.Fiber<unknown> }> = []
    const closed = () => state.closeSeq !== undefined || world.hungUp !== undefined

    /** Waits for `fiber` at most `limit` ms of test time; false (and interrupted) if it did not end. */
    const awaitFiber = (fiber: Fiber.Fiber<unknown>) =>
      Fiber.await(fiber).pipe(
        Effect.timeoutOption(limit),
        Effect.flatMap((exit) => (Option.isSome(exit) ? Effect.succeed(true) : Fiber.interrupt(fiber).pipe(Effect.as(false))))
      )
    const fork = <A, E>(effect: Effect.Effect<A, E>) => Effect.forkChild(effect, { startImmediately: true })

    const idleNow = Effect.gen(function*() {
      const fiber = yield* fork(session.idle)
      if (fiber.pollUnsafe()) return true
      yield* Fiber.interrupt(fiber)
      return false
    })

    const run = (input: number, background: boolean) => {
      const text = inputText(input)
      const record: RunRecord = {
        input,
        text,
        background,
        resolvedSeq: undefined,
        resolvedOrder: -1,
        idleAtResolution: false,
        containsInput: false,
        resultSeqs: [],
        closedBefore: false,
        othersPending: false,
        backgroundRunning: false
      }
      state.runs.push(record)
      return session.run(text, { waitForBackground: background }).pipe(
        // a turn no model answered fails with TurnFailed, which carries the run's result
        Effect.catchTag("TurnFailed", (failed) => Effect.succeed(failed.result)),
        Effect.catchTag("InvalidInput", (e) => Effect.die(e)),
        Effect.flatMap((result) =>
          Effect.gen(function*() {
            record.resolvedSeq = world.seq()
            record.resolvedOrder = world.tick()
            record.closedBefore = closed()
            record.othersPending = state.runs.some((r) => r !== record && r.resolvedSeq === undefined)
            record.backgroundRunning = world.longStarted > world.finishes.length
            record.idleAtResolution = yield* idleNow
            record.resultSeqs = result.sessionEvents.map((e) => e.seq)
            record.containsInput = result.events.some((e) => e.type === "message" && e.role === "user" && e.content === text)
          })
        ),
        // A run the session's close overtook fails with SessionClosed: it resolved, with no result.
        Effect.catchTag("SessionClosed", () =>
          Effect.sync(() => {
            record.resolvedSeq = world.seq()
            record.resolvedOrder = world.tick()
            record.closedBefore = true
          })
        )
      )
    }

    const close = Effect.gen(function*() {
      if (state.closeSeq === undefined) {
        state.closeSeq = world.seq()
        state.closeOrder = world.tick()
      }
      if (!(yield* awaitFiber(yield* fork(session.close)))) failures.push({ rule: "rule 11", message: "session.close did not finish" })
    })

    const perform = (action: Action): Effect.Effect<void> =>
      Effect.gen(function*() {
        switch (action.op) {
          case "send":
            // after close a send is refused (SessionClosed): the scenario goes on
            return yield* session.send(inputText(action.input)).pipe(
              Effect.catchTag("SessionClosed", () => (closed() ? Effect.void : Effect.die(new Error("SessionClosed before close")))),
              Effect.orDie // the sim's inputs are short: InvalidInput would be a baton bug
            )
          case "run": {
            const fiber = yield* fork(run(action.input, action.background ?? false))
            if (!action.wait) return void pending.push({ what: `run u${action.input}`, fiber })
            if (!(yield* awaitFiber(fiber))) {
              failures.push({ rule: "rule 10", message: `run u${action.input} did not resolve within ${limit} ms of test time` })
            }
            return
          }
          case "interrupt":
            return yield* session.interrupt
          case "voice":
            yield* session.pushAudio(ScriptedRealtime.utterance(inputText(action.input))).pipe(
              Effect.catch((e) => Effect.sync(() => void world.notes.push(`voice: ${e.message}`)))
            )
            // The server hears the audio when it gets it: a holder that has just got the floor
            // sends it once its connection carries its configuration.
            lastVoiceAt = yield* Clock.currentTimeMillis
            return
          case "speak": {
            const speaking = session.setUserSpeaking(true).pipe(
              Effect.andThen(sleep(action.duration)),
              Effect.andThen(Clock.currentTimeMillis),
              Effect.tap((at) => Effect.sync(() => void state.actions.push({ index: -1, order: world.tick(), op: "speak", seq: world.seq(), at }))),
              Effect.andThen(session.setUserSpeaking(false))
            )
            return void pending.push({ what: "the user speaking", fiber: yield* fork(speaking) })
          }
          case "handoff":
            return yield* forcedHandoff(action.target)
          case "takeOver": {
            const fiber = yield* fork(session.takeOver(operator).pipe(
              Effect.tap((outcome) => Effect.sync(() => void world.notes.push(`takeOver: ${outcome._tag}`))),
              // The operator greets the caller once it holds the floor.
              Effect.andThen(operator.say("the operator speaking").pipe(Effect.ignore))
            ))
            return void pending.push({ what: "the operator's take-over", fiber })
          }
          case "handBack": {
            const target = state.built.agents.get(action.target)
            if (!target) return
            const fiber = yield* fork(session.handBack(target, { note: "the operator's note" }).pipe(
              Effect.tap((outcome) => Effect.sync(() => void world.notes.push(`handBack: ${outcome._tag}`)))
            ))
            return void pending.push({ what: `the hand back to ${action.target}`, fiber })
          }
          case "utter":
          case "noise": {
            const spec = state.scenario.cascade
            if (!spec) return
            const stops = action.op === "utter" && action.stops === true
            const speaking = Cascade.utter(world.cascade, spec, action.op === "utter" ? action.input : undefined, action.duration, stops).pipe(
              // the engine's final transcript comes sttDelay after the turn ended
              Effect.andThen(sleep(spec.sttDelay + 20))
            )
            return void pending.push({ what: `the user's ${action.op}`, fiber: yield* fork(speaking) })
          }
          case "say":
          case "reply": {
            const ask: Effect.Effect<unknown, { readonly message: string }> = action.op === "say"
              ? session.say("the application says hello")
              : session.generateReply({ instructions: "the application asks for a reply" })
            const fiber = yield* fork(ask.pipe(Effect.catch((e) => Effect.sync(() => void world.notes.push(`${action.op}: ${e.message}`)))))
            return void pending.push({ what: action.op, fiber })
          }
          case "idle": {
            if (!(yield* awaitFiber(yield* fork(session.idle)))) {
              failures.push({ rule: closed() ? "rule 11" : "rule 10", message: `session.idle did not resolve within ${limit} ms of test time` })
            }
            return
          }
          case "close":
            state.closedEarly = true
            return yield* close
        }
      })

    /** When the user last spoke into a connection (the server answers on its own time). */
    let lastVoiceAt: number | undefined

    const forcedHandoff = (name: string) =>
      Effect.gen(function*() {
        const target = state.built.agents.get(name)
        if (!target) return
        const record: HandoffRecord = { target: name, seq: world.seq(), outcome: undefined, answeredSeq: undefined }
        state.handoffs.push(record)
        const fiber = yield* fork(
          session.handoff(target).pipe(
            Effect.tap((outcome) =>
              Effect.sync(() => {
                record.outcome = outcome._tag === "Applied" ? `Applied:${outcome.to}` : `NotApplied:${outcome.reason}`
                record.answeredSeq = world.seq()
              })
            )
          )
        )
        pending.push({ what: `handoff to ${name}`, fiber })
      })

    for (let i = 0; i < state.scenario.timeline.length; i++) {
      const action = state.scenario.timeline[i]!
      yield* sleep(action.after)
      const record: ActionRecord = { index: i, order: world.tick(), op: action.op, seq: world.seq(), at: yield* Clock.currentTimeMillis }
      state.actions.push(record)
      yield* perform(action)
      // The operator answers what the user said to it (a refused say: it no longer holds the floor).
      if ((action.op === "send" || action.op === "run") && operator.holding() !== undefined) {
        state.actions.push({ index: -1, order: world.tick(), op: "operatorSays", seq: world.seq(), at: yield* Clock.currentTimeMillis })
        yield* operator.say(`the operator answers u${action.input}`).pipe(Effect.ignore)
      }
      record.ended = yield* Clock.currentTimeMillis
    }

    // A spoken turn is the server's until it reports it (speech, transcript, then its answer):
    // quiescence is judged once the last one has had the time to come back.
    const rt = state.scenario.realtime
    if (lastVoiceAt !== undefined && rt) {
      const back = lastVoiceAt + (rt.speechMs ?? 200) + rt.responseDelay + (rt.transcriptMs ?? 0) + 10 - (yield* Clock.currentTimeMillis)
      if (back > 0) yield* sleep(back)
    }

    // Whatever is still in flight must end.
    for (const { what, fiber } of pending) {
      if (!(yield* awaitFiber(fiber))) {
        failures.push({ rule: closed() ? "rule 11" : "rule 10", message: `${what} did not finish within ${limit} ms of test time` })
      }
    }
    if (!closed()) {
      if (!(yield* awaitFiber(yield* fork(session.idleWithBackground)))) {
        failures.push({ rule: "rule 10", message: `the session never became quiescent (${limit} ms of test time)` })
      } else if (!closed()) {
        const seq = world.seq()
        const order = world.tick()
        yield* sleep(QUIET)
        // A tool may have hung up meanwhile: then there is no quiescent point before the close.
        if (!closed()) {
          state.settled = {
            seq,
            hooks: [...world.hooks],
            taskOutcomes: [...world.taskOutcomes],
            holder: world.holder(),
            diagnostics: Diagnostics.snapshot(),
            awaiting: world.awaiting(),
            openConnections: session.realtime()?.open ?? 0,
            lateEvents: world.seq() - seq,
            order
          }
        }
      }
      if (!closed()) yield* close
    }
    state.endTime = yield* Clock.currentTimeMillis
  })

export type { AgentSession }
