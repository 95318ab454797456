/**
 * Settings of the realtime handoff benchmark (bench/realtime.ts): the four variants, the options
 * (from RT_* environment variables) and the one clock shared by every process of the run.
 */

export type ContextMode = "full" | "none"
export type ConnectionMode = "reuse" | "fresh"

export interface Variant {
  readonly name: string
  readonly connection: ConnectionMode
  readonly context: ContextMode
}

export const VARIANTS: ReadonlyArray<Variant> = [
  { name: "reuse + context copied", connection: "reuse", context: "full" },
  { name: "reuse + context empty", connection: "reuse", context: "none" },
  { name: "fresh + context copied", connection: "fresh", context: "full" },
  { name: "fresh + context empty", connection: "fresh", context: "none" }
]

export interface RealtimeBenchOptions {
  readonly reps: number
  readonly warmup: number
  readonly turns: number
  readonly connectMs: number
  readonly roundTripMs: number
  readonly firstAudioMs: number
  /** Also run the agents-js side (default true). */
  readonly peer: boolean
}

const envInt = (name: string, dflt: number): number => {
  const v = process.env[name]
  if (v === undefined || v === "") return dflt
  const n = Number(v)
  if (!Number.isFinite(n) || n < 0) throw new Error(`env ${name}=${v} is not a non-negative number`)
  return Math.floor(n)
}

export const optionsFromEnv = (overrides: Partial<RealtimeBenchOptions> = {}): RealtimeBenchOptions => ({
  reps: Math.max(1, envInt("RT_REPS", 10)),
  warmup: envInt("RT_WARMUP", 1),
  turns: envInt("RT_TURNS", 10),
  connectMs: envInt("RT_CONNECT_MS", 300),
  roundTripMs: envInt("RT_RTT_MS", 50),
  firstAudioMs: envInt("RT_FIRST_AUDIO_MS", 100),
  peer: true,
  ...overrides
})

/** One clock for this process, the child process and the mock's records. */
export const abs = (): number => performance.timeOrigin + performance.now()

export const log = (...parts: ReadonlyArray<unknown>) => console.error("[realtime bench]", ...parts)
