/**
 * The worker against a fake LiveKit dispatch server (real WebSocket on 127.0.0.1, protobuf
 * messages, the token checked with livekit-server-sdk's TokenVerifier): registration, the
 * availability policy, assignment and termination, status updates, a server restart mid-job,
 * malformed frames, and the drain. Rooms are in memory (MemoryRoom): a user who types (or presses keys).
 */
import { JobStatus, JobType, WorkerStatus } from "@livekit/protocol"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Redacted, Scope } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as FakeServer from "../mocks/livekit/FakeServer.ts"
import { KEY, SECRET, startWorker } from "./front-desk.ts"
import * as MemoryRoom from "../mocks/livekit/MemoryRoom.ts"
import { until } from "../helpers.ts"

const model = ScriptedModel.layer([
  { when: { user: /weather/ }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { user: "DTMF: 12" }, reply: { text: "Account 12, found." } }
])


const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** A registered worker running job J_1, its room joined. */
const runningJob = Effect.gen(function*() {
  const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
  const rooms = yield* MemoryRoom.make
  const { worker, scope } = yield* startWorker(server, rooms.layer)
  yield* worker.registered
  yield* promise(() => server.offer("J_1"))
  yield* promise(() => server.assign("J_1"))
  yield* until("the room joined", () => rooms.rooms.get("room-J_1")?.joined === true)
  return { server, worker, scope, rooms, room: rooms.rooms.get("room-J_1")! }
})

describe("LiveKit worker (fake dispatch server)", () => {
  it.live("registers, takes a job, runs its session in the room (a handoff), reports status, and ends it on termination", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const { worker, scope } = yield* startWorker(server, rooms.layer)
      yield* worker.registered
      const register = server.received[0]!
      assert.strictEqual(register.case, "register")
      assert.strictEqual(register.value.agentName, "front-desk")
      assert.strictEqual(register.value.type, JobType.JT_ROOM)
      assert.isTrue(register.value.allowedPermissions.canPublish && register.value.allowedPermissions.canSubscribe)
      assert.strictEqual(worker.state().workerId, "W_1")

      const answer = yield* promise(() => server.offer("J_1"))
      assert.isTrue(answer.value.available)
      assert.strictEqual(answer.value.participantIdentity, "agent-J_1")
      yield* promise(() => server.assign("J_1"))
      yield* promise(() => server.waitFor((m) => m.case === "updateJob" && m.value.jobId === "J_1" && m.value.status === JobStatus.JS_RUNNING, "JS_RUNNING"))
      yield* until("the room joined", () => rooms.rooms.get("room-J_1")?.joined === true)
      const room = rooms.rooms.get("room-J_1")!
      yield* room.chat("what's the weather?")
      yield* until("the weather agent's words in the room", () => room.texts.some((t) => t.topic === "lk.transcription" && t.text === "Sunny in Paris."))
      assert.strictEqual(room.texts.find((t) => t.text === "Sunny in Paris.")?.attributes?.["lk.agent"], "weather")
      assert.strictEqual(room.attributes["lk.agent.name"], "weather")
      // the status carries the job; pings are answered
      yield* promise(() => server.waitFor((m) => m.case === "updateWorker" && m.value.jobCount === 1 && m.value.load > 0, "a status with the job"))
      yield* promise(() => server.waitFor((m) => m.case === "ping", "a ping"))
      yield* until("a pong's round trip", () => worker.state().pingMs !== undefined)

      server.terminate("J_1")
      yield* promise(() => server.waitFor((m) => m.case === "updateJob" && m.value.jobId === "J_1" && m.value.status === JobStatus.JS_SUCCESS, "JS_SUCCESS"))
      yield* until("the room left", () => !room.joined)
      assert.strictEqual(worker.state().jobs, 0)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("a SIP caller's keypad presses up to # are one turn for the agent", () =>
    Effect.gen(function*() {
      const { scope, room } = yield* runningJob
      for (const digit of "12#") yield* room.press(digit)
      yield* until("the answer to the keys in the room", () => room.texts.some((t) => t.topic === "lk.transcription" && t.text === "Account 12, found."))
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("a token without the right secret is refused by the server; the worker keeps trying and never registers", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const { worker, scope } = yield* startWorker(server, rooms.layer, { apiSecret: Redacted.make("the-wrong-secret-of-thirty-two-chars!!") })
      yield* until("two refused connections", () => server.refusedTokens.length >= 2)
      assert.isUndefined(worker.state().workerId)
      assert.lengthOf(server.received, 0)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("over its job limit it answers unavailable; malformed frames are ignored and reported", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const { worker, scope } = yield* startWorker(server, rooms.layer, { maxJobs: 1 })
      yield* worker.registered
      server.sendRaw(new Uint8Array([0xff, 0xff, 0xff, 0x01, 0x02]))
      const first = yield* promise(() => server.offer("J_1"))
      assert.isTrue(first.value.available)
      yield* promise(() => server.assign("J_1"))
      yield* until("the job running", () => worker.state().jobs === 1)
      const second = yield* promise(() => server.offer("J_2"))
      assert.isFalse(second.value.available)
      assert.strictEqual(worker.state().refused, 1)
      yield* promise(() => server.waitFor((m) => m.case === "updateWorker" && m.value.status === WorkerStatus.WS_FULL, "WS_FULL"))
      assert.lengthOf(worker.state().problems, 1)
      assert.match(worker.state().problems[0]!, /malformed/)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("the connection to the server goes half-open (silent, no close): the pings find it, the worker reconnects and registers again", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      // a pong a second late is a silent server, not a loaded machine's (a live one is never taken for dead)
      const { worker, scope } = yield* startWorker(server, rooms.layer, { liveness: { interval: "100 millis", timeout: "1 second" } })
      yield* worker.registered
      server.silence()
      yield* until("a second registration", () => worker.state().registrations === 2)
      assert.strictEqual(worker.state().workerId, "W_2")
      // the new connection serves jobs
      const offer = yield* promise(() => server.offer("J_1"))
      assert.isTrue(offer.value.available)
      assert.strictEqual(offer.connection, 2)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("the server restarts mid-job: the job goes on, the worker registers again and is told to end it", () =>
    Effect.gen(function*() {
      const { server, worker, scope, room } = yield* runningJob
      yield* promise(() => server.restart(300))
      yield* until("a second registration", () => worker.state().registrations === 2)
      assert.strictEqual(worker.state().workerId, "W_2")
      // the job never stopped: the user talks and is answered
      assert.isTrue(room.joined)
      yield* room.chat("weather please")
      yield* until("the answer", () => room.texts.some((t) => t.text === "Sunny in Paris."))
      server.terminate("J_1")
      yield* until("the job ended", () => worker.state().jobs === 0 && !room.joined)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("issue 33 item 4: an assignment for a job the worker did not accept is refused (JS_FAILED with the reason), never started", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const { worker, scope } = yield* startWorker(server, rooms.layer)
      yield* worker.registered
      yield* promise(() => server.assign("J_9")) // never offered, never accepted
      const status = yield* promise(() => server.waitFor((m) => m.case === "updateJob" && m.value.jobId === "J_9", "a status for J_9"))
      assert.strictEqual(status.value.status, JobStatus.JS_FAILED)
      assert.match(status.value.error, /did not accept/)
      assert.isUndefined(rooms.rooms.get("room-J_9"))
      assert.strictEqual(worker.state().jobs, 0)
      assert.match(worker.state().problems.at(-1)!, /J_9/)
      // an accepted one still runs
      yield* promise(() => server.offer("J_1"))
      yield* promise(() => server.assign("J_1"))
      yield* until("the room joined", () => rooms.rooms.get("room-J_1")?.joined === true)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("issue 33 item 4: an assignment arriving while the worker drains is refused (JS_FAILED), never started, even for a job it accepted", () =>
    Effect.gen(function*() {
      const { server, worker, scope, rooms } = yield* runningJob
      const answer = yield* promise(() => server.offer("J_2"))
      assert.isTrue(answer.value.available)
      // J_1 keeps the drain waiting (up to drainSeconds) while J_2's assignment arrives
      const closing = yield* Effect.forkDetach(Scope.close(scope, Exit.void))
      yield* until("draining", () => worker.state().draining)
      yield* promise(() => server.assign("J_2"))
      const status = yield* promise(() => server.waitFor((m) => m.case === "updateJob" && m.value.jobId === "J_2", "a status for J_2"))
      assert.strictEqual(status.value.status, JobStatus.JS_FAILED)
      assert.match(status.value.error, /draining/)
      assert.isFalse(server.received.some((m) => m.case === "updateJob" && m.value.jobId === "J_2" && m.value.status === JobStatus.JS_RUNNING))
      assert.isUndefined(rooms.rooms.get("room-J_2"))
      yield* Fiber.join(closing)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("drain: closing the worker says it is full, lets a job finish within the deadline, then closes it", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const { worker, scope } = yield* startWorker(server, rooms.layer, { drainSeconds: 0.3 })
      yield* worker.registered
      yield* promise(() => server.offer("J_1"))
      yield* promise(() => server.assign("J_1"))
      yield* until("the room joined", () => rooms.rooms.get("room-J_1")?.joined === true)
      const started = Date.now()
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(worker.state().draining)
      assert.isFalse(rooms.rooms.get("room-J_1")!.joined)
      assert.isAtLeast(Date.now() - started, 250) // it waited for the job before closing it
      assert.isTrue(server.received.some((m) => m.case === "updateWorker" && m.value.status === WorkerStatus.WS_FULL))
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)
})
