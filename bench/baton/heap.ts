/**
 * Memory of idle sessions: IDLE_SESSIONS sessions (each with its own scripted model and agent)
 * started one after another in this process and left open, no turn. gc() before and after;
 * per session = delta / count. Then every session is closed concurrently (closeAllMs), and
 * baton's live counts (Diagnostics) must be back where they were.
 */
import { Effect, Exit, Scope } from "effect"
import { AgentSession } from "../../src/index.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"
import { startIdle } from "./lifecycle.ts"
import { envInt, gcNow, log, r3 } from "./stats.ts"

export interface HeapResult {
  readonly sessions: number
  readonly heapBytesPerSession: number
  readonly rssBytesPerSession: number
  readonly externalBytesPerSession: number
  readonly startAllMs: number
  readonly closeAllMs: number
  readonly closeMode: "concurrent"
  readonly gc: boolean
  readonly heapUsedBefore: number
  readonly heapUsedAfter: number
  readonly heapUsedAfterClose: number
  readonly rssBefore: number
  readonly rssAfter: number
  /** Diagnostics.snapshot() while all sessions were open. */
  readonly liveWhileOpen: Diagnostics.Counts
}

export const benchHeap: Effect.Effect<HeapResult, Error> = Effect.gen(function*() {
  const count = envInt("IDLE_SESSIONS", 1000)
  const baseline = Diagnostics.snapshot()
  const gc = yield* Effect.promise(gcNow)
  if (!gc) log("WARNING: no gc() available; heap numbers are unreliable (run with node --expose-gc)")
  const before = process.memoryUsage()

  const scope = yield* Scope.make()
  const sessions: Array<AgentSession.AgentSession> = []
  const t0 = performance.now()
  for (let i = 0; i < count; i++) {
    const { session } = yield* startIdle.pipe(Scope.provide(scope))
    sessions.push(session)
  }
  const startAllMs = performance.now() - t0
  yield* Effect.promise(gcNow)
  const after = process.memoryUsage()
  const liveWhileOpen = Diagnostics.snapshot()

  const tc = performance.now()
  yield* Effect.forEach(sessions, (session) => session.close, { concurrency: "unbounded", discard: true })
  const closeAllMs = performance.now() - tc
  yield* Scope.close(scope, Exit.void)
  sessions.length = 0
  const left = Diagnostics.snapshot()
  if (JSON.stringify(left) !== JSON.stringify(baseline)) {
    return yield* Effect.fail(new Error(`live counts after closing: ${JSON.stringify(left)}, before: ${JSON.stringify(baseline)}`))
  }
  yield* Effect.promise(gcNow)
  const afterClose = process.memoryUsage()

  const per = (k: "heapUsed" | "rss" | "external") => Math.round((after[k] - before[k]) / count)
  const out: HeapResult = {
    sessions: count,
    heapBytesPerSession: per("heapUsed"),
    rssBytesPerSession: per("rss"),
    externalBytesPerSession: per("external"),
    startAllMs: r3(startAllMs),
    closeAllMs: r3(closeAllMs),
    closeMode: "concurrent",
    gc,
    heapUsedBefore: before.heapUsed,
    heapUsedAfter: after.heapUsed,
    heapUsedAfterClose: afterClose.heapUsed,
    rssBefore: before.rss,
    rssAfter: after.rss,
    liveWhileOpen
  }
  const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`
  log(
    `idleHeap: ${count} sessions, ${kib(out.heapBytesPerSession)} heap/session, ${kib(out.rssBytesPerSession)} rss/session, started in ${startAllMs.toFixed(0)} ms, closed all in ${closeAllMs.toFixed(0)} ms`
  )
  return out
})
