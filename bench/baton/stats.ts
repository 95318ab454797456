/**
 * Numbers shared by the baton benchmarks, computed exactly as bench/agents-js/bench.mjs does:
 * linear-interpolation quantiles (numpy default), times rounded to 1 µs.
 */
import { Effect } from "effect"

export interface Summary {
  readonly n: number
  readonly medianMs: number | null
  readonly p90Ms: number | null
  readonly minMs: number | null
  readonly maxMs: number | null
  readonly samples?: ReadonlyArray<number>
}

/** Linear-interpolation quantile of a sorted array: q(0.5) is the usual median. */
export const quantile = (sorted: ReadonlyArray<number>, p: number): number | null => {
  if (sorted.length === 0) return null
  const h = (sorted.length - 1) * p
  const lo = Math.floor(h)
  const hi = Math.ceil(h)
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!)
}

export const r3 = (x: number): number => Math.round(x * 1000) / 1000
const r3n = (x: number | null | undefined) => (x === null || x === undefined ? null : r3(x))

export const summarize = (xs: ReadonlyArray<number>, samples = process.env.SAMPLES !== "0"): Summary => {
  const s = [...xs].sort((a, b) => a - b)
  return {
    n: s.length,
    medianMs: r3n(quantile(s, 0.5)),
    p90Ms: r3n(quantile(s, 0.9)),
    minMs: r3n(s[0]),
    maxMs: r3n(s[s.length - 1]),
    ...(samples ? { samples: xs.map(r3) } : {})
  }
}

/** The same env knobs (and defaults) as the agents-js script. */
export const envInt = (name: string, dflt: number): number => {
  const v = process.env[name]
  if (v === undefined || v === "") return dflt
  const n = Number(v)
  if (!Number.isFinite(n) || n < 0) throw new Error(`env ${name}=${v} is not a non-negative number`)
  return Math.floor(n)
}

/** `gc()` three times, yielding between calls (as the agents-js script does). */
export const gcNow = async (): Promise<boolean> => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (typeof gc !== "function") return false
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
  }
  return true
}

export const log = (...parts: ReadonlyArray<unknown>) => console.error("[baton bench]", ...parts)

/** A bench child's whole job: collect, run `bench`, print its result as one JSON line on stdout
 * (what bench/run.ts and bench/baton/rounds.ts read), exit. */
export const printResultOf = async <A>(bench: Effect.Effect<A, Error>): Promise<never> => {
  await gcNow()
  const result = await Effect.runPromise(bench)
  return new Promise<never>(() => process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0)))
}
