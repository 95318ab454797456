/**
 * The realtime benchmark's numbers: one run's times from T0, matched with the mock's frame
 * records, and the per-variant statistics (medians, ranges, the typical run).
 */
import { quantile } from "../stats.ts"
import type { ConnFrames } from "./mock.ts"
import { type Variant, VARIANTS } from "./options.ts"
import type { RunSample } from "./sample.ts"

export interface Analyzed extends RunSample {
  /** ready - T0: the first client frame the mock received for the new agent. */
  readonly handoffMs: number
  readonly firstAudioMs: number
  readonly toolToFirstAudioMs: number
  /** tool call -> T0. */
  readonly toolToHandoffMs: number
  /** T0 -> the mock receives the new agent's `response.create`. */
  readonly requestMs: number
  /** That `response.create` received -> the mock sends the first audio delta. */
  readonly serverMs: number
  /** The mock sends the first audio delta -> the framework's audio output has it. */
  readonly deliveryMs: number
  /** The frames on the new agent's connection from T0 to its first audio, relative to T0. */
  readonly timeline: ReadonlyArray<{ readonly at: number; readonly dir: "in" | "out" | "client"; readonly what: string }>
}

export const analyze = (sample: RunSample, conns: ReadonlyArray<ConnFrames>, newAgentPrefix: string): Analyzed => {
  const mine = conns.filter((c) => c.instructions.some((i) => i.includes(`[${sample.tag}]`)))
  // A connection opened for the new agent: its first instructions are the new agent's.
  const fresh = mine.find((c) => c.instructions[0]?.startsWith(newAgentPrefix))
  const conn = fresh ?? mine[0]
  if (!conn) throw new Error(`${sample.tag}: no mock connection found for the run`)
  const t0 = sample.tHandoff
  const firstIn = fresh ? conn.received[0] : conn.received.find((f) => f.at > t0)
  if (!firstIn) throw new Error(`${sample.tag}: the mock received nothing for the new agent`)
  const firstAudioOut = conn.sent.find((f) => f.at > t0 && f.type === "response.output_audio.delta")
  const request = conn.received.find((f) => f.at > t0 && f.type === "response.create")
  if (!firstAudioOut || !request) throw new Error(`${sample.tag}: no response.create / audio for the new agent on the mock`)
  const until = sample.tFirstAudio
  // From the tool call on (on the old connection too, when a fresh one was opened).
  const from = Math.min(sample.tTool, t0) - 1
  const rel = (t: number) => t - t0
  const frames = (c: ConnFrames, label: string) => [
    ...c.received.filter((f) => f.at > from && f.at <= until).map((f) => ({ at: rel(f.at), dir: "in" as const, what: label + f.type })),
    ...c.sent.filter((f) => f.at > from && f.at <= firstAudioOut.at).map((f) => ({ at: rel(f.at), dir: "out" as const, what: label + f.type }))
  ]
  const timeline: Array<Analyzed["timeline"][number]> = [
    ...frames(conn, fresh ? "(new socket) " : ""),
    ...mine.filter((c) => c !== conn).flatMap((c) => frames(c, "(old socket) ")),
    ...(sample.ops ?? []).filter((op) => op.at > sample.tTool - 1 && op.at <= until).map((op) => ({ at: rel(op.at), dir: "client" as const, what: `${op.conn}: ${op.op}` })),
    { at: rel(sample.tTool), dir: "client", what: "tool transfer_to_weather runs" },
    { at: 0, dir: "client", what: "agent_handoff (T0)" },
    { at: rel(sample.tFirstAudio), dir: "client", what: "first audio delivered to the audio output" }
  ]
  timeline.sort((a, b) => a.at - b.at)
  return {
    ...sample,
    handoffMs: firstIn.at - t0,
    firstAudioMs: sample.tFirstAudio - t0,
    toolToFirstAudioMs: sample.tFirstAudio - sample.tTool,
    toolToHandoffMs: t0 - sample.tTool,
    requestMs: request.at - t0,
    serverMs: firstAudioOut.at - request.at,
    deliveryMs: sample.tFirstAudio - firstAudioOut.at,
    timeline
  }
}

// ---- statistics -----------------------------------------------------------------------------------

const r1 = (x: number) => Math.round(x * 10) / 10

export interface Stat {
  readonly n: number
  readonly median: number | null
  readonly min: number | null
  readonly max: number | null
}
const stat = (xs: ReadonlyArray<number>): Stat => {
  const s = [...xs].sort((a, b) => a - b)
  const q = quantile(s, 0.5)
  return { n: s.length, median: q === null ? null : r1(q), min: s.length ? r1(s[0]!) : null, max: s.length ? r1(s.at(-1)!) : null }
}

export interface VariantResult {
  readonly variant: Variant
  readonly handoff: Stat
  readonly firstAudio: Stat
  readonly toolToFirstAudio: Stat
  readonly toolToHandoff: Stat
  readonly request: Stat
  readonly server: Stat
  readonly delivery: Stat
  /** The run whose first audio is the median one (its timeline goes in the report). */
  readonly typical: Analyzed | undefined
}

export const summarizeVariants = (runs: ReadonlyArray<Analyzed>): ReadonlyArray<VariantResult> =>
  VARIANTS.map((variant) => {
    const mine = runs.filter((r) => r.variant === variant.name && !r.warmup)
    const byAudio = [...mine].sort((a, b) => a.firstAudioMs - b.firstAudioMs)
    return {
      variant,
      handoff: stat(mine.map((r) => r.handoffMs)),
      firstAudio: stat(mine.map((r) => r.firstAudioMs)),
      toolToFirstAudio: stat(mine.map((r) => r.toolToFirstAudioMs)),
      toolToHandoff: stat(mine.map((r) => r.toolToHandoffMs)),
      request: stat(mine.map((r) => r.requestMs)),
      server: stat(mine.map((r) => r.serverMs)),
      delivery: stat(mine.map((r) => r.deliveryMs)),
      typical: byAudio[Math.floor((byAudio.length - 1) / 2)]
    }
  })
