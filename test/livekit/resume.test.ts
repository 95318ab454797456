/**
 * Issue 34 in LiveKit: a worker journals each room's session under (room, agent name); when its
 * process dies and LiveKit dispatches the room again (to another worker), the new job resumes
 * that session from the store (the agent holding the floor keeps it, the conversation goes on)
 * instead of starting over. Against the fake dispatch server (real WebSocket, protobuf) with
 * rooms in memory. A process dying is a store that stops taking its writes: nothing it does
 * after reaches the store, as nothing a killed process does would.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import * as Job from "../../layers/livekit/Job.ts"
import type { Room } from "../../layers/livekit/Room.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { makeMemory, type SessionStoreService, StoreError } from "../../services/SessionStore.ts"
import { until } from "../helpers.ts"
import * as FakeServer from "../mocks/livekit/FakeServer.ts"
import * as MemoryRoom from "../mocks/livekit/MemoryRoom.ts"
import { greeter, KEY, SECRET, startWorker, weather } from "./front-desk.ts"

const model = ScriptedModel.layer([
  { when: { user: /weather/, agent: "greeter" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { user: /Oslo/, agent: "weather" }, reply: { text: "Cloudy in Oslo." } },
  { when: { user: /Oslo/, agent: "greeter" }, reply: { text: "Greeter here, starting over." } }
])

/** `store` as a process sees it until `die()`: from then on every write of that process fails. */
const dying = (store: SessionStoreService) => {
  let dead = false
  const gone = <A>(operation: StoreError["operation"], effect: Effect.Effect<A, any>) =>
    Effect.suspend(() => (dead ? Effect.fail(new StoreError({ operation, message: "the process is dead" })) : effect))
  const service: SessionStoreService = {
    ...store,
    create: (options) => gone("create", store.create(options)),
    claim: (id, owner) => gone("claim", store.claim(id, owner)),
    append: (claim, entries) => gone("append", store.append(claim, entries)),
    end: (claim) => gone("end", store.end(claim))
  }
  return { service, die: () => void (dead = true) }
}

/** A registered front-desk worker journaling its rooms' sessions in `store`. */
const startDurableWorker = (server: FakeServer.FakeServer, rooms: Layer.Layer<Room>, store: SessionStoreService) =>
  startWorker(server, rooms, { job: { agent: greeter, durable: { store, agents: [greeter, weather] } } }).pipe(
    Effect.tap(({ worker }) => worker.registered)
  )

const said = (room: MemoryRoom.MemoryRoomState, text: string) => room.texts.some((t) => t.topic === "lk.transcription" && t.text === text)

describe("LiveKit: a room's session outlives its worker (issue 34)", () => {
  it.live("a job dispatched again for the same room after its worker died resumes the room's session: the weather agent answers, nothing starts over", () =>
    Effect.gen(function*() {
      const store = makeMemory()
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const first = dying(store)
      const one = yield* startDurableWorker(server, rooms.layer, first.service)
      yield* Effect.promise(() => server.offer("J_1", "room-a"))
      yield* Effect.promise(() => server.assign("J_1", "room-a"))
      yield* until("room-a joined", () => rooms.rooms.get("room-a")?.joined === true)
      yield* rooms.rooms.get("room-a")!.chat("what's the weather?")
      yield* until("the weather agent's words", () => said(rooms.rooms.get("room-a")!, "Sunny in Paris."))
      const key = Job.sessionKey({ roomName: "room-a", agentName: "front-desk" })
      const stored = Option.getOrThrow(yield* store.findByKey(key))
      yield* until("the handoff journaled", () => JSON.stringify(Effect.runSync(store.load(stored.id))).includes("Sunny in Paris."))

      // the worker's process dies: nothing more of it reaches the store
      first.die()
      yield* Scope.close(one.scope, Exit.void)

      const two = yield* startDurableWorker(server, rooms.layer, store)
      yield* Effect.promise(() => server.offer("J_2", "room-a"))
      yield* Effect.promise(() => server.assign("J_2", "room-a"))
      yield* until("room-a joined again", () => rooms.rooms.get("room-a")?.joined === true)
      const room = rooms.rooms.get("room-a")!
      yield* room.chat("and in Oslo?")
      yield* until("the answer", () => said(room, "Cloudy in Oslo.") || said(room, "Greeter here, starting over."))
      assert.isTrue(said(room, "Cloudy in Oslo."), JSON.stringify(room.texts))
      assert.strictEqual(room.texts.find((t) => t.text === "Cloudy in Oslo.")?.attributes?.["lk.agent"], "weather")
      assert.isFalse(said(room, "Greeter here, starting over."))
      const sessions = yield* store.list()
      assert.deepStrictEqual(sessions.map((s) => [s.id, s.key]), [[stored.id, key]], "the same session, not a new one")

      // another room starts its own session
      yield* Effect.promise(() => server.offer("J_3", "room-b"))
      yield* Effect.promise(() => server.assign("J_3", "room-b"))
      yield* until("room-b joined", () => rooms.rooms.get("room-b")?.joined === true)
      yield* rooms.rooms.get("room-b")!.chat("Oslo?")
      yield* until("room-b's greeter", () => said(rooms.rooms.get("room-b")!, "Greeter here, starting over."))
      yield* Scope.close(two.scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)

  it.live("a room whose user left ended its session: the next job for it starts over", () =>
    Effect.gen(function*() {
      const store = makeMemory()
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const { scope } = yield* startDurableWorker(server, rooms.layer, store)
      yield* Effect.promise(() => server.offer("J_1", "room-a"))
      yield* Effect.promise(() => server.assign("J_1", "room-a"))
      yield* until("room-a joined", () => rooms.rooms.get("room-a")?.joined === true)
      yield* rooms.rooms.get("room-a")!.chat("what's the weather?")
      yield* until("the weather agent's words", () => said(rooms.rooms.get("room-a")!, "Sunny in Paris."))
      yield* rooms.rooms.get("room-a")!.leave
      const key = Job.sessionKey({ roomName: "room-a", agentName: "front-desk" })
      yield* until("the session ended in the store", () => Option.isNone(Effect.runSync(store.findByKey(key))))

      yield* Effect.promise(() => server.offer("J_2", "room-a"))
      yield* Effect.promise(() => server.assign("J_2", "room-a"))
      yield* until("room-a joined again", () => rooms.rooms.get("room-a")?.joined === true)
      const room = rooms.rooms.get("room-a")!
      yield* room.chat("Oslo?")
      yield* until("the greeter's answer", () => said(room, "Greeter here, starting over."))
      assert.lengthOf(yield* store.list(), 2)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(model)), 30_000)
})
