/**
 * The handoff's cost by run index, both sides: `RUNS` (1,000) handoffs in one fresh process
 * each, no warm-up, and the median of tool entered → B's reply finished per block of runs. It
 * shows what the "after 20 warm-up runs" figure of `npm run bench` (the median of runs 21–220)
 * is made of: V8 optimizes a function once it has run often enough, so a process's first few
 * hundred handoffs get faster run by run on both sides.
 *
 *   npm run bench:curve             (baton and agents-js)
 *   npm run bench:curve -- --no-peer
 *   EFFECT_WARMUP=20000 npm run bench:curve -- --no-peer
 *                                   (baton's process first runs generic Effect work, none of it
 *                                    baton's: bench/baton/effect-warmup.ts)
 */
import { spawnSync } from "node:child_process"
import os from "node:os"
import { fileURLToPath } from "node:url"
import { runPeer } from "./peer.ts"
import { envInt, log, quantile } from "./stats.ts"

const runs = Math.max(300, envInt("RUNS", 1000))
const env = { N: String(runs), WARMUP: "0", WARM_AFTER: "0", SECTIONS: "handoff", SAMPLES: "1" }

const batonSamples = (): ReadonlyArray<number> => {
  log(`baton: ${runs} handoffs in a fresh process`)
  const r = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(new URL("./handoff-main.ts", import.meta.url))], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, ...env },
    timeout: 10 * 60_000
  })
  if (r.status !== 0) throw new Error(`bench/baton/handoff-main.ts exited with ${r.status ?? r.signal}`)
  const samples = JSON.parse(r.stdout.trim().split("\n").pop()!).toolToReplyDone?.samples
  if (!Array.isArray(samples) || samples.length !== runs) throw new Error("baton's samples are missing")
  return samples
}

const peerSamples = async (): Promise<ReadonlyArray<number> | string> => {
  const outcome = await runPeer(env)
  if (!outcome.ok) return outcome.reason
  const samples = outcome.result.handoff?.toolToReplyDone?.samples
  return Array.isArray(samples) && samples.length === runs ? samples : "agents-js printed no samples"
}

const median = (xs: ReadonlyArray<number>) => quantile([...xs].sort((a, b) => a - b), 0.5)!

const ms = (x: number) => `${x < 1 ? x.toFixed(3) : x.toFixed(2)} ms`

const baton = batonSamples()
const peer = process.argv.includes("--no-peer") ? "run with --no-peer" : await peerSamples()
const edges = [...[0, 20, 70, 120, 170, 220, 320, 520].filter((edge) => edge < runs), runs]
const blocks: Array<readonly [string, number, number]> = edges.slice(1).map((to, i) => [`${edges[i]! + 1}–${to}`, edges[i]!, to] as const)
blocks.push(["21–220 (the bench's \"after 20 warm-up runs\")", 20, 220])

const cpu = os.cpus()[0]?.model ?? "unknown CPU"
console.log(`\nHandoff, tool entered → B's reply finished, median per block of runs; ${runs} runs in one fresh process per side, no warm-up.`)
console.log(`${cpu}, ${os.cpus().length} cores, Node ${process.version}.`)
const effectWarmup = envInt("EFFECT_WARMUP", 0)
if (effectWarmup > 0) {
  console.log(`baton's process first ran ${effectWarmup} rounds of generic Effect work (EFFECT_WARMUP; agents-js's had no warm-up).`)
}
console.log("")
console.log(typeof peer === "string" ? "| runs | baton |\n|---|---:|" : "| runs | baton | agents-js | ratio |\n|---|---:|---:|---:|")
for (const [label, from, to] of blocks) {
  const b = median(baton.slice(from, to))
  if (typeof peer === "string") console.log(`| ${label} | ${ms(b)} |`)
  else {
    const p = median(peer.slice(from, to))
    console.log(`| ${label} | ${ms(b)} | ${ms(p)} | ${(p / b).toFixed(1)}× |`)
  }
}
if (typeof peer === "string") console.log(`\n(agents-js column missing: ${peer})`)
