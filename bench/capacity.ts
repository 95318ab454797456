/**
 * `npm run bench:capacity` (a short form runs in `npm run bench`): how many concurrent voice calls
 * a core carries, baton against agents-js, on the same machine and the same mocked providers.
 *
 * Every call streams the same caller at real time: a spoken question (flite, 16 kHz), silence to
 * the end of a cycle (CYCLE_MS, 5 s), repeated; each question is a turn the agent answers (the
 * OpenAI chat mock's one sentence, spoken by the Cartesia mock). Speech to text is the Deepgram
 * mock; the VAD runs locally, one stream per call (Silero, as LiveKit runs it per call; and WebRTC
 * VAD for baton). The mocks run in a process of their own (bench/capacity/mocks-main.ts).
 *
 * - baton: N calls in one process (bench/capacity/baton-main.ts), a fresh process per step.
 * - agents-js: one job process per call, as agents-js runs calls (bench/agents-js/voice.mjs with
 *   `--session call`), each with a probe of its event loop (bench/capacity/lag-probe.mjs).
 *
 * N goes up step by step until the turn latency p99 is more than 50 ms above the one-call
 * baseline's, an output underruns, or a reply is missing. Per step: CPU (cores, and per call),
 * RSS (and per call), event-loop lag p99/max, turn latency p50/p99 and the p99 added over one
 * call. Calls per core = the last step that held, divided by the cores it used; "from CPU alone"
 * = the best calls ÷ cores of a step where every reply came and nothing underran, its latency
 * aside (a loaded host's neighbours move it less). The last line is `Target (capacity): ...`: at
 * least 10× agents-js's calls per core, and at least 100 with Silero.
 *
 *   --short          fewer, shorter steps (what `npm run bench` runs); also CAPACITY_SHORT=1
 *   --no-peer        baton only
 *   --json <file>    also write every step's numbers
 *
 * Environment: CAPACITY_STEPS (baton's N, e.g. "25,50,100"), PEER_STEPS (agents-js's N),
 * VADS (silero,webrtc), WINDOW_S (measured seconds per step), WARMUP_S, BASELINE_S (the one-call
 * baseline's window), CYCLE_MS, ADDED_P99_MS (50). The machine's load (loadavg) is printed with
 * every step: on a shared machine the latency criterion trips early.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { writeQuestion } from "./capacity/caller.ts"
import { percentile, type StepResult } from "./capacity/stats.ts"

const envNum = (name: string, dflt: number) => {
  const v = process.env[name]
  if (v === undefined || v === "") return dflt
  const n = Number(v)
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${v} is not a non-negative number`)
  return n
}
const envList = (name: string, dflt: string) => (process.env[name] ?? dflt).split(",").map((s) => s.trim()).filter((s) => s !== "")

/** The run's settings: the environment's, with shorter defaults for `--short`. */
const settingsOf = (short: boolean) => ({
  short,
  cycleMs: envNum("CYCLE_MS", 5000),
  windowS: envNum("WINDOW_S", short ? 10 : 30),
  warmupS: envNum("WARMUP_S", short ? 3 : 6),
  baselineS: envNum("BASELINE_S", short ? 30 : 120),
  addedLimitMs: envNum("ADDED_P99_MS", 50),
  batonSteps: envList("CAPACITY_STEPS", short ? "10,25,50,100,150" : "10,25,50,100,150,200,300,400,600,800").map(Number),
  peerSteps: envList("PEER_STEPS", short ? "2,4,8" : "2,4,6,8,12,16,24").map(Number),
  vads: envList("VADS", "silero,webrtc")
})
type Settings = ReturnType<typeof settingsOf>
/** Set by {@link benchCapacity} for the run in progress. */
let settings: Settings = settingsOf(false)

const log = (...parts: ReadonlyArray<unknown>) => console.error("[capacity]", ...parts)
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const cpuModel = (() => {
  try {
    return /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? os.cpus()[0]?.model ?? "unknown CPU"
  } catch {
    return os.cpus()[0]?.model ?? "unknown CPU"
  }
})()
const cores = os.cpus().length
const load = () => os.loadavg()[0]!

// ---------------------------------------------------------------------------------------------
// Children
// ---------------------------------------------------------------------------------------------

/** Lines of a child's stdout, as they come. */
const onLines = (child: ChildProcess, f: (line: string) => void) => {
  let rest = ""
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    rest += chunk
    let at: number
    while ((at = rest.indexOf("\n")) >= 0) {
      f(rest.slice(0, at))
      rest = rest.slice(at + 1)
    }
  })
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code)))

interface Mocks {
  readonly urls: { readonly deepgram: string; readonly cartesia: string; readonly openai: string }
  readonly stop: () => Promise<void>
}

/** The providers' mocks in their own process (stdin open while they should run). */
const startMocks = () =>
  new Promise<Mocks>((resolve, reject) => {
    const child = spawn(process.execPath, [here("./capacity/mocks-main.ts")], { stdio: ["pipe", "pipe", "inherit"] })
    child.once("error", reject)
    child.once("exit", (code) => reject(new Error(`the mocks exited with ${code} before listening`)))
    onLines(child, (line) => {
      child.removeAllListeners("exit")
      resolve({
        urls: JSON.parse(line),
        stop: async () => {
          child.stdin!.end()
          const timer = setTimeout(() => child.kill("SIGKILL"), 5000)
          await exited(child)
          clearTimeout(timer)
        }
      })
    })
  })

/** One baton step: N calls in a fresh process. */
const batonStep = async (mocks: Mocks, caller: string, vad: string, calls: number, window: number): Promise<StepResult> => {
  const child = spawn(process.execPath, [here("./capacity/baton-main.ts")], {
    stdio: ["ignore", "pipe", "inherit"],
    env: {
      ...process.env,
      CALLS: String(calls),
      VAD: vad,
      URLS: JSON.stringify(mocks.urls),
      CALLER: caller,
      CYCLE_MS: String(settings.cycleMs),
      WARMUP_S: String(settings.warmupS),
      WINDOW_S: String(window)
    }
  })
  let result: StepResult | undefined
  onLines(child, (line) => {
    if (line.startsWith("RESULT ")) result = JSON.parse(line.slice("RESULT ".length))
  })
  const code = await exited(child)
  if (result === undefined) throw new Error(`bench/capacity/baton-main.ts (${calls} calls) exited with ${code} and no result`)
  return result
}

/** CPU seconds (user + system) of a process so far, from /proc. */
const cpuSeconds = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return undefined
  }
}
const rssMb = (pid: number): number | undefined => {
  try {
    const kb = /VmRSS:\s*(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]
    return kb === undefined ? undefined : Number(kb) / 1024
  } catch {
    return undefined
  }
}

const voiceMjs = here("./agents-js/voice.mjs")
const peerInstalled = () => existsSync(here("./agents-js/node_modules/@livekit/agents/package.json")) && existsSync(voiceMjs)

/**
 * One agents-js step: N job processes, one call each (`voice.mjs --session call`), started
 * together. CPU and RSS are read from /proc from the moment every job is past its warm-up turn
 * until the first one finishes; the latencies are every job's measured turns.
 */
const peerStep = async (mocks: Mocks, caller: string, callerMs: number, calls: number, turns: number, lagDir: string): Promise<StepResult> => {
  const deepgram = mocks.urls.deepgram.replace(/\/v1\/listen$/, "")
  const cartesia = mocks.urls.cartesia.replace(/^ws/, "http").replace(/\/tts\/websocket$/, "")
  const children: Array<ChildProcess> = []
  const latencies: Array<number> = []
  let warmedUp = 0
  let firstDone: (() => void) | undefined
  const allWarm = new Promise<void>((resolve) => {
    const check = () => warmedUp >= calls && resolve()
    for (let i = 0; i < calls; i++) {
      const child = spawn(process.execPath, [
        "--import",
        here("./capacity/lag-probe.mjs"),
        voiceMjs,
        "--wav",
        caller,
        "--deepgram",
        deepgram,
        "--cartesia",
        cartesia,
        "--openai",
        mocks.urls.openai,
        "--session",
        "call",
        "--turns",
        String(turns),
        "--warmup",
        "1",
        // voice.mjs's turn: 500 ms of silence, the question, then the gap: the same cycle as baton's calls
        "--gap-ms",
        String(Math.max(0, settings.cycleMs - 500 - callerMs)),
        "--min-endpointing-ms",
        "500"
      ], { stdio: ["ignore", "pipe", "ignore"], env: { ...process.env, LAG_PROBE_DIR: lagDir } })
      children.push(child)
      onLines(child, (line) => {
        const message = JSON.parse(line) as { type: string; warmup?: boolean; latencyMs?: number; message?: string }
        if (message.type === "turn" && message.warmup) {
          warmedUp++
          check()
        } else if (message.type === "turn" && typeof message.latencyMs === "number") latencies.push(message.latencyMs)
        else if (message.type === "done") firstDone?.()
        else if (message.type === "error") log(`agents-js job ${child.pid}: ${message.message}`)
      })
    }
  })
  const done = new Promise<void>((resolve) => {
    firstDone = resolve
  })
  const codes = Promise.all(children.map(exited))
  await Promise.race([allWarm, codes])
  const pids = children.map((c) => c.pid!)
  const cpu0 = pids.map(cpuSeconds)
  const t0 = performance.now()
  const rss: Array<number> = []
  const sampler = setInterval(() => rss.push(pids.reduce((a, pid) => a + (rssMb(pid) ?? 0), 0)), 1000)
  await Promise.race([done, codes])
  const cpu1 = pids.map(cpuSeconds)
  const wall = (performance.now() - t0) / 1000
  clearInterval(sampler)
  const exitCodes = await codes
  const failed = exitCodes.filter((c) => c !== 0).length
  if (failed > 0) log(`${failed} of ${calls} agents-js jobs exited with an error`)
  const used = pids.reduce((a, _, i) => a + ((cpu1[i] ?? cpu0[i] ?? 0) - (cpu0[i] ?? 0)), 0)
  const lags = pids.map((pid) => {
    try {
      return JSON.parse(readFileSync(join(lagDir, `${pid}.json`), "utf8")) as { p99Ms: number; maxMs: number }
    } catch {
      return { p99Ms: Number.NaN, maxMs: Number.NaN }
    }
  })
  latencies.sort((a, b) => a - b)
  const rssMean = rss.reduce((a, b) => a + b, 0) / Math.max(1, rss.length)
  return {
    framework: "agents-js",
    vad: "silero",
    calls,
    processes: calls,
    cpuCores: wall > 0 ? used / wall : Number.NaN,
    rssMb: rssMean,
    rssPerCallMb: rssMean / calls,
    lagP99Ms: Math.max(...lags.map((l) => l.p99Ms)),
    lagMaxMs: Math.max(...lags.map((l) => l.maxMs)),
    turns: latencies.length,
    turnsExpected: calls * turns,
    latencyP50Ms: percentile(latencies, 0.5),
    latencyP99Ms: percentile(latencies, 0.99),
    underruns: 0
  }
}

// ---------------------------------------------------------------------------------------------
// Stepping
// ---------------------------------------------------------------------------------------------

interface Step extends StepResult {
  readonly loadAvg: number
  readonly addedP99Ms: number | null
  /** Why this step is past the limit, or undefined when it held. */
  readonly over: string | undefined
}

interface Series {
  readonly label: string
  readonly baseline: Step
  readonly steps: ReadonlyArray<Step>
  /** The last step that held. */
  readonly held: Step | undefined
  readonly callsPerCore: number | undefined
  /** From CPU alone: the most calls per core of a step where every reply came and nothing
   * underran, whatever its latency (what a loaded host's neighbours do not change much). */
  readonly cpuBound: { readonly calls: number; readonly callsPerCore: number } | undefined
}

const judge = (r: StepResult, baselineP99: number | null, loadAvg: number): Step => {
  const added = r.latencyP99Ms === null || baselineP99 === null ? null : r.latencyP99Ms - baselineP99
  const over = r.turns < r.turnsExpected
    ? `${r.turnsExpected - r.turns} replies missing`
    : r.underruns > 0
    ? `${r.underruns} underruns`
    : added === null
    ? "no turn measured"
    : added > settings.addedLimitMs
    ? `p99 +${added.toFixed(0)} ms`
    : undefined
  return { ...r, loadAvg, addedP99Ms: added, over }
}

const series = async (label: string, steps: ReadonlyArray<number>, run: (calls: number, baseline: boolean) => Promise<StepResult>): Promise<Series> => {
  log(`${label}: one-call baseline`)
  const base = await run(1, true)
  const baseline = judge(base, base.latencyP99Ms, load())
  log(`${label}: baseline p99 ${baseline.latencyP99Ms?.toFixed(0)} ms over ${baseline.turns} turns`)
  const done: Array<Step> = []
  for (const calls of steps) {
    const l0 = load()
    const step = judge(await run(calls, false), baseline.latencyP99Ms, Math.max(l0, load()))
    done.push(step)
    log(
      `${label}: ${calls} calls: ${step.cpuCores.toFixed(2)} cores, p99 ${step.latencyP99Ms?.toFixed(0)} ms (+${step.addedP99Ms?.toFixed(0)}), lag p99 ${
        step.lagP99Ms.toFixed(0)
      } ms, load ${step.loadAvg.toFixed(1)}: ${step.over ?? "held"}`
    )
    if (step.over !== undefined) break
  }
  const held = [...done].reverse().find((s) => s.over === undefined)
  const complete = done.filter((s) => s.turns >= s.turnsExpected && s.underruns === 0 && s.cpuCores > 0)
  const best = complete.reduce<Step | undefined>((a, s) => (a === undefined || s.calls / s.cpuCores > a.calls / a.cpuCores ? s : a), undefined)
  return {
    label,
    baseline,
    steps: done,
    held,
    callsPerCore: held === undefined ? undefined : held.calls / held.cpuCores,
    cpuBound: best === undefined ? undefined : { calls: best.calls, callsPerCore: best.calls / best.cpuCores }
  }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const f = (x: number | null | undefined, digits = 0) => (x === null || x === undefined || Number.isNaN(x) ? "–" : x.toFixed(digits))

const render = (all: ReadonlyArray<Series>, peerNote: string | undefined) => {
  const out: Array<string> = []
  out.push(`### Calls per core (${settings.short ? "short run" : "full run"})\n`)
  out.push(
    `${cpuModel}, ${cores} cores, Node ${process.version}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")} at the end. ` +
      `Each call: a ${settings.cycleMs / 1000} s cycle (a spoken question, then silence) at real time, answered by the chat mock's sentence through Cartesia's mock; ` +
      `Deepgram mock STT; minEndpointingDelay 500 ms. ${settings.windowS} s measured per step after ${settings.warmupS} s of warm-up; the baseline is one call over ${settings.baselineS} s. ` +
      `A step holds while the turn latency p99 stays within ${settings.addedLimitMs} ms of the baseline's, with no underrun and no reply missing.\n`
  )
  for (const s of all) {
    out.push(`\n**${s.label}** (baseline: one call, p50 ${f(s.baseline.latencyP50Ms)} ms, p99 ${f(s.baseline.latencyP99Ms)} ms over ${s.baseline.turns} turns)\n`)
    out.push("| calls | CPU (cores) | CPU per call | RSS | RSS per call | loop lag p99 / max | turns | latency p50 / p99 | added p99 | underruns | load | |")
    out.push("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for (const r of s.steps) {
      out.push(
        `| ${r.calls} | ${f(r.cpuCores, 2)} | ${f((100 * r.cpuCores) / r.calls, 2)}% | ${f(r.rssMb)} MB | ${f(r.rssPerCallMb, 1)} MB | ${f(r.lagP99Ms)} / ${
          f(r.lagMaxMs)
        } ms | ${r.turns}/${r.turnsExpected} | ${f(r.latencyP50Ms)} / ${f(r.latencyP99Ms)} ms | ${f(r.addedP99Ms)} ms | ${r.underruns} | ${f(r.loadAvg, 1)} | ${
          r.over ?? "held"
        } |`
      )
    }
    out.push(
      s.held === undefined
        ? `\n${s.label}: no step held.`
        : `\n${s.label}: ${s.held.calls} calls held on ${f(s.held.cpuCores, 2)} cores: **${f(s.callsPerCore)} calls per core**${
          s.steps.every((r) => r.over === undefined) ? " (the last step tried: the limit is further)" : ""
        }.`
    )
    if (s.cpuBound !== undefined) {
      out.push(`From CPU alone (a step where every reply came and nothing underran, its latency aside): ${f(s.cpuBound.callsPerCore)} calls per core (at ${s.cpuBound.calls} calls).`)
    }
  }
  const silero = all.find((s) => s.label.startsWith("baton") && s.label.includes("Silero"))
  const peer = all.find((s) => s.label.startsWith("agents-js"))
  const b = silero?.callsPerCore
  const p = peer?.callsPerCore
  const ratio = b !== undefined && p !== undefined ? b / p : undefined
  const webrtc = all.find((s) => s.label.startsWith("baton") && s.label.includes("WebRTC"))?.callsPerCore
  out.push(
    `\nTarget (capacity: baton at least 10× agents-js's calls per core, and at least 100 calls per core with Silero VAD; ${cpuModel}): ` +
      `${ratio === undefined ? `ratio not measured${peerNote ? ` (${peerNote})` : ""}` : `${ratio >= 10 ? "met" : "not met"}, ${ratio.toFixed(1)}×`} ` +
      `(baton ${f(b)} vs agents-js ${f(p)} calls per core, both with Silero); ` +
      `Silero: ${b === undefined ? "not measured" : `${b >= 100 ? "met" : "not met"}, ${f(b)} calls per core`}; WebRTC VAD: ${f(webrtc)} calls per core` +
      (silero?.cpuBound && peer?.cpuBound
        ? `; from CPU alone: baton ${f(silero.cpuBound.callsPerCore)} vs agents-js ${f(peer.cpuBound.callsPerCore)} (${(silero.cpuBound.callsPerCore / peer.cpuBound.callsPerCore).toFixed(1)}×).`
        : ".")
  )
  return out.join("\n") + "\n"
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

/** The options of a run: the short form, agents-js or not, a file for every step's numbers. */
export interface CapacityOptions {
  readonly short?: boolean
  readonly peer?: boolean
  readonly jsonFile?: string | undefined
}

/** Runs the bench; its Markdown (the tables and the Target line). Progress goes to stderr. */
export const benchCapacity = async (options: CapacityOptions = {}): Promise<string> => {
  settings = settingsOf(options.short ?? false)
  const withPeer = options.peer ?? true
  const jsonFile = options.jsonFile
  const tmp = mkdtempSync(join(os.tmpdir(), "baton-capacity-"))
  try {
    const caller = join(tmp, "caller.wav")
    const question = await Effect.runPromise(writeQuestion(caller))
    if (question.durationMs > settings.cycleMs - 1500) throw new Error(`CYCLE_MS ${settings.cycleMs} is too short for the question (${question.durationMs} ms)`)
    log(`${cpuModel}, ${cores} cores; load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}; caller: ${question.durationMs} ms, speech ends at ${question.speechEndMs} ms`)
    const mocks = await startMocks()
    const all: Array<Series> = []
    let peerNote: string | undefined
    try {
      for (const vad of settings.vads) {
        const label = `baton, ${vad === "webrtc" ? "WebRTC VAD" : "Silero VAD"}, one process`
        all.push(await series(label, settings.batonSteps, (calls, baseline) => batonStep(mocks, caller, vad, calls, baseline ? settings.baselineS : settings.windowS)))
      }
      if (!withPeer) peerNote = "--no-peer"
      else if (!peerInstalled()) peerNote = "bench/agents-js is not installed (npm ci --prefix bench/agents-js) or has no voice.mjs"
      else {
        const lagDir = join(tmp, "lag")
        const turnsOf = (s: number) => Math.max(2, Math.round(s / (settings.cycleMs / 1000)))
        all.push(
          await series("agents-js 1.9, Silero VAD, a job process per call", settings.peerSteps, (calls, baseline) =>
            peerStep(mocks, caller, question.durationMs, calls, turnsOf(baseline ? settings.baselineS : settings.windowS), lagDir))
        )
      }
    } finally {
      await mocks.stop()
    }
    const markdown = render(all, peerNote)
    if (jsonFile !== undefined) writeFileSync(jsonFile, JSON.stringify({ cpuModel, cores, node: process.version, settings, series: all }, null, 2))
    return markdown
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const jsonAt = args.indexOf("--json")
  process.stdout.write(
    await benchCapacity({
      short: args.includes("--short") || process.env["CAPACITY_SHORT"] === "1",
      peer: !args.includes("--no-peer"),
      jsonFile: jsonAt >= 0 ? args[jsonAt + 1] : undefined
    })
  )
  process.exit(0)
}
