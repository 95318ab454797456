/**
 * The service's own metrics, next to the core's (src/observe/Metrics.ts): sessions held, upgrades
 * refused and why, frames received, and event-loop lag (an audio frame is 20 ms: a longer block
 * delays every session's audio). `/metrics` renders every registered metric as Prometheus text.
 */
import { monitorEventLoopDelay } from "node:perf_hooks"

type IntervalHistogram = ReturnType<typeof monitorEventLoopDelay>
import { Effect, Metric, type Scope } from "effect"

export const sessionsOpen = Metric.gauge("baton_server_sessions_open", { description: "WebSocket sessions open now" })
export const sessionsTotal = Metric.counter("baton_server_sessions_total", { description: "WebSocket sessions opened since start" })
export const refused = Metric.counter("baton_server_connections_refused_total", { description: "Upgrades refused, by reason" })
const frames = Metric.counter("baton_server_frames_in_total", { description: "Frames received from clients, by kind" })
export const eventLoopLag = Metric.gauge("baton_event_loop_lag_seconds", { description: "Event-loop delay over the last scrape interval, by quantile" })

let open = 0
export const sessionOpened = Effect.suspend(() => {
  open++
  return Effect.andThen(Metric.update(sessionsTotal, 1), Metric.update(sessionsOpen, open))
})
export const sessionClosed = Effect.suspend(() => {
  open = Math.max(0, open - 1)
  return Metric.update(sessionsOpen, open)
})
/** Why an upgrade was refused: no slot, the drain, no valid token, an origin not allowed, a late event loop. */
export type RefusalReason = "full" | "draining" | "unauthorized" | "origin" | "overloaded"
export const refuse = (reason: RefusalReason) =>
  Metric.update(Metric.withAttributes(refused, { reason }), 1)

/** Counted without an Effect per frame: frames are the hottest path of the service. */
const frameCounts = { text: 0, binary: 0 }
export const frameIn = (kind: "text" | "binary") => {
  frameCounts[kind]++
}

/** Event-loop delay sampling while the server runs. */
export const lagMonitor: Effect.Effect<IntervalHistogram, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const lag = monitorEventLoopDelay({ resolution: 5 })
    lag.enable()
    return lag
  }),
  (lag) => Effect.sync(() => lag.disable())
)

/** Brings the sampled values into the metrics just before a scrape. */
export const sample = (lag: IntervalHistogram) => Effect.gen(function*() {
  for (const kind of ["text", "binary"] as const) {
    if (frameCounts[kind] > 0) yield* Metric.update(Metric.withAttributes(frames, { kind }), frameCounts[kind])
    frameCounts[kind] = 0
  }
  yield* Metric.update(Metric.withAttributes(eventLoopLag, { quantile: "0.99" }), lag.percentile(99) / 1e9)
  yield* Metric.update(Metric.withAttributes(eventLoopLag, { quantile: "max" }), lag.max / 1e9)
  lag.reset()
})
