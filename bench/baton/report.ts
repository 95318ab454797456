/** The Markdown printed by `npm run bench`: a machine line and one table per measurement. */
import type { HandoffResult } from "./handoff.ts"
import type { HeapResult } from "./heap.ts"
import type { LifecycleResult } from "./lifecycle.ts"
import type { LoadResult, LongSessionResult } from "./load.ts"
import type { PeerOutcome } from "./peer.ts"
import { type RatioSpread, type Round, spread } from "./rounds.ts"
import { envInt, type Summary } from "./stats.ts"

export interface Machine {
  readonly cpuModel: string
  readonly cores: number
  readonly platform: string
  readonly node: string
  readonly date: string
  readonly baton: string
  /** 1-minute load average when the run started (other processes compete for the cores). */
  readonly load: number
}

export interface BatonResults {
  readonly handoff?: HandoffResult | undefined
  readonly lifecycle?: LifecycleResult | undefined
  readonly idleHeap?: HeapResult | undefined
  readonly load?: LoadResult | undefined
  /** The same load in a process started with a smaller young generation (--max-semi-space-size). */
  readonly loadSmallYoung?: LoadResult | undefined
  readonly longSession?: LongSessionResult | undefined
  /** Sections that failed, with the reason. */
  readonly errors: Record<string, string>
}

type Num = number | null | undefined

const ms = (x: Num) => {
  if (x === null || x === undefined) return "–"
  const digits = x < 1 ? 3 : x < 10 ? 2 : x < 100 ? 1 : 0
  return `${x.toFixed(digits)} ms`
}
const kib = (b: Num) => (b === null || b === undefined ? "–" : `${(b / 1024).toFixed(1)} KiB`)
/** How many times more time (or memory) agents-js needs than baton. */
const ratio = (peer: Num, baton: Num) => {
  if (peer === null || peer === undefined || baton === null || baton === undefined || baton <= 0) return "–"
  const r = peer / baton
  return `${r < 10 ? r.toFixed(1) : Math.round(r).toLocaleString("en-US")}×`
}

const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) =>
  [`| ${head.join(" | ")} |`, `|${head.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)]
    .join("\n")

/** The handoff target: baton at least this many times faster than agents-js (issue 18). */
export const HANDOFF_TARGET = 20

const times = (x: number) => `${x.toFixed(1)}×`

const spreadTable = (rounds: ReadonlyArray<Round>, cold: RatioSpread | undefined, warm: RatioSpread | undefined) => {
  const rows = rounds.map((r, i) => {
    const b = r.baton
    const a = r.peer
    const ratioOf = (bm: Num, am: Num) => (bm && am ? times(am / bm) : "–")
    return [
      `round ${i + 1}`,
      ms(b?.toolToReplyDone.medianMs),
      ms(a?.toolToReplyDone?.medianMs),
      ratioOf(b?.toolToReplyDone.medianMs, a?.toolToReplyDone?.medianMs),
      ms(b?.warm?.toolToReplyDone.medianMs),
      ms(a?.warm?.toolToReplyDone?.medianMs),
      ratioOf(b?.warm?.toolToReplyDone.medianMs, a?.warm?.toolToReplyDone?.medianMs)
    ]
  })
  const summary = (s: RatioSpread | undefined) => (s ? `${times(s.min)} / ${times(s.median)} / ${times(s.max)}` : "–")
  rows.push(["**ratio min / median / max**", "", "", summary(cold), "", "", summary(warm)])
  return table(["tool entered → B's reply finished (median)", "baton cold", "agents-js cold", "ratio", "baton warm", "agents-js warm", "ratio"], rows)
}

export const render = (
  machine: Machine,
  baton: BatonResults,
  peer: PeerOutcome | { readonly skipped: string },
  rounds: ReadonlyArray<Round> = []
) => {
  const p = "ok" in peer && peer.ok ? peer.result : undefined
  const out: Array<string> = []
  const peerName = p ? `@livekit/agents ${p.meta.agentsVersion} (rtc-node ${p.meta.rtcNodeVersion})` : "@livekit/agents"
  out.push(`Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.platform}, Node ${machine.node}, ${machine.date}, load average ${machine.load.toFixed(1)} at the start.`)
  out.push(`baton ${machine.baton} vs ${peerName}, both headless with a zero-latency scripted model, measured in one \`npm run bench\`.`)
  if (!p) {
    const why = "skipped" in peer ? peer.skipped : peer.ok ? "" : peer.reason
    out.push(`\n**The agents-js column is missing:** ${why}.`)
  }
  if ("installed" in peer && peer.installed) out.push("(bench/agents-js/node_modules was missing and was installed with `npm ci --prefix bench/agents-js` for this run.)")
  out.push(`Ratio = agents-js ÷ baton (above 1: baton is faster or smaller).`)

  const h = baton.handoff
  const ph = p?.handoff
  if (h || ph || baton.errors.handoff) {
    const n = h?.n ?? ph?.n ?? envInt("N", 200)
    const warmup = h?.warmup ?? ph?.warmup ?? envInt("WARMUP", 20)
    out.push(`\n### Handoff overhead (${n} runs after ${warmup} warm-up, a fresh session each)\n`)
    out.push(
      "A's model answers `go` with one tool call, `transfer`, which returns a handoff to B; B's onEnter asks for a reply and waits for it (\"Hello from AgentB\"). Median / p90, linear interpolation.\n"
    )
    if (baton.errors.handoff) out.push(`baton failed: ${baton.errors.handoff}\n`)
    type Key = "toolToReplyDone" | "runToResolved" | "toolToOnEnter" | "onEnterToReplyDone"
    const handoffTable = (b: Partial<Record<Key, Summary>> | undefined, a: Partial<Record<Key, Partial<Summary>>> | undefined) => {
      const row = (label: string, key: Key) =>
        [label, ms(b?.[key]?.medianMs), ms(b?.[key]?.p90Ms), ms(a?.[key]?.medianMs), ms(a?.[key]?.p90Ms), ratio(a?.[key]?.medianMs, b?.[key]?.medianMs)]
      return table(["", "baton median", "baton p90", "agents-js median", "agents-js p90", "ratio (median)"], [
        row("**tool entered → B's reply finished**", "toolToReplyDone"),
        row("`run()` → resolved", "runToResolved"),
        row("tool entered → B's onEnter entered", "toolToOnEnter"),
        row("B's onEnter entered → reply finished", "onEnterToReplyDone")
      ])
    }
    out.push(handoffTable(h, ph))
    const warm = h?.warm ?? ph?.warm
    if (warm) {
      out.push(`\nThe same ${n} runs once the process is warm (after ${warm.after} runs in all, the JIT has optimized both sides' code):\n`)
      out.push(handoffTable(h?.warm, ph?.warm))
    }
    const cold = spread(rounds, (side) => side?.toolToReplyDone?.medianMs)
    const warmSpread = spread(rounds, (side) => (side as { warm?: { toolToReplyDone?: { medianMs?: number | null } } } | undefined)?.warm?.toolToReplyDone?.medianMs)
    if (rounds.length > 0) {
      out.push(`\n${rounds.length} alternating rounds on ${machine.cpuModel} (baton, agents-js, baton, ...), each side in a fresh process; the tables above are the median round's:\n`)
      out.push(spreadTable(rounds, cold, warmSpread))
    }
    const verdict = (label: string, s: RatioSpread | undefined) =>
      s ? `${label}: ${s.median >= HANDOFF_TARGET ? "met" : "not met"}, ${s.median.toFixed(1)}×` : `${label}: not measured`
    out.push(`\nTarget (baton at least ${HANDOFF_TARGET}× faster on tool entered → B's reply finished, median ratio of ${rounds.length} rounds): ${
      [verdict(`after ${warmup} warm-up runs`, cold), ...(warm ? [verdict(`after ${warm.after}`, warmSpread)] : [])].join("; ")
    }.`)
  }

  const l = baton.lifecycle
  const pl = p?.lifecycle
  if (l || pl || baton.errors.lifecycle) {
    out.push(`\n### Session start and close (${l?.n ?? pl?.n ?? envInt("LIFECYCLE_N", 20)} sessions after ${l?.warmup ?? pl?.warmup ?? envInt("LIFECYCLE_WARMUP", 3)} warm-up, one at a time)\n`)
    if (baton.errors.lifecycle) out.push(`baton failed: ${baton.errors.lifecycle}\n`)
    const row = (label: string, b: Summary | undefined, a: Summary | undefined) => [label, ms(b?.medianMs), ms(a?.medianMs), ratio(a?.medianMs, b?.medianMs)]
    out.push(table(["median", "baton", "agents-js", "ratio"], [
      row("start (until the agent is up and idle)", l?.start, pl?.start),
      row("close, idle session", l?.close, pl?.close),
      row("close after one turn", l?.closeAfterTurn, pl?.closeAfterTurn)
    ]))
  }

  const m = baton.idleHeap
  const pm = p?.idleHeap
  if (m || pm || baton.errors.idleHeap) {
    out.push(`\n### ${(m?.sessions ?? pm?.sessions ?? envInt("IDLE_SESSIONS", 1000)).toLocaleString("en-US")} idle sessions open in one process\n`)
    if (baton.errors.idleHeap) out.push(`baton failed: ${baton.errors.idleHeap}\n`)
    if (m && pm && m.sessions !== pm.sessions) out.push(`(agents-js started ${pm.sessions}: ${pm.limitedBy})\n`)
    out.push(table(["", "baton", "agents-js", "ratio"], [
      ["heap per session (after gc)", kib(m?.heapBytesPerSession), kib(pm?.heapBytesPerSession), ratio(pm?.heapBytesPerSession, m?.heapBytesPerSession)],
      ["RSS per session", kib(m?.rssBytesPerSession), kib(pm?.rssBytesPerSession), ratio(pm?.rssBytesPerSession, m?.rssBytesPerSession)],
      ["start them all, one after another", ms(m?.startAllMs), ms(pm?.startAllMs), ratio(pm?.startAllMs, m?.startAllMs)],
      ["close them all, concurrently", ms(m?.closeAllMs), ms(pm?.closeAllMs), ratio(pm?.closeAllMs, m?.closeAllMs)]
    ]))
  }
  const load = baton.load
  if (load || baton.errors.load) {
    out.push(`\n### Many sessions in one process (baton only)\n`)
    if (baton.errors.load) out.push(`baton failed: ${baton.errors.load}\n`)
    if (load) {
      out.push(
        `${load.sessions.toLocaleString("en-US")} sessions ${load.spreadS > 0 ? `arriving evenly over ${load.spreadS} s` : "started at once (saturation)"}, three turns each (one a handoff), scripted models that record nothing.\n`
      )
      const small = baton.loadSmallYoung
      const row = (label: string, value: (l: LoadResult) => string, target = "") =>
        small ? [label, value(load), value(small), target] : [label, value(load), target]
      const collections = (c: { readonly count: number; readonly maxMs: number }) => c.count === 0 ? "0" : `${c.count} / ${ms(c.maxMs)}`
      out.push(table(small ? ["", "node defaults", "`--max-semi-space-size=4`", "target"] : ["", "value", "target"], [
        row("turns per second reached", (l) => `${l.turnsPerSecond}`),
        row("`run()` p50 / p99 / max", (l) => `${ms(l.run.medianMs)} / ${ms(l.run.p99Ms)} / ${ms(l.run.maxMs)}`, "p99 ≤ 10 ms"),
        row("event-loop lag p99 / max", (l) => `${ms(l.lag.p99Ms)} / ${ms(l.lag.maxMs)}`, "max ≤ 20 ms"),
        row("V8 scavenges: count / longest pause", (l) => collections(l.gc.minor)),
        row("V8 full collections: count / longest pause", (l) => collections(l.gc.major)),
        row("time in V8's collector", (l) => ms(l.gc.totalMs))
      ]))
      out.push(
        "\nThe event loop's long blocks are V8's pauses: a scavenge copies the young generation's survivors (the state of the sessions started since the last one), a full collection's final pause marks and evacuates the whole heap. A smaller young generation (second column, when measured) makes scavenges shorter and more frequent.\n"
      )
    }
  }
  const long = baton.longSession
  if (long || baton.errors.longSession) {
    out.push(`\n### One long session (baton only)\n`)
    if (baton.errors.longSession) out.push(`baton failed: ${baton.errors.longSession}\n`)
    if (long) {
      out.push(table(["", "value"], [
        [`turn cost around turn 100 (median; the JIT is still warming up)`, ms(long.earlyTurnMs)],
        [`turn cost around turn ${long.midTurn.toLocaleString("en-US")} (median)`, ms(long.midTurnMs)],
        [`turn cost over the last 100 of ${long.turns.toLocaleString("en-US")} (median)`, ms(long.lateTurnMs)],
        ["heap added per turn (after gc)", `${long.heapBytesPerTurn.toLocaleString("en-US")} B`]
      ]))
    }
  }
  return out.join("\n") + "\n"
}
