/**
 * Runs the service as a process: serves and prints where. When the process is asked to stop
 * (SIGTERM or SIGINT: `NodeRuntime.runMain` interrupts the main fiber), the drain runs before the
 * server closes: no new sessions, open ones may finish for `drainSeconds`, the rest get a `close`
 * event (with a durable store, /ws clients are told at once to reconnect elsewhere); then the
 * process exits 0. A second signal during the drain closes every session at once
 * (each gets its `close` event) and the process exits.
 */
import { Clock, Deferred, Effect, Option, type Scope } from "effect"
import { HttpServer } from "effect/http"
import { RealtimeModel } from "../services/RealtimeModel.ts"
import * as VoicePipeline from "../src/voice/VoicePipeline.ts"
import * as Config from "./Config.ts"
import type * as Registry from "./Registry.ts"
import * as Server from "./Server.ts"

/**
 * Signals this close after the first are the same request to stop: Ctrl-C under `npm start`
 * reaches the process twice within milliseconds (from the terminal, and forwarded by npm).
 */
export const sameSignalMs = 1000

/**
 * Calls `listener` on each stop signal until the returned function is called.
 *
 * @since 0.1.0
 * @category models
 */
export type SignalSource = (listener: () => void) => () => void

/** SIGINT and SIGTERM of this process. */
export const processSignals: SignalSource = (listener) => {
  process.on("SIGINT", listener)
  process.on("SIGTERM", listener)
  return () => {
    process.off("SIGINT", listener)
    process.off("SIGTERM", listener)
  }
}

/**
 * Completes when a stop signal arrives `sameSignalMs` or more after the first one: the request
 * not to wait. Listens for as long as the Scope is open.
 */
export const secondSignal = (signals: SignalSource): Effect.Effect<Deferred.Deferred<void>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const urgent = yield* Deferred.make<void>()
    const clock = yield* Clock.Clock
    let first: number | undefined
    const onSignal = () => {
      const now = clock.currentTimeMillisUnsafe()
      if (first === undefined) first = now
      else if (now - first >= sameSignalMs) Deferred.doneUnsafe(urgent, Effect.void)
    }
    yield* Effect.acquireRelease(Effect.sync(() => signals(onSignal)), (stop) => Effect.sync(stop))
    return urgent
  })

/**
 * The drain: open sessions may finish for `drainSeconds`, unless `urgent` completes first, which
 * closes them all at once. With `move` (a durable store holds the sessions), /ws clients are told
 * at once to reconnect (they resume on another node) and only what cannot move (a phone line)
 * has the wait.
 */
export const drain = (registry: Registry.Registry, drainSeconds: number, urgent: Deferred.Deferred<void>, move = false) =>
  Effect.gen(function*() {
    const before = registry.open()
    yield* Effect.log(`stopping: draining ${before} session(s), up to ${drainSeconds} s (signal again to close them now)`)
    const waited = yield* Effect.raceFirst(
      registry.drain(drainSeconds * 1000, undefined, { move }).pipe(Effect.map(Option.some)),
      Deferred.await(urgent).pipe(Effect.as(Option.none()))
    )
    const { finished, closed, moved } = Option.isSome(waited) ? waited.value : yield* Effect.gen(function*() {
      yield* Effect.log(`second signal: closing ${registry.open()} session(s) now`)
      const { closed } = yield* registry.drain(0)
      return { finished: before - closed, closed, moved: 0 }
    })
    yield* Effect.log(`drained: ${finished} finished, ${closed} closed${moved > 0 ? `, ${moved} moved to another node` : ""}`)
  })

/**
 * Serves `options.agent` until a signal: logs the banner (address, access, model, voice mode),
 * then on SIGINT or SIGTERM drains the open sessions for `drainSeconds` before closing (a second
 * signal closes them at once). Needs the model and voice layers the agents use.
 *
 * @example
 * ```ts
 * import { Effect, Layer, Option } from "effect"
 * import { NodeRuntime, NodeServices } from "@effect/platform-node"
 * import { Config, run } from "@baton-voice/baton/node"
 * import { OpenAiChat } from "@baton-voice/baton/openai"
 *
 * run({ ...Config.defaults, agent: greeter }).pipe(
 *   Effect.provide(Layer.mergeAll(OpenAiChat.layerConfigFetch, NodeServices.layer)),
 *   NodeRuntime.runMain
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = (options: Server.ServeOptions, signals: SignalSource = processSignals) =>
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const { registry } = yield* Server.ServerState
    const url = HttpServer.formatAddress(server.address)
    for (const line of Server.banner(url, options)) yield* Effect.log(line)
    if (options.modelDescription) yield* Effect.log(`  ${options.modelDescription}`)
    if (options.modelPhrases) yield* Effect.log(`  Try: ${options.modelPhrases.map((phrase) => `"${phrase}"`).join(" · ")}`)
    const voice = yield* VoicePipeline.engines
    const realtime = yield* Effect.serviceOption(RealtimeModel)
    yield* Effect.log(
      Option.isSome(realtime)
        ? "  Voice: the realtime model's own audio."
        : Option.isSome(voice)
        ? "  Voice: the cascaded pipeline (VAD, speech to text, text to speech)."
        : "  Voice: off (text only)."
    )
    // listening from the start, so that the first signal (which interrupts this fiber) is counted
    const urgent = yield* secondSignal(signals)
    yield* Effect.addFinalizer(() => drain(registry, options.drainSeconds, urgent, Config.storeIsDurable(options)))
    return yield* Effect.never
  }).pipe(Effect.scoped, Effect.provide(Server.layer(options)))
