/**
 * The realtime benchmark's result and its Markdown report (header, tables, target line, the
 * typical run's frame timeline per variant).
 */
import type { Analyzed, Stat, VariantResult } from "./analysis.ts"
import type { RealtimeBenchOptions } from "./options.ts"
import type { PeerOutcome } from "./peer.ts"

export interface RealtimeBenchResult {
  readonly machine: {
    readonly cpuModel: string
    readonly cores: number
    readonly node: string
    readonly platform: string
    readonly date: string
    /** 1-minute load average at the start and at the end (the machine may be shared). */
    readonly load: readonly [number, number]
    /** Clock skew of the mock process (subtracted from its frame times), and the pipe round trip. */
    readonly mockClock: { readonly skewMs: number; readonly pipeRttMs: number }
  }
  readonly options: RealtimeBenchOptions
  readonly targetMs: number
  readonly baton: ReadonlyArray<VariantResult>
  readonly agentsJs: PeerOutcome | { readonly skipped: string }
  /** The whole report (header, table, target line, timelines). */
  readonly markdown: string
}

const fmt = (s: Stat | undefined) => (s?.median === null || s === undefined ? "–" : s.median.toFixed(1))
const range = (s: Stat | undefined) => (s?.median === null || s === undefined ? "–" : `${s.min!.toFixed(1)}–${s.max!.toFixed(1)}`)

const timelineText = (run: Analyzed): string => {
  // Frames of one kind less than 3 ms apart are shown once (×n, with the time of the last), even
  // when frames of another kind interleave; item acknowledgements (added/done/deleted) are one kind.
  const kind = (e: Analyzed["timeline"][number]) =>
    e.dir === "out" && /^conversation\.item\.(added|done|deleted)$/.test(e.what) && !run.timeline.some((x) => x.dir === "out" && x.what === "response.created" && x.at < e.at)
      ? "conversation.item acknowledgements (added/done/deleted)"
      : e.what.replace(/^(\w+): send /, "$1: ")
  const groups: Array<{ at: number; last: number; dir: string; what: string; count: number }> = []
  for (const e of run.timeline) {
    const what = kind(e)
    const g = groups.slice(-6).find((x) => x.dir === e.dir && x.what === what && e.at - x.last < 3)
    if (g) {
      g.count++
      g.last = e.at
    } else groups.push({ at: e.at, last: e.at, dir: e.dir, what, count: 1 })
  }
  const dirText: Record<string, string> = { in: "mock <- client", out: "mock -> client", client: "client        " }
  const ms = (x: number) => `${x >= 0 ? "+" : "-"}${Math.abs(x).toFixed(1)}`
  return groups
    .map((g) =>
      `${ms(g.at).padStart(7)} ms  ${dirText[g.dir]}  ${g.what}${g.count > 1 ? ` ×${g.count} (to ${ms(g.last)})` : ""}`
    )
    .join("\n")
}

export const render = (r: Omit<RealtimeBenchResult, "markdown">): string => {
  const o = r.options
  const peer = "ok" in r.agentsJs && r.agentsJs.ok ? r.agentsJs.results : undefined
  const peerReason = "skipped" in r.agentsJs ? r.agentsJs.skipped : r.agentsJs.ok ? undefined : r.agentsJs.reason
  const lines: Array<string> = []
  lines.push(`## Realtime handoff (seed 001): ${o.turns} turns, then a handoff`)
  lines.push("")
  lines.push(
    `${r.machine.cpuModel}, ${r.machine.cores} cores, ${r.machine.platform}, Node ${r.machine.node}, ${r.machine.date}, ` +
      `load average ${r.machine.load[0].toFixed(2)} at the start, ${r.machine.load[1].toFixed(2)} at the end. ` +
      `The mock runs in a process of its own (clock skew ${r.machine.mockClock.skewMs.toFixed(3)} ms, corrected). ` +
      `OpenAI Realtime GA mock on 127.0.0.1: connect ${o.connectMs} ms, round trip ${o.roundTripMs} ms, first audio ${o.firstAudioMs} ms ` +
      `after response.created. Medians of ${o.reps} runs per variant (after ${o.warmup} warm-up), in ms.` +
      (peer ? ` agents-js: ${String((r.agentsJs as { meta: Record<string, unknown> }).meta.agents ?? "")}.` : "")
  )
  lines.push("")
  lines.push("| variant | baton handoff | baton first audio | agents-js handoff | agents-js first audio |")
  lines.push("|---|---:|---:|---:|---:|")
  r.baton.forEach((b, i) => {
    const p = peer?.[i]
    lines.push(`| ${b.variant.name} | ${fmt(b.handoff)} | ${fmt(b.firstAudio)} | ${p ? fmt(p.handoff) : "–"} | ${p ? fmt(p.firstAudio) : "–"} |`)
  })
  lines.push("")
  const reuse = r.baton.filter((b) => b.variant.connection === "reuse")
  const met = reuse.every((b) => b.firstAudio.median !== null && b.firstAudio.median <= r.targetMs)
  lines.push(
    `Target (reuse): first audio <= (${o.roundTripMs} + ${o.firstAudioMs}) ms + 10% = **${r.targetMs.toFixed(0)} ms**: ` +
      `baton ${reuse.map((b) => `${fmt(b.firstAudio)}`).join(" / ")} ms -> **${met ? "met" : "missed"}**` +
      (peer
        ? `; agents-js ${peer.filter((p) => p.variant.connection === "reuse").map((p) => fmt(p.firstAudio)).join(" / ")} ms.`
        : ".")
  )
  if (peerReason) lines.push(`\nagents-js columns empty: ${peerReason}`)
  lines.push("")
  lines.push("handoff = T0 -> the first client frame the mock receives for the new agent (reused connection: first frame after T0; fresh: first frame on the new socket). first audio = T0 -> the new agent's first audio frame handed to the framework's audio output. T0 = the `agent_handoff` event.")
  lines.push("")
  lines.push("Ranges (min–max) and tool call -> first audio (median):")
  lines.push("")
  lines.push("| variant | baton handoff | baton first audio | baton tool -> audio | agents-js handoff | agents-js first audio | agents-js tool -> audio |")
  lines.push("|---|---:|---:|---:|---:|---:|---:|")
  r.baton.forEach((b, i) => {
    const p = peer?.[i]
    lines.push(
      `| ${b.variant.name} | ${range(b.handoff)} | ${range(b.firstAudio)} | ${fmt(b.toolToFirstAudio)} | ${range(p?.handoff)} | ${range(p?.firstAudio)} | ${fmt(p?.toolToFirstAudio)} |`
    )
  })
  lines.push("")
  lines.push(
    "Where the time goes (medians): tool call -> T0; T0 -> the mock receives the new agent's `response.create` (what the framework waits for before it asks for the reply); that request -> the mock's first audio delta (round trip + first-audio delay + the mock's timer slack); that delta -> the framework's audio output."
  )
  lines.push("")
  lines.push("| variant | side | tool -> T0 | T0 -> response.create | response.create -> audio sent | audio sent -> delivered | T0 -> first audio |")
  lines.push("|---|---|---:|---:|---:|---:|---:|")
  r.baton.forEach((b, i) => {
    for (const [side, v] of [["baton", b], ["agents-js", peer?.[i]]] as const) {
      if (!v) continue
      lines.push(`| ${b.variant.name} | ${side} | ${fmt(v.toolToHandoff)} | ${fmt(v.request)} | ${fmt(v.server)} | ${fmt(v.delivery)} | ${fmt(v.firstAudio)} |`)
    }
  })
  for (const [side, results] of [["baton", r.baton], ["agents-js", peer]] as const) {
    if (!results) continue
    lines.push("")
    lines.push(`### ${side}: what the handoff waits for (the median run of each variant, times from T0)`)
    for (const v of results) {
      if (!v.typical) continue
      lines.push("")
      lines.push(`**${v.variant.name}** (${v.typical.tag}): handoff ${v.typical.handoffMs.toFixed(1)} ms, first audio ${v.typical.firstAudioMs.toFixed(1)} ms`)
      lines.push("")
      lines.push("```")
      lines.push(timelineText(v.typical))
      lines.push("```")
    }
  }
  return lines.join("\n") + "\n"
}
