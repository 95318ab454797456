/**
 * Runs the service as a process: serves, prints where, and on SIGTERM or SIGINT drains (stops
 * admitting, lets sessions finish up to `drainSeconds`, closes the rest with a `close` event),
 * then returns, so the process exits 0.
 */
import { Deferred, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import * as Server from "./Server.ts"

const onSignal = (signals: ReadonlyArray<NodeJS.Signals>) =>
  Effect.gen(function*() {
    const got = yield* Deferred.make<NodeJS.Signals>()
    const handler = (signal: NodeJS.Signals) => Deferred.doneUnsafe(got, Effect.succeed(signal))
    yield* Effect.acquireRelease(
      Effect.sync(() => signals.forEach((s) => process.on(s, handler))),
      () => Effect.sync(() => signals.forEach((s) => process.off(s, handler)))
    )
    return Deferred.await(got)
  })

export const run = (options: Server.ServeOptions) =>
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const { registry } = yield* Server.ServerState
    const url = HttpServer.formatAddress(server.address)
    for (const line of Server.banner(url, options)) yield* Effect.log(line)
    const signal = yield* (yield* onSignal(["SIGTERM", "SIGINT"]))
    yield* Effect.log(`${signal}: draining ${registry.open()} session(s), up to ${options.drainSeconds} s`)
    const { finished, closed } = yield* registry.drain(options.drainSeconds * 1000)
    yield* Effect.log(`drained: ${finished} finished, ${closed} closed; bye`)
  }).pipe(Effect.scoped, Effect.provide(Server.layer(options).pipe(Layer.orDie)))
