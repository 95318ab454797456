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
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
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
  Effect.runPromise(Effect.forEach(Array.from({ length: count }, (_, i) => from + i), (i) => handoffOnce(i), { discard: true }))

await gcNow()
await run(0, warmup)
const session = new Session()
session.connect()
await session.post("Profiler.enable")
await session.post("Profiler.setSamplingInterval", { interval: 50 })
await session.post("Profiler.start")
const t0 = performance.now()
await run(warmup, n)
const wallMs = performance.now() - t0
const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: Profile }
session.disconnect()

const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const self = new Map<string, number>()
const functions = new Map<string, number>()
let total = 0
profile.samples.forEach((id, i) => {
  const frame = byId.get(id)!.callFrame
  // The profiler's own stop call, sampled at the end: not the handoff's.
  if (frame.url === "node:inspector") return
  const us = profile.timeDeltas[i] ?? 0
  total += us
  const part = partOf(frame)
  self.set(part, (self.get(part) ?? 0) + us)
  const name = `${frame.functionName || "(anonymous)"} ${frame.url.replace(/^.*\/(node_modules|src|services|layers|bench)\//, "$1/")}:${frame.lineNumber + 1}`
  functions.set(name, (functions.get(name) ?? 0) + us)
})
const rows = [...self.entries()].sort((a, b) => b[1] - a[1])
const cpu = os.cpus()[0]?.model ?? "unknown CPU"
console.log(`Handoff runs ${warmup}..${warmup + n - 1} (after ${warmup} warm-up), ${cpu}, Node ${process.version}:`)
console.log(`${(wallMs * 1000 / n).toFixed(0)} µs per run (session start, run() with the handoff, checks, close)\n`)
console.log("| part (self time) | µs per run | share |")
console.log("|---|---:|---:|")
for (const [part, us] of rows.slice(0, 18)) {
  console.log(`| ${part} | ${(us / n).toFixed(1)} | ${((us / total) * 100).toFixed(1)}% |`)
}
console.log("\n| function (self time) | µs per run |")
console.log("|---|---:|")
for (const [name, us] of [...functions.entries()].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
  console.log(`| ${name} | ${(us / n).toFixed(1)} |`)
}
const dir = new URL("../.profiles/", import.meta.url)
mkdirSync(dir, { recursive: true })
const file = new URL(`handoff-${warmup}.cpuprofile`, dir)
writeFileSync(file, JSON.stringify(profile))
console.log(`\nprofile: ${file.pathname}`)
process.exit(0)
