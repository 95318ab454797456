/**
 * Issue 38 item 1, the worker's state as a record: the reconnect backoff is a Schedule on the
 * Clock (a TestClock drives it: the delays grow, are capped, and start over after a connection
 * that registered), the problems it keeps are bounded, and no listener outlives a connection on
 * the sockets it made (Effect's socket, made by the context's `Socket.WebSocketConstructor`).
 * Against the fake dispatch server: real WebSockets on 127.0.0.1.
 */
import { WebSocket as NodeWebSocket } from "@effect/platform-node/NodeWS"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Layer, Queue, Redacted, Scope } from "effect"
import * as Socket from "effect/socket/Socket"
import { TestClock } from "effect/testing"
import type { Room } from "../../layers/livekit/Room.ts"
import * as Worker from "../../layers/livekit/Worker.ts"
import * as WorkerState from "../../layers/livekit/WorkerState.ts"
import { PROBLEMS_KEPT } from "../../layers/livekit/WorkerState.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent } from "../../src/index.ts"
import * as FakeServer from "../mocks/livekit/FakeServer.ts"
import * as MemoryRoom from "../mocks/livekit/MemoryRoom.ts"
import { until } from "../helpers.ts"

const KEY = "APIkey123"
const SECRET = "secret-of-at-least-thirty-two-characters"
const agent = Agent.make({ name: "desk", instructions: "Help." })
const model = ScriptedModel.layer([])

const startWorker = (server: FakeServer.FakeServer, rooms: Layer.Layer<Room>, extra: Partial<Worker.WorkerOptions> = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const worker = yield* Worker.make({ url: server.url, apiKey: KEY, apiSecret: Redacted.make(SECRET), job: { agent }, ...extra }).pipe(
      Scope.provide(scope),
      Effect.provide(rooms)
    )
    return { worker, scope }
  })

/** The worker waiting out its backoff after failure `attempt`: the delay it chose, on the Clock. */
const waitingDelay = (worker: Worker.Worker, attempt: number) =>
  Effect.gen(function*() {
    yield* until(`waiting after failure ${attempt}`, () => worker.state().waiting?.attempt === attempt)
    return worker.state().waiting!.until - (yield* Clock.currentTimeMillis)
  })

describe("LiveKit worker state: transitions", () => {
  it("issue 38: Closed is final, an answer without an open socket registers nothing, and only an open connection has an outbox", () =>
    Effect.runSync(Effect.gen(function*() {
      const state = WorkerState.make()
      const outbox = yield* Queue.unbounded<Uint8Array>()
      WorkerState.registered(state, "W_0", 1) // no socket yet: not a registration
      assert.strictEqual(state.registrations, 0)
      assert.isUndefined(WorkerState.outbox(state))
      WorkerState.opened(state, outbox)
      WorkerState.registered(state, "W_1", 5)
      assert.deepInclude(state.connection, { _tag: "Registered", workerId: "W_1", since: 5 })
      assert.strictEqual(WorkerState.outbox(state), outbox)
      WorkerState.waiting(state, 1, 900, "closed (1006)")
      assert.isUndefined(WorkerState.outbox(state), "a lost connection takes no frames")
      assert.strictEqual(state.workerId, "W_1", "the last id is kept while reconnecting")
      WorkerState.closed(state)
      WorkerState.connecting(state, 2)
      WorkerState.waiting(state, 2, 1000, "late")
      assert.strictEqual(state.connection._tag, "Closed")
    })))

  it("issue 38: an accepted job may be assigned for a minute of the Clock, and never while draining", () => {
    const state = WorkerState.make()
    WorkerState.answered(state, "J_1", true, 0)
    WorkerState.answered(state, "J_2", true, 0)
    WorkerState.answered(state, "J_3", false, 0)
    assert.deepStrictEqual([state.accepted, state.refused], [2, 1])
    assert.isUndefined(WorkerState.assignmentRefusal(state, "J_1", 59_000))
    assert.match(WorkerState.assignmentRefusal(state, "J_3", 59_000)!, /did not accept/)
    assert.match(WorkerState.assignmentRefusal(state, "J_2", 61_000)!, /more than a minute after/)
    WorkerState.answered(state, "J_4", true, 61_000)
    WorkerState.startDrain(state, 62_000)
    assert.match(WorkerState.assignmentRefusal(state, "J_4", 62_000)!, /draining/)
  })
})

describe("LiveKit worker: state, backoff, problems, sockets", () => {
  it.effect("issue 38: the reconnect backoff runs on the Clock: delays grow ×2 (jittered ±20%), are capped, and start over after a connection that registered", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const { worker, scope } = yield* startWorker(server, rooms.layer, { reconnect: { firstMs: 1000, maxMs: 4000 } })
      yield* until("registered", () => worker.state().registrations === 1)

      // the server goes away for a while: each attempt is refused, and the next waits longer
      const restarted = server.restart(1500)
      const delays: Array<number> = []
      for (let attempt = 1; attempt <= 4; attempt++) {
        const delay = yield* waitingDelay(worker, attempt)
        delays.push(delay)
        if (attempt < 4) {
          yield* TestClock.adjust(delay)
          yield* until(`attempt ${attempt + 1}`, () => worker.state().waiting?.attempt !== attempt)
        }
      }
      const [d1, d2, d3, d4] = delays as [number, number, number, number]
      assert.isTrue(d1 >= 800 && d1 <= 1200, `first delay ${d1}`)
      assert.isTrue(d2 >= 1600 && d2 <= 2400, `second delay ${d2}`)
      assert.isTrue(d3 >= 3200 && d3 <= 4000, `third delay ${d3} (capped at 4000)`)
      assert.isTrue(d4 >= 3200 && d4 <= 4000, `fourth delay ${d4}: capped, where ×2 would be 8000`)
      assert.strictEqual(worker.state().registrations, 1, "nothing connects before the Clock moves")

      // the server is back: the next attempt, when the Clock reaches it, registers
      yield* Effect.promise(() => restarted)
      yield* TestClock.adjust(d4)
      yield* until("registered again", () => worker.state().registrations === 2)
      assert.strictEqual(worker.state().connection, "Registered")

      // lost again: the backoff started over (a first delay, not a fifth)
      yield* Effect.promise(() => server.restart(50))
      const again = yield* waitingDelay(worker, 1)
      assert.isTrue(again >= 800 && again <= 1200, `delay after a registered connection ${again}`)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(worker.state().connection, "Closed")
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live(`issue 38: problems are bounded: the last ${PROBLEMS_KEPT}, most recent last, and a count of the older ones`, () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const { worker, scope } = yield* startWorker(server, rooms.layer)
      yield* worker.registered
      for (let i = 0; i < PROBLEMS_KEPT + 5; i++) server.sendRaw(new Uint8Array([0xff, 0xff, 0xff, i]))
      yield* until("every frame seen", () => worker.state().problems.length + worker.state().olderProblems === PROBLEMS_KEPT + 5)
      assert.lengthOf(worker.state().problems, PROBLEMS_KEPT)
      assert.strictEqual(worker.state().olderProblems, 5)
      assert.match(worker.state().problems.at(-1)!, /malformed/)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("issue 38: no listener is left on a socket once its connection is over (lost, half-open, or the worker closed)", () =>
    Effect.gen(function*() {
      const made: Array<NodeWebSocket> = []
      const recording = Layer.succeed(Socket.WebSocketConstructor)((url, options) => {
        const headers = typeof options === "object" && !Array.isArray(options) ? options.headers : undefined
        const ws = new NodeWebSocket(url, { headers })
        made.push(ws)
        return ws
      })
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const { worker, scope } = yield* startWorker(server, rooms.layer, {
        reconnect: { firstMs: 20, maxMs: 50 },
        // a pong a second late is a silent server, not a loaded machine's (a live one is never taken for dead)
        liveness: { interval: "100 millis", timeout: "1 second" }
      }).pipe(Effect.provide(recording))
      yield* worker.registered
      yield* Effect.promise(() => server.restart(50)) // lost: closed by the server
      yield* until("registered again", () => worker.state().registrations === 2)
      server.silence() // half-open: found by the pings
      yield* until("registered a third time", () => worker.state().registrations === 3)
      yield* Scope.close(scope, Exit.void) // the worker leaves
      assert.isAtLeast(made.length, 3)
      yield* until("every socket closed", () => made.every((ws) => ws.readyState === NodeWebSocket.CLOSED))
      for (const [i, ws] of made.entries()) {
        for (const event of ["message", "close", "open", "pong", "ping"] as const) {
          assert.strictEqual(ws.listenerCount(event), 0, `socket ${i + 1}: ${event} listeners`)
        }
        // Effect's socket leaves one no-op 'error' listener, so that a late error of a handshake
        // it aborted is not an uncaught 'error' event
        assert.isAtMost(ws.listenerCount("error"), 1, `socket ${i + 1}: error listeners`)
      }
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)
})
