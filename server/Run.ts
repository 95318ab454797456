/**
 * Runs the service as a process: serves and prints where. When the process is asked to stop
 * (SIGTERM or SIGINT: `NodeRuntime.runMain` interrupts the main fiber), the drain runs before the
 * server closes: no new sessions, open ones may finish for `drainSeconds`, the rest get a `close`
 * event; then the process exits 0.
 */
import { Effect } from "effect"
import { HttpServer } from "effect/http"
import * as Server from "./Server.ts"

export const run = (options: Server.ServeOptions) =>
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const { registry } = yield* Server.ServerState
    const url = HttpServer.formatAddress(server.address)
    for (const line of Server.banner(url, options)) yield* Effect.log(line)
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Effect.log(`stopping: draining ${registry.open()} session(s), up to ${options.drainSeconds} s`)
        const { finished, closed } = yield* registry.drain(options.drainSeconds * 1000)
        yield* Effect.log(`drained: ${finished} finished, ${closed} closed`)
      })
    )
    return yield* Effect.never
  }).pipe(Effect.scoped, Effect.provide(Server.layer(options)))
