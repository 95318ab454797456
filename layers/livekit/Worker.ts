/**
 * A LiveKit agent worker in one process: it registers with the server's dispatch (`/agent`,
 * `Protocol.ts`), answers availability by a load policy, and runs each assigned job as a fiber
 * with its own Scope (`Job.ts`), thousands side by side, where `@livekit/agents` starts a
 * process per job.
 *
 * - Keepalive: `WorkerPing` every `pingIntervalMs`; the server's `WorkerPong` gives the round trip.
 * - Load: jobs / `maxJobs` and event-loop lag / `maxLagMs`, the larger; reported every
 *   `statusIntervalMs`; a job is refused while full, lagging or draining.
 * - Assignment: only of a job this worker accepted, and never while draining; any other is not
 *   started (no room joined) and the server hears `JS_FAILED` with the reason.
 * - The server going away: running jobs go on (they talk to their rooms, not to the dispatch);
 *   the worker reconnects after the delays of `reconnectSchedule` (exponential, jittered, capped;
 *   it starts over once a connection has registered) and registers again. A connection that
 *   went silent without a close is found by WebSocket pings (`liveness`) and counts as gone.
 * - State: one record (`WorkerState.ts`), the connection a tagged union, times from the `Clock`
 *   (a `TestClock` drives the backoff, pings and liveness); the socket is Effect's
 *   (`WorkerSocket.ts`), owned by each connection's Scope, so no listener outlives it.
 * - Drain (the Scope closing, SIGTERM in `baton worker`): no new jobs, the status says full,
 *   running jobs may finish for `drainSeconds`, then the rest are closed and the worker leaves.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Clock, Deferred, Duration, Effect, Exit, Fiber, Queue, Redacted, Schedule, Scope } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { defaultLiveness, type Liveness } from "../shared/Liveness.ts"
import * as Job from "./Job.ts"
import * as Protocol from "./Protocol.ts"
import { Room, type RoomService } from "./Room.ts"
import { WorkerError } from "./WorkerError.ts"
import * as WorkerSocket from "./WorkerSocket.ts"
import * as State from "./WorkerState.ts"

/**
 * The worker's options: the LiveKit server, API key and secret, the agent name for explicit
 * dispatch, how many jobs it takes, and what each job runs.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerOptions {
  /** The LiveKit server (`LIVEKIT_URL`: ws://, wss://, http:// or https://). */
  readonly url: string
  readonly apiKey: string
  readonly apiSecret: Redacted.Redacted<string>
  /** Explicit dispatch by this name; empty for automatic dispatch to every new room. */
  readonly agentName?: string
  /** Jobs at once before the worker says it is full (default 500). */
  readonly maxJobs?: number
  /** Event-loop delay (p99 over the last interval, ms) above which jobs are refused (default 100). */
  readonly maxLagMs?: number
  readonly statusIntervalMs?: number
  /** `WorkerPing` to the server this often (ms; default 10,000); its `WorkerPong` is kept in the state. */
  readonly pingIntervalMs?: number
  readonly drainSeconds?: number
  /** Liveness pings of the socket: a connection that went silent without a close (half-open)
   * is dropped and the worker reconnects (default every 10 s, 10 s to answer). */
  readonly liveness?: Liveness
  /** Reconnection backoff: first wait and cap (ms; default 500 and 30,000). */
  readonly reconnect?: { readonly firstMs?: number; readonly maxMs?: number }
  readonly job: Job.JobOptions
}

/**
 * What the worker knows of itself: its id, whether it is connected, registrations, jobs running,
 * accepted and refused, and problems seen.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerState {
  readonly workerId: string | undefined
  readonly connected: boolean
  /** Registrations so far (more than one after the server went away and came back). */
  readonly registrations: number
  readonly jobs: number
  readonly accepted: number
  readonly refused: number
  readonly draining: boolean
  readonly load: number
  /** The round trip of the last ping answered (ms). */
  readonly pingMs: number | undefined
  /** Problems with what the server sent (malformed frames, assignments refused): the last 20, most recent last. */
  readonly problems: ReadonlyArray<string>
  /** Problems older than those 20, counted only. */
  readonly olderProblems: number
  /** The connection to the server's dispatch (`Waiting` carries the backoff's next attempt time). */
  readonly connection: "Connecting" | "Open" | "Registered" | "Waiting" | "Closed"
  /** When `connection` is `Waiting`: the next attempt's time on the Clock (ms), and why it was lost. */
  readonly waiting: { readonly attempt: number; readonly until: number; readonly why: string } | undefined
}

/**
 * A running worker: its state, and `registered`, which completes when it first registers.
 *
 * @since 0.1.0
 * @category models
 */
export interface Worker {
  readonly state: () => WorkerState
  /** Completes when the worker has registered (the first time). */
  readonly registered: Effect.Effect<void>
}

/**
 * The delays between connection attempts: exponential from `firstMs`, jittered (×0.8–1.2), never
 * above `maxMs`. The worker starts it over once a connection has registered.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reconnectSchedule = (firstMs: number, maxMs: number): Schedule.Schedule<Duration.Duration> => {
  const cap = (schedule: Schedule.Schedule<Duration.Duration>) =>
    Schedule.modifyDelay(schedule, ({ duration }) => Effect.succeed(Duration.min(duration, Duration.millis(maxMs))))
  // capped before the jitter too, so a long outage never multiplies out to infinity
  return cap(Schedule.jittered(cap(Schedule.exponential(Duration.millis(firstMs)))))
}

/** What the worker's functions share: its options, its state record and its Scopes. */
interface Ctx {
  readonly options: WorkerOptions
  readonly agentName: string
  readonly maxJobs: number
  readonly maxLagMs: number
  readonly state: State.State
  readonly room: RoomService
  readonly workerScope: Scope.Scope
  /** Jobs live here, closed after the drain. */
  readonly jobsScope: Scope.Scope
  readonly lag: ReturnType<typeof monitorEventLoopDelay>
  readonly firstRegistration: Deferred.Deferred<void>
}

const lagMs = (ctx: Ctx) => (ctx.lag.count === 0 ? 0 : ctx.lag.percentile(99) / 1e6)
const load = (ctx: Ctx) => Math.min(1, Math.max(ctx.state.jobs.size / ctx.maxJobs, lagMs(ctx) / ctx.maxLagMs))
const full = (ctx: Ctx) => State.isDraining(ctx.state) || ctx.state.jobs.size >= ctx.maxJobs || lagMs(ctx) >= ctx.maxLagMs

/** To the server over the open connection; dropped when there is none (it hears the state on registering). */
const send = (ctx: Ctx, bytes: Uint8Array) =>
  Effect.suspend(() => {
    const outbox = State.outbox(ctx.state)
    return outbox === undefined ? Effect.void : Effect.asVoid(Queue.offer(outbox, bytes))
  })
const sendStatus = (ctx: Ctx) => Effect.suspend(() => send(ctx, Protocol.workerStatus(full(ctx), load(ctx), ctx.state.jobs.size)))

/** Never started: the server hears it failed (UpdateJobStatus JS_FAILED with the reason), unless
 * it is a second assignment of a job running here (that job's status stays its own). */
const refuseAssignment = (ctx: Ctx, jobId: string, why: string) =>
  Effect.gen(function*() {
    const running = ctx.state.jobs.has(jobId)
    const reason = running ? `a second assignment of job ${jobId}, already running here` : why
    State.problem(ctx.state, reason)
    yield* Effect.logWarning(`livekit worker: refused ${reason}`)
    if (!running) yield* send(ctx, Protocol.jobStatus(jobId, Protocol.JobStatus.JS_FAILED, reason))
  })

const startJob = (ctx: Ctx, spec: Job.JobSpec) =>
  Effect.gen(function*() {
    // The worker's credentials: what a job's LiveKit SIP transfer is made with.
    const fiber = yield* Job.run({ ...spec, api: spec.api ?? { apiKey: ctx.options.apiKey, apiSecret: ctx.options.apiSecret } }, ctx.options.job).pipe(
      Effect.scoped,
      Effect.provideService(Room, ctx.room),
      // also when the job is interrupted (terminated, drained): the server hears how it ended
      Effect.onExit((exit) =>
        Effect.suspend(() => {
          State.jobEnded(ctx.state, spec.id)
          const failed = Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)
          const status = failed ? Protocol.JobStatus.JS_FAILED : Protocol.JobStatus.JS_SUCCESS
          return send(ctx, Protocol.jobStatus(spec.id, status, failed ? "the job failed" : "")).pipe(Effect.andThen(sendStatus(ctx)))
        })
      ),
      Effect.ignore,
      Effect.forkIn(ctx.jobsScope)
    )
    State.jobStarted(ctx.state, spec.id, fiber)
    yield* send(ctx, Protocol.jobStatus(spec.id, Protocol.JobStatus.JS_RUNNING))
    yield* sendStatus(ctx)
  })

type Message<K extends Protocol.ServerMessage["message"]["case"]> = Extract<Protocol.ServerMessage["message"], { case: K }>["value"]

const onRegister = (ctx: Ctx, msg: Message<"register">) =>
  Effect.gen(function*() {
    State.registered(ctx.state, msg.workerId, yield* Clock.currentTimeMillis)
    yield* Deferred.succeed(ctx.firstRegistration, undefined)
    yield* Effect.logInfo(`livekit worker registered as ${msg.workerId}`)
  })

const onAvailability = (ctx: Ctx, msg: Message<"availability">) =>
  Effect.gen(function*() {
    if (!msg.job) return
    const ok = !full(ctx)
    State.answered(ctx.state, msg.job.id, ok, yield* Clock.currentTimeMillis)
    yield* send(ctx, Protocol.availability(msg.job.id, ok, ctx.agentName))
  })

const onAssignment = (ctx: Ctx, msg: Message<"assignment">) =>
  Effect.gen(function*() {
    const job = msg.job
    if (!job) return
    const refusal = State.assignmentRefusal(ctx.state, job.id, yield* Clock.currentTimeMillis)
    if (refusal !== undefined) return yield* refuseAssignment(ctx, job.id, refusal)
    yield* startJob(ctx, { id: job.id, roomName: job.room?.name ?? "", agentName: job.agentName || ctx.agentName, url: msg.url || ctx.options.url, token: Redacted.make(msg.token) })
  })

const onTermination = (ctx: Ctx, msg: Message<"termination">) =>
  Effect.suspend(() => {
    const fiber = ctx.state.jobs.get(msg.jobId)
    return fiber ? Effect.asVoid(Effect.forkIn(Fiber.interrupt(fiber), ctx.workerScope)) : Effect.void
  })

/** One frame from the server, by kind; a frame that does not decode is a problem, logged. */
const onFrame = (ctx: Ctx, frame: Uint8Array | string) =>
  Effect.gen(function*() {
    const decoded = typeof frame === "string" ? "a text frame where the protocol has binary ones" : Protocol.decode(frame)
    if (typeof decoded === "string") {
      State.problem(ctx.state, decoded)
      return yield* Effect.logWarning(`livekit worker: ignored ${decoded}`)
    }
    const msg = decoded.message
    switch (msg.case) {
      case "register":
        return yield* onRegister(ctx, msg.value)
      case "availability":
        return yield* onAvailability(ctx, msg.value)
      case "assignment":
        return yield* onAssignment(ctx, msg.value)
      case "pong":
        return State.pong(ctx.state, Number(msg.value.lastTimestamp), yield* Clock.currentTimeMillis)
      case "termination":
        return yield* onTermination(ctx, msg.value)
      default:
        return
    }
  })

/** Every `ms`, on the Clock, while the connection lasts. */
const every = (ms: number, effect: Effect.Effect<void>) => Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(ms), effect)))

/** One connection: register, serve until it is lost. Always fails, saying whether it had registered. */
const connection = (ctx: Ctx): Effect.Effect<never, WorkerError> => {
  const before = ctx.state.registrations
  return Effect.gen(function*() {
    const token = yield* Protocol.workerToken(ctx.options.apiKey, ctx.options.apiSecret)
    const socket = yield* WorkerSocket.open(Protocol.agentUrl(ctx.options.url), token, ctx.options.liveness ?? defaultLiveness)
    State.opened(ctx.state, socket.outbox)
    yield* send(ctx, Protocol.register(ctx.agentName))
    // the periodic status: then the lag histogram starts over, so load is about the last interval
    yield* every(ctx.options.statusIntervalMs ?? 2500, Effect.andThen(sendStatus(ctx), Effect.sync(() => ctx.lag.reset())))
    yield* every(ctx.options.pingIntervalMs ?? 10_000, Effect.flatMap(Clock.currentTimeMillis, (now) => send(ctx, Protocol.ping(now))))
    // frames are handled in order, on this fiber
    const serve = Effect.forever(Effect.flatMap(socket.pull, (frames) => Effect.forEach(frames, (frame) => onFrame(ctx, frame), { discard: true })))
    return yield* Effect.raceFirst(serve, socket.silent)
  }).pipe(
    Effect.scoped,
    Effect.mapError((error) => new WorkerError({ reason: error.reason, message: error.message, registered: ctx.state.registrations > before }))
  )
}

/**
 * Connects, and after each loss waits the backoff's next delay (recorded as `Waiting`, logged)
 * and connects again, for as long as the worker runs. The backoff starts over after a
 * connection that registered.
 */
const reconnecting = (ctx: Ctx) =>
  Effect.gen(function*() {
    const backoff = reconnectSchedule(ctx.options.reconnect?.firstMs ?? 500, ctx.options.reconnect?.maxMs ?? 30_000)
    let next = yield* Schedule.toStep(backoff)
    let failures = 0
    for (;;) {
      State.connecting(ctx.state, failures + 1)
      const lost = yield* Effect.flip(connection(ctx))
      if (lost.registered) {
        next = yield* Schedule.toStep(backoff)
        failures = 0
      }
      failures++
      const now = yield* Clock.currentTimeMillis
      const [, jittered] = yield* next(now, undefined)
      const delay = Math.round(Duration.toMillis(jittered))
      State.waiting(ctx.state, failures, now + delay, lost.message)
      yield* Effect.logWarning(`livekit worker: ${lost.message}; reconnecting in ${delay} ms`)
      yield* Effect.sleep(delay)
    }
  }).pipe(
    // a bug here would stop the reconnecting silently: say so
    Effect.tapCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logError("livekit worker: stopped reconnecting", cause))),
    Effect.ensuring(Effect.sync(() => State.closed(ctx.state)))
  )

/** No new jobs, the status says full; running jobs may finish for `drainSeconds`. */
const drain = (ctx: Ctx) =>
  Effect.gen(function*() {
    State.startDrain(ctx.state, yield* Clock.currentTimeMillis)
    yield* sendStatus(ctx)
    const deadline = (ctx.options.drainSeconds ?? 30) * 1000
    const jobs = [...ctx.state.jobs.values()]
    if (jobs.length > 0) yield* Effect.logInfo(`livekit worker draining: ${jobs.length} job(s), up to ${deadline / 1000} s`)
    yield* Effect.forEach(jobs, Fiber.await, { discard: true, concurrency: "unbounded" }).pipe(Effect.timeoutOption(deadline))
  })

const snapshot = (ctx: Ctx): WorkerState => {
  const { state } = ctx
  const c = state.connection
  return {
    workerId: state.workerId,
    connected: c._tag === "Open" || c._tag === "Registered",
    registrations: state.registrations,
    jobs: state.jobs.size,
    accepted: state.accepted,
    refused: state.refused,
    draining: State.isDraining(state),
    load: load(ctx),
    pingMs: state.pingMs,
    problems: state.problems,
    olderProblems: state.olderProblems,
    connection: c._tag,
    waiting: c._tag === "Waiting" ? { attempt: c.attempt, until: c.until, why: c.why } : undefined
  }
}

/**
 * Starts a LiveKit agent worker in the current Scope: it registers with the server's `/agent`
 * endpoint (reconnecting with backoff when the socket is lost), accepts job offers while it has
 * room (`maxJobs`, event-loop lag under `maxLagMs`), runs each assigned job as a session
 * (`Job.run`) and reports its status; closing the Scope drains the jobs. Needs `Room`.
 *
 * @example
 * ```ts
 * import { Effect, Redacted } from "effect"
 * import { RtcNode } from "@baton-voice/baton/services"
 * import { RtcRoom, Worker } from "@baton-voice/baton/livekit"
 *
 * const worker = Effect.gen(function*() {
 *   const w = yield* Worker.make({ url: "wss://my.livekit.cloud", apiKey: "key", apiSecret: Redacted.make("secret"), job: { agent: greeter } })
 *   yield* w.registered
 *   return yield* Effect.never
 * }).pipe(Effect.scoped, Effect.provide(RtcRoom.layer), Effect.provide(RtcNode.layer))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("LiveKit.Worker")(function*(options: WorkerOptions) {
  const workerScope = yield* Scope.Scope
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  yield* Effect.addFinalizer(() => Effect.sync(() => lag.disable()))
  const ctx: Ctx = {
    options,
    agentName: options.agentName ?? "",
    maxJobs: options.maxJobs ?? 500,
    maxLagMs: options.maxLagMs ?? 100,
    state: State.make(),
    room: yield* Room,
    workerScope,
    // jobs live in their own Scope, closed after the drain (finalizers run last-added first)
    jobsScope: yield* Scope.fork(workerScope),
    lag,
    firstRegistration: yield* Deferred.make<void>()
  }
  yield* Effect.forkIn(reconnecting(ctx), workerScope)
  // Added last, so it runs first when the Scope closes: the connection is still up to say "full".
  yield* Effect.addFinalizer(() => drain(ctx))
  return {
    state: () => snapshot(ctx),
    registered: Deferred.await(ctx.firstRegistration)
  } satisfies Worker
})
