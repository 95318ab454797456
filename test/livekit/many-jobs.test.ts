/**
 * Many jobs in one process: 200 jobs dispatched by the fake server run side by side in one
 * worker, each a session in its own room with a handoff; all are answered, and when the server
 * ends them nothing is left (sessions, actors, scopes and fibers back to where they were).
 */
import { JobStatus } from "@livekit/protocol"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as Worker from "../../layers/livekit/Worker.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, Tool } from "../../src/index.ts"
import * as FakeServer from "../mocks/livekit/FakeServer.ts"
import * as MemoryRoom from "../mocks/livekit/MemoryRoom.ts"
import { until } from "../helpers.ts"

const KEY = "APIkey123"
const SECRET = "secret-of-at-least-thirty-two-characters"
const JOBS = 200

const weather = Agent.make({ name: "weather", instructions: "Weather.", onEnter: Agent.say("Sunny in Paris.").pipe(Effect.asVoid) })
const greeter = Agent.make({ name: "greeter", instructions: "Greet.", tools: [Tool.handoff("transfer_to_weather", () => weather)] })
const model = ScriptedModel.layer([{ when: { user: /weather/ }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } }], { record: false })


describe("LiveKit worker, many jobs in one process", () => {
  it.live(`${JOBS} concurrent jobs, each with a handoff, in one worker; nothing left after`, () =>
    Effect.gen(function*() {
      const before = Diagnostics.snapshot()
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const rooms = yield* MemoryRoom.make
      const scope = yield* Scope.make()
      const worker = yield* Worker.make({
        url: server.url,
        apiKey: KEY,
        apiSecret: Redacted.make(SECRET),
        maxJobs: 1000,
        maxLagMs: 10_000,
        job: { agent: greeter }
      }).pipe(Scope.provide(scope), Effect.provide(rooms.layer))
      yield* worker.registered
      const ids = Array.from({ length: JOBS }, (_, i) => `J_${i}`)
      yield* Effect.promise(() => Promise.all(ids.map((id) => server.offer(id).then(() => server.assign(id)))))
      yield* until(`${JOBS} jobs running`, () => worker.state().jobs === JOBS && ids.every((id) => rooms.rooms.get(`room-${id}`)?.joined))
      // a room is joined a moment before its session starts
      yield* until(`${JOBS} sessions`, () => Diagnostics.snapshot().sessions - before.sessions === JOBS)
      yield* Effect.forEach(ids, (id) => rooms.rooms.get(`room-${id}`)!.chat("weather please"), { discard: true })
      yield* until("every room answered by the weather agent", () =>
        ids.every((id) => rooms.rooms.get(`room-${id}`)!.texts.some((t) => t.text === "Sunny in Paris.")))
      for (const id of ids) server.terminate(id)
      yield* until("every job ended", () => worker.state().jobs === 0)
      // each end is reported to the server (the last ones may still be on the wire)
      const ended = () => server.received.filter((m) => m.case === "updateJob" && m.value.status === JobStatus.JS_SUCCESS).length
      yield* until(`${JOBS} job ends reported`, () => ended() === JOBS)
      assert.strictEqual(ended(), JOBS)
      yield* Scope.close(scope, Exit.void)
      const after = Diagnostics.snapshot()
      for (const key of ["sessions", "actors", "scopes", "fibers"] as const) assert.strictEqual(after[key], before[key], key)
    }).pipe(Effect.scoped, Effect.provide(model)), 60_000)
})
