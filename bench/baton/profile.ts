/**
 * Where a handoff run's time goes: the bench's handoff (a fresh session, A's tool call, the
 * handoff, B's reply, close), profiled with V8's sampling profiler over the measured runs only.
 *
 *   node --expose-gc bench/baton/profile.ts            (cold: 20 warm-up runs, 200 measured)
 *   WARMUP=500 node --expose-gc bench/baton/profile.ts (warm)
 *
 * Prints the self time per part (the Effect runtime, effect/ai, each baton file, GC, ...) in µs
 * per run, and writes the profile to `bench/.profiles/handoff-<warmup>.cpuprofile` (open it in
 * Chrome DevTools' Performance panel or speedscope.app for a flame graph).
 */
import { Effect } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import os from "node:os"
import { handoffOnce } from "./handoff.ts"
import { envInt, gcNow } from "./stats.ts"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const warmup = envInt("WARMUP", 20)
const n = envInt("N", 200)

/** The part a sample's own frame belongs to. */
const partOf = (frame: ProfileNode["callFrame"]): string => {
  const { url, functionName } = frame
  if (functionName === "(garbage collector)") return "GC"
  if (functionName === "(program)" || functionName === "(idle)") return "V8 and idle (program)"
  if (url.includes("/node_modules/effect/") && url.includes("/unstable/ai/")) return "effect/ai"
  if (url.includes("/node_modules/effect/")) return "Effect runtime (effect)"
  if (url.includes("/node_modules/")) return "other packages"
  if (url.includes("/bench/")) return "the bench itself (checks, scripted agents)"
  const at = url.indexOf("/src/")
  if (at >= 0) return `baton ${url.slice(at + 1)}`
  const services = url.indexOf("/services/")
  if (services >= 0) return `baton ${url.slice(services + 1)}`
  if (url.startsWith("node:") || url === "") return "Node.js internals"
  return url
}

const run = (from: number, count: number) =>
  Effect.runPromise(Effect.forEach(Array.from({ length: count }, (_, i) => from + i), (i) => handoffOnce(i)))

await gcNow()
await run(0, warmup)
const session = new Session()
session.connect()
await session.post("Profiler.enable")
await session.post("Profiler.setSamplingInterval", { interval: 50 })
await session.post("Profiler.start")
// performance.now() and the profiler's timestamps are both the monotonic clock: one offset.
const offsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000
const t0 = performance.now()
const rows = await run(warmup, n)
const wallMs = performance.now() - t0
const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: Profile }
session.disconnect()

const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const cpu = os.cpus()[0]?.model ?? "unknown CPU"

/** Self time per part and per function over some samples, each worth `usPerSample`. */
const report = (title: string, samples: ReadonlyArray<number>, usPerSample: number) => {
  const self = new Map<string, number>()
  const functions = new Map<string, number>()
  for (const id of samples) {
    const frame = byId.get(id)!.callFrame
    const part = partOf(frame)
    self.set(part, (self.get(part) ?? 0) + usPerSample)
    const name = `${frame.functionName || "(anonymous)"} ${frame.url.replace(/^.*\/(node_modules|src|services|layers|bench)\//, "$1/")}:${frame.lineNumber + 1}`
    functions.set(name, (functions.get(name) ?? 0) + usPerSample)
  }
  const total = samples.length * usPerSample
  console.log(`\n${title}: ${(total / n).toFixed(0)} µs per run, ${samples.length} samples\n`)
  console.log("| part (self time) | µs per run | share |")
  console.log("|---|---:|---:|")
  for (const [part, us] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 18)) {
    console.log(`| ${part} | ${(us / n).toFixed(1)} | ${((us / total) * 100).toFixed(1)}% |`)
  }
  console.log("\n| function (self time) | µs per run |")
  console.log("|---|---:|")
  for (const [name, us] of [...functions.entries()].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
    console.log(`| ${name} | ${(us / n).toFixed(1)} |`)
  }
}

// The profiler's own stop call, sampled at the end, is not the handoff's.
const samples: Array<{ readonly id: number; readonly at: number }> = []
let at = profile.startTime
profile.samples.forEach((id, i) => {
  at += profile.timeDeltas[i] ?? 0
  if (byId.get(id)!.callFrame.url !== "node:inspector") samples.push({ id, at })
})
console.log(`Handoff runs ${warmup}..${warmup + n - 1} (after ${warmup} warm-up), ${cpu}, Node ${process.version}`)
// Each sample counts as the wall time over the number of samples: one sample's own time delta
// can be milliseconds when the process was descheduled, which would crown a random function.
report("Whole run (session start, run() with the handoff, checks, close)", samples.map((s) => s.id), (wallMs * 1000) / samples.length)
const windows = rows.map((row) => [row.window[0] * 1000 + offsetUs, row.window[1] * 1000 + offsetUs] as const)
const inWindow = samples.filter((s) => windows.some(([from, to]) => s.at >= from && s.at <= to))
const windowUs = windows.reduce((sum, [from, to]) => sum + (to - from), 0)
const usInWindow = windowUs / Math.max(1, inWindow.length)
report("Tool entered → B's reply finished (the measured window)", inWindow.map((s) => s.id), usInWindow)

// Total (inclusive) time of baton's own functions in the window: the phases of the handoff.
const parentOf = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)
const inclusive = new Map<string, number>()
for (const { id } of inWindow) {
  const seen = new Set<string>()
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const frame = byId.get(at)!.callFrame
    const file = frame.url.match(/\/(src|services|layers)\/(.*)$/)
    if (!file || frame.url.includes("/node_modules/")) continue
    const name = `${frame.functionName || "(anonymous)"} ${file[1]}/${file[2]}:${frame.lineNumber + 1}`
    if (!seen.has(name)) inclusive.set(name, (inclusive.get(name) ?? 0) + usInWindow)
    seen.add(name)
  }
}
console.log("\n| baton function in the window (total time, callees included) | µs per run |")
console.log("|---|---:|")
for (const [name, us] of [...inclusive.entries()].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  console.log(`| ${name} | ${(us / n).toFixed(1)} |`)
}
const dir = new URL("../.profiles/", import.meta.url)
mkdirSync(dir, { recursive: true })
const file = new URL(`handoff-${warmup}.cpuprofile`, dir)
writeFileSync(file, JSON.stringify(profile))
console.log(`\nprofile: ${file.pathname}`)
process.exit(0)
