/**
 * `npm run bench` (node --expose-gc bench/run.ts): measures baton, then runs the agents-js
 * benchmark (bench/agents-js) as a child process with the same Node binary, and prints Markdown
 * tables with both and the ratio. Progress goes to stderr, the tables to stdout.
 *
 *   --json <file>   also write the raw numbers of both sides to <file>
 *   --json          print the raw numbers (JSON) on stdout instead, and the tables on stderr
 *   --no-peer       measure baton only
 *   --no-realtime   skip the realtime reuse benchmark (seed 001, bench/realtime.ts: ~2-5 min)
 *
 * The handoff is measured in ROUNDS (5) alternating rounds, baton then agents-js, each in a fresh
 * process (bench/baton/rounds.ts); the report prints each round's ratio and min/median/max.
 *
 * Environment, shared with the agents-js side: N (200), WARMUP (20), WARM_AFTER (500: the same N
 * runs measured again after this many in all; 0 skips them), LIFECYCLE_N (20),
 * LIFECYCLE_WARMUP (3), IDLE_SESSIONS (1000), SAMPLES (1; 0 leaves raw samples out of the JSON),
 * ITER_TIMEOUT_MS (10000), SECTIONS (handoff,lifecycle,idleHeap,load,longSession); for load
 * (baton only): SESSIONS (1000), SPREAD_S (10), SATURATE (0), LOAD_SMALL_YOUNG (1: the load again
 * under --max-semi-space-size=4, bench/baton/load-main.ts; 0 skips it); for longSession (in its own process, bench/baton/long-session-main.ts): LONG_TURNS (5000);
 * server: the service with 100 and 1,000 WebSocket clients (bench/server-sessions.ts);
 * voiceSideBySide: voice turns of baton and agents-js on the same mocks (bench/voice-side-by-side.ts:
 * TURNS (20), STT_LATENCY_MS, LLM_FIRST_TOKEN_MS, TTS_FIRST_BYTE_MS, MIN_ENDPOINTING_MS, ...);
 * capacity: concurrent voice calls per core, baton and agents-js, in the short form of
 * bench/capacity.ts (npm run bench:capacity runs the full one; CAPACITY_STEPS, PEER_STEPS, ...).
 * Exits with 1 only when a baton measurement failed.
 */
import { benchCapacity } from "./capacity.ts"
import { benchLiveKit } from "./livekit.ts"
import { benchVoicePipeline } from "./voice-pipeline.ts"
import { benchVoiceSideBySide, settingsFromEnv } from "./voice-side-by-side.ts"
import { execFileSync, spawnSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import os from "node:os"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { benchHeap } from "./baton/heap.ts"
import { benchLifecycle } from "./baton/lifecycle.ts"
import { benchLoad, type LoadResult, type LongSessionResult } from "./baton/load.ts"
import { type PeerOutcome, runPeer } from "./baton/peer.ts"
import { medianRound, runRounds } from "./baton/rounds.ts"
import { type BatonResults, type Machine, render } from "./baton/report.ts"
import { envInt, gcNow, log } from "./baton/stats.ts"
import { runRealtimeBench } from "./realtime.ts"

const args = process.argv.slice(2)
const jsonAt = args.findIndex((a) => a === "--json" || a.startsWith("--json="))
/** undefined: no JSON; "-": JSON on stdout; otherwise a file name. */
const json = jsonAt < 0
  ? undefined
  : args[jsonAt]!.startsWith("--json=")
  ? args[jsonAt]!.slice("--json=".length)
  : args[jsonAt + 1] !== undefined && !args[jsonAt + 1]!.startsWith("--")
  ? args[jsonAt + 1]!
  : "-"
const withPeer = !args.includes("--no-peer")
const sections = new Set((process.env.SECTIONS ?? "handoff,lifecycle,idleHeap,load,longSession,server,voice,voiceSideBySide,livekit,capacity").split(",").map((s) => s.trim()))

/** A bench script run as a child with this Node binary and `flags`: its stdout, or undefined
 * (and the reason under `errors[name]`) when it failed. */
const runChild = (name: string, script: string, flags: ReadonlyArray<string> = []): string | undefined => {
  const r = spawnSync(process.execPath, ["--expose-gc", ...flags, fileURLToPath(new URL(script, import.meta.url))], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    timeout: 10 * 60_000
  })
  if (r.status !== 0) {
    errors[name] = `bench/${script.replace("./", "")} exited with ${r.status ?? r.signal}`
    return undefined
  }
  return r.stdout.trim()
}

/** bench/server-sessions.ts (100 and 1,000 WebSocket clients) in its own process: its Markdown table. */
const runServerBench = (): string | undefined => {
  log("running the service bench: bench/server-sessions.ts")
  return runChild("server", "./server-sessions.ts")
}

/** A child that prints its result as JSON on its last line of stdout (bench/baton/*-main.ts). */
const runChildJson = <A>(name: string, script: string, flags: ReadonlyArray<string> = []): A | undefined => {
  const out = runChild(name, script, flags)
  if (out === undefined) return undefined
  try {
    return JSON.parse(out.split("\n").pop()!) as A
  } catch {
    errors[name] = `bench/${script.replace("./", "")} printed no result`
    return undefined
  }
}

/** The long session in a fresh process (bench/baton/long-session-main.ts): the same heap at turn 1 and turn 5,000 as a service's session would see. */
const runLongSession = (): LongSessionResult | undefined => {
  if (!sections.has("longSession")) return undefined
  log("running the long session in its own process: bench/baton/long-session-main.ts")
  return runChildJson<LongSessionResult>("longSession", "./baton/long-session-main.ts")
}

/** The young generation's size for the second load run (MiB per semi-space; V8's default grows with the heap). */
const SMALL_SEMI_SPACE_MB = 4

/** The load again in a process with a smaller young generation: shorter, more frequent scavenges. */
const runLoadSmallYoung = (): LoadResult | undefined => {
  if (!sections.has("load") || envInt("LOAD_SMALL_YOUNG", 1) === 0) return undefined
  log(`running the load again with --max-semi-space-size=${SMALL_SEMI_SPACE_MB}: bench/baton/load-main.ts`)
  return runChildJson<LoadResult>("loadSmallYoung", "./baton/load-main.ts", [`--max-semi-space-size=${SMALL_SEMI_SPACE_MB}`])
}

const root = fileURLToPath(new URL("..", import.meta.url))
const batonVersion = () => {
  try {
    const git = (...a: Array<string>) => execFileSync("git", a, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    const dirty = git("status", "--porcelain", "--", "src", "layers", "services") !== ""
    return `${git("rev-parse", "--short", "HEAD")}${dirty ? " (with uncommitted changes in src/)" : ""}`
  } catch {
    return "(git revision unknown)"
  }
}

const cpus = os.cpus()
const machine: Machine = {
  cpuModel: cpus[0]?.model.trim() ?? "unknown CPU",
  cores: cpus.length,
  platform: `${process.platform}-${process.arch}`,
  node: process.version,
  date: new Date().toISOString().slice(0, 10),
  baton: batonVersion(),
  load: os.loadavg()[0] ?? 0
}
log(`${machine.cpuModel}, ${machine.cores} cores, Node ${machine.node}; baton ${machine.baton}`)
if (typeof (globalThis as { gc?: unknown }).gc !== "function") log("WARNING: run with node --expose-gc (npm run bench does)")

const wall0 = performance.now()
const errors: Record<string, string> = {}
const measure = async <A>(name: string, effect: Effect.Effect<A, Error>): Promise<A | undefined> => {
  if (!sections.has(name)) return undefined
  await gcNow()
  try {
    return await Effect.runPromise(effect)
  } catch (error) {
    errors[name] = error instanceof Error ? error.message : String(error)
    log(`FAILED ${name}:`, error instanceof Error ? (error.stack ?? error.message) : error)
    return undefined
  }
}
const rounds = sections.has("handoff") ? await runRounds(envInt("ROUNDS", 5), withPeer) : []
const median = medianRound(rounds)
for (const [i, r] of rounds.entries()) for (const e of r.errors) errors[`handoff round ${i + 1}`] = e
const baton: BatonResults = {
  handoff: median?.baton,
  lifecycle: await measure("lifecycle", benchLifecycle),
  idleHeap: await measure("idleHeap", benchHeap),
  load: await measure("load", benchLoad),
  loadSmallYoung: runLoadSmallYoung(),
  longSession: runLongSession(),
  errors
}
const batonWallMs = performance.now() - wall0

/** The sections the agents-js script also has (load and longSession are baton's alone). */
const rest = [...sections].filter((s) => s === "lifecycle" || s === "idleHeap").join(",")
const peerRest: PeerOutcome | { readonly skipped: string } = !withPeer
  ? { skipped: "run with --no-peer" }
  : rest === ""
  ? { ok: true, installed: false, result: { meta: rounds.find((r) => r.peerMeta)?.peerMeta ?? { agentsVersion: null, rtcNodeVersion: null, node: process.version } } }
  : await runPeer({ SECTIONS: rest })
/** The other sections' peer numbers, with the handoff of the median round. */
const peer: PeerOutcome | { readonly skipped: string } = "ok" in peerRest && peerRest.ok && median?.peer
  ? { ...peerRest, result: { ...peerRest.result, handoff: median.peer } }
  : peerRest
if ("ok" in peer && !peer.ok) log(`agents-js column missing: ${peer.reason}`)

const realtime = args.includes("--no-realtime")
  ? undefined
  : await runRealtimeBench(withPeer ? {} : { peer: false }).catch((e: unknown) => {
    errors["realtime"] = String(e)
    log(`realtime benchmark failed: ${String(e)}`)
    return undefined
  })

// Sessions over the service's WebSocket endpoint (baton only), in a process of its own.
const serverTable = sections.has("server") ? runServerBench() : undefined

// The cascaded voice pipeline on real audio (baton only; the offline engines from npm run setup).
const voiceTable = sections.has("voice")
  ? await Effect.runPromise(benchVoicePipeline).catch((e: unknown) => {
    errors["voice"] = String(e)
    log(`voice pipeline benchmark failed: ${String(e)}`)
    return undefined
  })
  : undefined

// Voice turns of baton and agents-js on the same mocked Deepgram, Cartesia and OpenAI chat (TURNS, default 20).
const voiceSideBySide = sections.has("voiceSideBySide")
  ? await benchVoiceSideBySide(settingsFromEnv(), withPeer).catch((e: unknown) => {
    errors["voiceSideBySide"] = String(e)
    log(`voice side-by-side benchmark failed: ${String(e)}`)
    return undefined
  })
  : undefined
for (const side of voiceSideBySide?.raw.sides ?? []) if (side.framework === "baton" && side.error) errors[`voiceSideBySide${side.handoff ? " (handoff)" : ""}`] = side.error

// LiveKit jobs in one worker, next to agents-js's process per job.
const livekitTable = sections.has("livekit")
  ? await benchLiveKit().catch((e: unknown) => {
    errors["livekit"] = String(e)
    log(`livekit benchmark failed: ${String(e)}`)
    return undefined
  })
  : undefined

// Concurrent voice calls per core, baton in one process and agents-js a process per call (short form).
const capacityTable = sections.has("capacity")
  ? await benchCapacity({ short: true, peer: withPeer }).catch((e: unknown) => {
    errors["capacity"] = String(e)
    log(`capacity benchmark failed: ${String(e)}`)
    return undefined
  })
  : undefined

const tables = render(machine, baton, peer, rounds) + (serverTable ? `\n### The service: sessions over /ws\n\n${serverTable}\n` : "") +
  (voiceTable ? `\n### Cascaded voice: end of speech to first audio\n\n${voiceTable}\n` : "") +
  (voiceSideBySide ? `\n### Voice turns side by side with agents-js, on the same mocked providers\n\n${voiceSideBySide.markdown}\n` : "") +
  (livekitTable ? `\n### LiveKit: jobs in one process\n\n${livekitTable}\n` : "") + (capacityTable ? `\n${capacityTable}` : "") +
  (realtime ? `\n${realtime.markdown}\n` : "")
const raw = JSON.stringify({ machine, baton: { ...baton, wallMs: Math.round(batonWallMs) }, agentsJs: peer, handoffRounds: rounds, voiceSideBySide: voiceSideBySide?.raw }, null, 2) + "\n"
if (json === "-") {
  process.stderr.write(`\n${tables}\n`)
  process.stdout.write(raw)
} else {
  process.stdout.write(tables)
  if (json !== undefined) {
    writeFileSync(json, raw)
    log(`raw numbers written to ${json}`)
  }
}
log(`done in ${((performance.now() - wall0) / 1000).toFixed(1)} s`)
// Exit explicitly (nothing should be left running, but never hang), once stdout is flushed.
process.stdout.write("", () => process.exit(Object.keys(errors).length > 0 ? 1 : 0))
