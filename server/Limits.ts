/**
 * What one client may ask of the service, and when the service takes no one new.
 *
 * - Turns per connection: each typed turn is a model call (paid, with a real model), so a
 *   connection may have `maxPendingTurns` turns the agents have not taken yet, and send
 *   `turnsPerSecond` of them (as many at once): a person sends a few a second at most. A turn
 *   beyond either is dropped with an `error` frame that says which limit it met.
 * - Event-loop lag: every session's audio runs on one event loop, so while it is late by more than
 *   `maxLagMs` new `/ws` and `/twilio` sessions are refused (503), as the LiveKit worker reports
 *   itself unavailable. A heartbeat timer measures how late it fires; the lag is the worst delay
 *   of the last quarter to half second, or the time the loop has been blocked now, the larger.
 *   A crowd connecting at once is admitted until the loop has been blocked that long, then
 *   refused: 300 clients from another process at 100 ms: 114 in, 186 refused, the loop's worst
 *   delay 195 ms (392 ms letting all in); see the commit for the run.
 */
import { Clock, Effect, type Scope } from "effect"
import type { SessionEvent } from "../src/index.ts"

export interface TurnLimits {
  /** Turns sent and not yet taken by an agent (held while it runs tools, a hook holds input...). */
  readonly maxPendingTurns: number
  /** Turns a second, and as many at once. */
  readonly turnsPerSecond: number
}

export type TurnVerdict = "ok" | "queue full" | "too fast"

export interface TurnGate {
  /** Whether a new turn may go to the session now; an accepted one counts as pending. */
  readonly offer: Effect.Effect<TurnVerdict>
  /** The session's events tell when a turn was taken (a user item) or none is left (listening). */
  readonly observe: (event: SessionEvent) => void
  readonly pending: () => number
}

/** A token bucket for the rate and a count of the turns not yet taken, for one connection. */
export const turnGate = (limits: TurnLimits): Effect.Effect<TurnGate> =>
  Effect.gen(function*() {
    const capacity = Math.max(1, limits.turnsPerSecond)
    let tokens = capacity
    let refilledAt = yield* Clock.currentTimeMillis
    let pending = 0
    return {
      offer: Effect.map(Clock.currentTimeMillis, (now) => {
        tokens = Math.min(capacity, tokens + ((now - refilledAt) / 1000) * limits.turnsPerSecond)
        refilledAt = now
        if (pending >= limits.maxPendingTurns) return "queue full"
        if (tokens < 1) return "too fast"
        tokens -= 1
        pending++
        return "ok"
      }),
      observe: (event) => {
        if (event.type === "conversation_item_added" && event.item._tag === "Message" && event.item.role === "user") {
          pending = Math.max(0, pending - 1)
        } else if (event.type === "agent_state_changed" && event.state === "listening") {
          pending = 0
        }
      },
      pending: () => pending
    }
  })

/** The `error` frame's words for a dropped turn. */
export const turnRefusal = (verdict: Exclude<TurnVerdict, "ok">, limits: TurnLimits): string =>
  verdict === "queue full"
    ? `${limits.maxPendingTurns} turns are already waiting for the agent: this one is dropped (BATON_MAX_PENDING_TURNS)`
    : `more than ${limits.turnsPerSecond} turns a second: this one is dropped (BATON_TURNS_PER_S)`

/** Why a call is refused at `BATON_MAX_SESSIONS`: a new one (503 before its upgrade) and one
 * that would be restored from the store (a resume, or a phone stream's `start`) alike. */
export const sessionLimitReason = (maxSessions: number): string => `the service holds ${maxSessions} sessions, its limit`

/** Why a call is refused while the service drains. */
export const drainingReason = "the service is shutting down"

/** Why a new session is refused at this lag (milliseconds), or undefined; `maxLagMs` 0: never. */
export const lagRefusal = (lagMs: number, maxLagMs: number): string | undefined =>
  maxLagMs > 0 && lagMs > maxLagMs
    ? `the service is overloaded: its event loop is ${Math.round(lagMs)} ms late (over ${maxLagMs} ms); try again shortly`
    : undefined

/**
 * The heartbeat's arithmetic, apart from timers: `tick(now)` when the heartbeat fires, `lagAt(now)`
 * the lag to judge by. Delays are kept per window of `windowMs`, the last full one and the current.
 * It counts from the first tick: the work of starting the service is no session's delay.
 */
export const lagEstimator = (intervalMs: number, windowMs: number, startMs: number) => {
  let lastTick: number | undefined
  let windowStart = startMs
  let current = 0
  let previous = 0
  const rotate = (now: number) => {
    if (now - windowStart < windowMs) return
    previous = now - windowStart < 2 * windowMs ? current : 0
    current = 0
    windowStart = now
  }
  return {
    tick: (now: number) => {
      rotate(now)
      if (lastTick !== undefined) current = Math.max(current, now - lastTick - intervalMs)
      lastTick = now
    },
    lagAt: (now: number) => {
      rotate(now)
      return Math.max(previous, current, lastTick === undefined ? 0 : now - lastTick - intervalMs)
    }
  }
}

/** The event-loop lag now (milliseconds), from a heartbeat that runs while the Scope is open. */
export const lagWatch = (intervalMs = 20, windowMs = 250): Effect.Effect<() => number, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => {
        const estimator = lagEstimator(intervalMs, windowMs, performance.now())
        const timer = setInterval(() => estimator.tick(performance.now()), intervalMs)
        timer.unref()
        return { estimator, timer }
      }),
      ({ timer }) => Effect.sync(() => clearInterval(timer))
    ),
    ({ estimator }) => () => estimator.lagAt(performance.now())
  )
