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
 *   the worker reconnects with exponential backoff and registers again. A connection that went
 *   silent without a close is found by WebSocket pings (`liveness`) and counts as gone.
 * - Drain (the Scope closing, SIGTERM in `baton worker`): no new jobs, the status says full,
 *   running jobs may finish for `drainSeconds`, then the rest are closed and the worker leaves.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Deferred, Effect, Exit, Fiber, Queue, Redacted, Scope } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import WebSocket from "ws"
import { defaultLiveness, type Liveness, watch } from "../shared/Liveness.ts"
import * as Job from "./Job.ts"
import * as Protocol from "./Protocol.ts"
import { Room } from "./Room.ts"

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
  /** Problems with what the server sent (malformed frames, assignments refused), most recent last. */
  readonly problems: ReadonlyArray<string>
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
  const room = yield* Room
  const workerScope = yield* Scope.Scope
  const maxJobs = options.maxJobs ?? 500
  const maxLagMs = options.maxLagMs ?? 100
  const agentName = options.agentName ?? ""
  const jobs = new Map<string, Fiber.Fiber<void>>()
  const problems: Array<string> = []
  const firstRegistration = yield* Deferred.make<void>()
  let socket: WebSocket | undefined
  let workerId: string | undefined
  let registrations = 0
  let accepted = 0
  let refused = 0
  let draining = false
  let pingMs: number | undefined

  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  yield* Effect.addFinalizer(() => Effect.sync(() => lag.disable()))
  const lagMs = () => (lag.count === 0 ? 0 : lag.percentile(99) / 1e6)
  const load = () => Math.min(1, Math.max(jobs.size / maxJobs, lagMs() / maxLagMs))
  const full = () => draining || jobs.size >= maxJobs || lagMs() >= maxLagMs

  const send = (bytes: Uint8Array) => Effect.sync(() => {
    if (socket?.readyState === WebSocket.OPEN) socket.send(bytes)
  })
  const sendStatus = Effect.suspend(() => send(Protocol.workerStatus(full(), load(), jobs.size)))
  /** The periodic status: then the lag histogram starts over, so load is about the last interval. */
  const statusTick = Effect.andThen(sendStatus, Effect.sync(() => lag.reset()))

  /** Jobs this worker said it would take, by id, and when: only these may be assigned (for a minute). */
  const awaiting = new Map<string, number>()
  /** Why an assignment is not started, or undefined when it is one this worker accepted. */
  const assignmentRefusal = (jobId: string): string | undefined => {
    const acceptedAt = awaiting.get(jobId)
    awaiting.delete(jobId)
    for (const [id, at] of awaiting) if (Date.now() - at > 60_000) awaiting.delete(id)
    if (draining) return `the worker is draining: job ${jobId} is not started`
    if (jobs.has(jobId)) return `job ${jobId} is already running here`
    if (acceptedAt === undefined) return `an assignment for job ${jobId}, which this worker did not accept`
    return undefined
  }
  /** Never started: the server hears it failed (UpdateJobStatus JS_FAILED with the reason), unless
   * it is a second assignment of a job running here (that job's status stays its own). */
  const refuseAssignment = (jobId: string, reason: string) =>
    Effect.gen(function*() {
      const running = jobs.has(jobId)
      if (running) reason = `a second assignment of job ${jobId}, already running here`
      problems.push(reason)
      yield* Effect.logWarning(`livekit worker: refused ${reason}`)
      if (!running) yield* send(Protocol.jobStatus(jobId, Protocol.JobStatus.JS_FAILED, reason))
    })

  // Jobs live in their own Scope, closed after the drain (finalizers run last-added first).
  const jobsScope = yield* Scope.fork(workerScope)

  const startJob = (spec: Job.JobSpec) =>
    Effect.gen(function*() {
      const job = spec
      const fiber = yield* Job.run(spec, options.job).pipe(
        Effect.scoped,
        Effect.provideService(Room, room),
        // also when the job is interrupted (terminated, drained): the server hears how it ended
        Effect.onExit((exit) =>
          Effect.suspend(() => {
            jobs.delete(job.id)
            const failed = Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)
            return send(Protocol.jobStatus(job.id, failed ? Protocol.JobStatus.JS_FAILED : Protocol.JobStatus.JS_SUCCESS, failed ? "the job failed" : "")).pipe(
              Effect.andThen(sendStatus)
            )
          })
        ),
        Effect.ignore,
        Effect.forkIn(jobsScope)
      )
      jobs.set(job.id, fiber)
      yield* send(Protocol.jobStatus(job.id, Protocol.JobStatus.JS_RUNNING))
      yield* sendStatus
    })

  const handle = (frame: Uint8Array) =>
    Effect.gen(function*() {
      const decoded = Protocol.decode(frame)
      if (typeof decoded === "string") {
        problems.push(decoded)
        return yield* Effect.logWarning(`livekit worker: ignored ${decoded}`)
      }
      const msg = decoded.message
      switch (msg.case) {
        case "register":
          workerId = msg.value.workerId
          registrations++
          yield* Deferred.succeed(firstRegistration, undefined)
          return yield* Effect.logInfo(`livekit worker registered as ${workerId}`)
        case "availability": {
          const job = msg.value.job
          if (!job) return
          const ok = !full()
          if (ok) {
            accepted++
            awaiting.set(job.id, Date.now())
          } else refused++
          return yield* send(Protocol.availability(job.id, ok, agentName))
        }
        case "assignment": {
          const job = msg.value.job
          if (!job) return
          const refusal = assignmentRefusal(job.id)
          if (refusal !== undefined) return yield* refuseAssignment(job.id, refusal)
          return yield* startJob({ id: job.id, roomName: job.room?.name ?? "", url: msg.value.url || options.url, token: Redacted.make(msg.value.token) })
        }
        case "pong":
          pingMs = Date.now() - Number(msg.value.lastTimestamp)
          return
        case "termination": {
          const fiber = jobs.get(msg.value.jobId)
          if (fiber) yield* Effect.forkIn(Fiber.interrupt(fiber), workerScope)
          return
        }
        default:
          return
      }
    })

  /** One connection: register, serve until the socket closes (then fail, so the loop reconnects). */
  const connection = Effect.gen(function*() {
    const token = yield* Protocol.workerToken(options.apiKey, options.apiSecret)
    const ws = yield* Effect.acquireRelease(
      Effect.sync(() => new WebSocket(Protocol.agentUrl(options.url), { headers: { Authorization: `Bearer ${Redacted.value(token)}` } })),
      (ws) => Effect.sync(() => ws.terminate())
    )
    const closed = yield* Deferred.make<string>()
    // frames are handled in order, in this connection's Scope
    const inbox = yield* Queue.unbounded<Uint8Array>()
    yield* Effect.forkScoped(Effect.forever(Queue.take(inbox).pipe(Effect.flatMap(handle))))
    ws.on("message", (data: Buffer) => void Queue.offerUnsafe(inbox, new Uint8Array(data.buffer, data.byteOffset, data.byteLength)))
    ws.on("close", (code: number) => Deferred.doneUnsafe(closed, Effect.succeed(`closed (${code})`)))
    ws.on("error", (e: Error) => Deferred.doneUnsafe(closed, Effect.succeed(e.message)))
    yield* Effect.callback<void, string>((resume) => {
      ws.once("open", () => resume(Effect.void))
      ws.once("error", (e: Error) => resume(Effect.fail(e.message)))
    })
    socket = ws
    watch(ws, options.liveness ?? defaultLiveness)
    yield* send(Protocol.register(agentName))
    yield* Effect.forkScoped(Effect.forever(Effect.sleep(options.statusIntervalMs ?? 2500).pipe(Effect.andThen(statusTick))))
    yield* Effect.forkScoped(
      Effect.forever(Effect.sleep(options.pingIntervalMs ?? 10_000).pipe(Effect.andThen(Effect.suspend(() => send(Protocol.ping(Date.now()))))))
    )
    const why = yield* Deferred.await(closed)
    socket = undefined
    return yield* Effect.fail(why)
  }).pipe(Effect.scoped)

  const reconnecting = Effect.gen(function*() {
    const first = options.reconnect?.firstMs ?? 500
    const cap = options.reconnect?.maxMs ?? 30_000
    let wait = first
    for (;;) {
      const before = registrations
      const why = yield* Effect.flip(connection)
      if (registrations > before) wait = first // it worked for a while: start the backoff again
      yield* Effect.logWarning(`livekit worker: connection to ${options.url} lost (${why}); reconnecting in ${wait} ms`)
      yield* Effect.sleep(wait)
      wait = Math.min(cap, wait * 2)
    }
  })
  yield* Effect.forkIn(reconnecting, workerScope)
  // Added last, so it runs first when the Scope closes: the connection is still up to say "full".
  yield* Effect.addFinalizer(() => drain)

  const drain = Effect.gen(function*() {
    draining = true
    yield* sendStatus
    const deadline = (options.drainSeconds ?? 30) * 1000
    if (jobs.size > 0) yield* Effect.logInfo(`livekit worker draining: ${jobs.size} job(s), up to ${deadline / 1000} s`)
    yield* Effect.forEach([...jobs.values()], Fiber.await, { discard: true, concurrency: "unbounded" }).pipe(
      Effect.timeoutOption(deadline)
    )
  })

  return {
    state: () => ({
      workerId,
      connected: socket !== undefined,
      registrations,
      jobs: jobs.size,
      accepted,
      refused,
      draining,
      load: load(),
      pingMs,
      problems
    }),
    registered: Deferred.await(firstRegistration)
  } satisfies Worker
})

