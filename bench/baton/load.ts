/**
 * Many sessions in one process (issue 18): SESSIONS sessions (1,000) arrive evenly over SPREAD_S
 * seconds (10), each takes three turns back to back and stays open until all are done: a greeting, a handoff to B (whose onEnter
 * speaks), and a question B answers. Scripted models answer at once and record nothing, so what is
 * measured is baton itself: `run()` latency quantiles, event-loop lag (p99 and max: an audio frame
 * is 20 ms, and a longer block delays every session's audio) and the turns per second reached.
 * SATURATE=1 starts every session at once: turns per second at saturation, on one core.
 *
 * A long session (LONG_TURNS, 5,000 turns, one session): the cost of a turn near the start and
 * near the end, and the heap each turn adds, to show a turn's cost does not grow with the history.
 */
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks"
import { Effect, Exit, Fiber, Scope } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Handoff, Tool } from "../../src/index.ts"
import { envInt, gcNow, log, r3, type Summary, summarize } from "./stats.ts"

export interface LoadResult {
  readonly sessions: number
  readonly spreadS: number
  readonly turns: number
  readonly wallMs: number
  readonly turnsPerSecond: number
  readonly run: Summary & { readonly p99Ms: number | null }
  readonly lag: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number }
  /** V8's collections during the run: the long event-loop blocks are these pauses. */
  readonly gc: GcSummary
}

export interface GcSummary {
  readonly minor: { readonly count: number; readonly maxMs: number }
  readonly major: { readonly count: number; readonly maxMs: number }
  readonly totalMs: number
}

export interface LongSessionResult {
  readonly turns: number
  /** Medians of the 100 turns around the 100th turn, around the `midTurn`th (a fifth of the way,
   * once the JIT has optimized the path: the fair comparison for the last) and the last 100. */
  readonly earlyTurnMs: number | null
  readonly midTurn: number
  readonly midTurnMs: number | null
  readonly lateTurnMs: number | null
  readonly heapBytesPerTurn: number
}

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "hello", agent: "A" }, reply: { text: "Hello, this is A." } },
  { when: { user: "transfer", agent: "A" }, reply: { toolCalls: [{ name: "transfer" }] } },
  { when: { instructions: "greet", agent: "B" }, reply: { text: "B here, how can I help?" } },
  { when: { agent: "B" }, reply: { text: "B answers." } },
  { when: { agent: "A" }, reply: { text: "A answers." } }
]

const agents = () => {
  const b = Agent.make({ name: "B", instructions: "You are B", onEnter: Agent.reply({ instructions: "greet" }).pipe(Effect.asVoid) })
  const a = Agent.make({
    name: "A",
    instructions: "You are A",
    tools: [Tool.make("transfer", { description: "to B", handler: () => Effect.succeed(Handoff.to(b)) })]
  })
  return a
}

/** Watches V8's collections (Node's `gc` performance entries) until `stop` is called. */
const watchGc = () => {
  const minor = { count: 0, maxMs: 0 }
  const major = { count: 0, maxMs: 0 }
  let totalMs = 0
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { readonly detail?: { readonly kind?: number } }).detail?.kind
      // Incremental marking steps and weak callbacks are counted with the major collection.
      const into = kind === constants.NODE_PERFORMANCE_GC_MINOR ? minor : major
      into.count += kind === constants.NODE_PERFORMANCE_GC_MAJOR || into === minor ? 1 : 0
      into.maxMs = Math.max(into.maxMs, entry.duration)
      totalMs += entry.duration
    }
  })
  observer.observe({ entryTypes: ["gc"] })
  return (): GcSummary => {
    observer.disconnect()
    const round = (x: { count: number; maxMs: number }) => ({ count: x.count, maxMs: r3(x.maxMs) })
    return { minor: round(minor), major: round(major), totalMs: r3(totalMs) }
  }
}

const p99 = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((x, y) => x - y)
  return s.length === 0 ? null : r3(s[Math.min(s.length - 1, Math.ceil(s.length * 0.99) - 1)]!)
}

export const benchLoad: Effect.Effect<LoadResult, Error> = Effect.gen(function*() {
  const sessions = envInt("SESSIONS", 1000)
  const saturate = envInt("SATURATE", 0) === 1
  const spreadS = saturate ? 0 : envInt("SPREAD_S", 10)
  const model = ScriptedModel.layer(rules, { record: false })
  const runs: Array<number> = []
  const lag = monitorEventLoopDelay({ resolution: 1 })
  // Every session stays open until all have taken their turns (a process holding 1,000 calls).
  const scope = yield* Scope.make()
  const oneSession = (i: number) =>
    Effect.gen(function*() {
      if (spreadS > 0) yield* Effect.sleep((i * spreadS * 1000) / sessions)
      const session = yield* AgentSession.start({ agent: agents() }).pipe(Effect.provide(model), Scope.provide(scope))
      for (const text of ["hello", "transfer please", "what now?"]) {
        const t0 = performance.now()
        yield* session.run(text)
        runs.push(performance.now() - t0)
      }
    })
  yield* Effect.promise(() => gcNow())
  lag.enable()
  const stopGc = watchGc()
  const t0 = performance.now()
  const fibers = yield* Effect.forEach(Array.from({ length: sessions }, (_, i) => i), (i) => Effect.forkChild(oneSession(i)))
  yield* Fiber.joinAll(fibers)
  const wallMs = performance.now() - t0
  lag.disable()
  // The observer is called after the collections: let it see the last ones.
  yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
  const gc = stopGc()
  yield* Scope.close(scope, Exit.void)
  const run = summarize(runs, false)
  const out: LoadResult = {
    sessions,
    spreadS,
    turns: runs.length,
    wallMs: r3(wallMs),
    turnsPerSecond: Math.round(runs.length / (wallMs / 1000)),
    run: { ...run, p99Ms: p99(runs) },
    lag: { p50Ms: r3(lag.percentile(50) / 1e6), p99Ms: r3(lag.percentile(99) / 1e6), maxMs: r3(lag.max / 1e6) },
    gc
  }
  log(
    `load: ${sessions} sessions over ${spreadS} s, ${out.turnsPerSecond} turns/s; run() p50 ${run.medianMs} ms p99 ${out.run.p99Ms} ms; ` +
      `lag p99 ${out.lag.p99Ms} ms max ${out.lag.maxMs} ms; gc: ${gc.minor.count} minor (longest ${gc.minor.maxMs} ms), ` +
      `${gc.major.count} major (longest pause ${gc.major.maxMs} ms), ${gc.totalMs} ms in all`
  )
  return out
})

export const benchLongSession: Effect.Effect<LongSessionResult, Error> = Effect.scoped(Effect.gen(function*() {
  const turns = Math.max(300, envInt("LONG_TURNS", 5000))
  const session = yield* AgentSession.start({ agent: agents() }).pipe(Effect.provide(ScriptedModel.layer(rules, { record: false })))
  const times: Array<number> = []
  yield* Effect.promise(() => gcNow())
  const heap0 = process.memoryUsage().heapUsed
  for (let i = 0; i < turns; i++) {
    const t0 = performance.now()
    yield* session.run("what now?")
    times.push(performance.now() - t0)
  }
  yield* Effect.promise(() => gcNow())
  const heapBytesPerTurn = Math.round((process.memoryUsage().heapUsed - heap0) / turns)
  const out: LongSessionResult = {
    turns,
    earlyTurnMs: summarize(times.slice(50, 150), false).medianMs,
    midTurn: Math.round(turns / 5),
    midTurnMs: summarize(times.slice(Math.round(turns / 5) - 50, Math.round(turns / 5) + 50), false).medianMs,
    lateTurnMs: summarize(times.slice(-100), false).medianMs,
    heapBytesPerTurn
  }
  log(`long session: ${turns} turns; turn ~100: ${out.earlyTurnMs} ms, ~${out.midTurn}: ${out.midTurnMs} ms, last 100: ${out.lateTurnMs} ms; heap ${heapBytesPerTurn} B/turn`)
  return out
}))

/** Both, for bench/run.ts. */
export const benchMany = Effect.all({ load: benchLoad, longSession: benchLongSession })
export type ManyResult = { readonly load: LoadResult; readonly longSession: LongSessionResult }
