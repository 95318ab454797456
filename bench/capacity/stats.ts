/** What one step of the capacity bench reports, for either framework. */
export interface StepResult {
  readonly framework: "baton" | "agents-js"
  readonly vad: string
  readonly calls: number
  /** Processes the calls ran in (1 for baton, one job process per call for agents-js). */
  readonly processes: number
  /** CPU seconds per second of the window, all of the framework's processes together. */
  readonly cpuCores: number
  /** Resident memory of the framework's processes, mean over the window (MB). */
  readonly rssMb: number
  /** What each call adds (baton: over the process before its calls; agents-js: a job process's own). */
  readonly rssPerCallMb: number
  /** Event-loop delay p99 and max (ms; agents-js: the worst of its processes). */
  readonly lagP99Ms: number
  readonly lagMaxMs: number
  /** Replies heard to questions that ended in the window, and how many questions there were. */
  readonly turns: number
  readonly turnsExpected: number
  readonly latencyP50Ms: number | null
  readonly latencyP99Ms: number | null
  readonly underruns: number
}

/** Linear-interpolation quantile of a sorted array. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number | null => {
  if (sorted.length === 0) return null
  const h = (sorted.length - 1) * p
  const lo = Math.floor(h)
  const hi = Math.ceil(h)
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!)
}
