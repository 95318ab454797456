/**
 * Runs the service as a process: serves and prints where. When the process is asked to stop
 * (SIGTERM or SIGINT: `NodeRuntime.runMain` interrupts the main fiber), the drain runs before the
 * server closes: no new sessions, open ones may finish for `drainSeconds`, the rest get a `close`
 * event; then the process exits 0.
 */
import { Effect, Option } from "effect"
import { RealtimeModel } from "../services/RealtimeModel.ts"
import * as VoicePipeline from "../src/voice/VoicePipeline.ts"
import { HttpServer } from "effect/http"
import * as Server from "./Server.ts"

export const run = (options: Server.ServeOptions) =>
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const { registry } = yield* Server.ServerState
    const url = HttpServer.formatAddress(server.address)
    for (const line of Server.banner(url, options)) yield* Effect.log(line)
    if (options.modelDescription) yield* Effect.log(`  ${options.modelDescription}`)
    const voice = yield* VoicePipeline.engines
    const realtime = yield* Effect.serviceOption(RealtimeModel)
    yield* Effect.log(
      Option.isSome(realtime)
        ? "  voice: the realtime model's own audio"
        : Option.isSome(voice)
        ? "  voice: the cascaded pipeline (VAD, speech to text, text to speech)"
        : "  voice: off (text only)"
    )
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Effect.log(`stopping: draining ${registry.open()} session(s), up to ${options.drainSeconds} s`)
        const { finished, closed } = yield* registry.drain(options.drainSeconds * 1000)
        yield* Effect.log(`drained: ${finished} finished, ${closed} closed`)
      })
    )
    return yield* Effect.never
  }).pipe(Effect.scoped, Effect.provide(Server.layer(options)))
