/**
 * What the worker and resume tests share: the fake dispatch server's credentials, the front
 * desk's agents (a greeter that hands off to a weather agent, which says "Sunny in Paris." as it
 * enters) and a worker for them on the fake server.
 */
import { Effect, type Layer, Redacted, Scope } from "effect"
import type { Room } from "../../layers/livekit/Room.ts"
import * as Worker from "../../layers/livekit/Worker.ts"
import { Agent, Tool } from "../../src/index.ts"
import type * as FakeServer from "../mocks/livekit/FakeServer.ts"

export const KEY = "APIkey123"
export const SECRET = "secret-of-at-least-thirty-two-characters"

export const weather = Agent.make({ name: "weather", instructions: "Weather.", onEnter: Agent.say("Sunny in Paris.").pipe(Effect.asVoid) })
export const greeter = Agent.make({ name: "greeter", instructions: "Greet.", tools: [Tool.handoff("transfer_to_weather", () => weather)] })

/** A front-desk worker on the fake server, in its own Scope (closing it drains the worker). */
export const startWorker = (server: FakeServer.FakeServer, rooms: Layer.Layer<Room>, extra: Partial<Worker.WorkerOptions> = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const worker = yield* Worker.make({
      url: server.url,
      apiKey: KEY,
      apiSecret: Redacted.make(SECRET),
      agentName: "front-desk",
      statusIntervalMs: 100,
      pingIntervalMs: 100,
      reconnect: { firstMs: 50, maxMs: 200 },
      drainSeconds: 1,
      // The lag that makes the worker refuse jobs (100 ms by default) is out of reach unless a test
      // sets it: on a loaded machine the loop is often that late, and an offer would be declined.
      maxLagMs: 10_000,
      job: { agent: greeter },
      ...extra
    }).pipe(Scope.provide(scope), Effect.provide(rooms))
    return { worker, scope }
  })
