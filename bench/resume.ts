/**
 * Issue 34's two measures, on the real service and the real stores.
 *
 * 1. Reconnect to resumed `ready`: `baton serve` (the demo model) journals SESSIONS (1,000) /ws
 *    sessions (a handoff and an answer each, then its socket cut), is killed with SIGKILL, and a second process
 *    on the same store resumes RESUMES of them one after another: the time from opening the
 *    WebSocket (`/ws?resume=<token>`) to its `ready` frame (`resumed: true`), which covers the
 *    handshake, the claim, reading and folding the journal and starting the session. p50 / p99 on
 *    SQLite (a temp file) and PostgreSQL (a private cluster with fsync on; skipped with the
 *    install line when missing). Target: p99 under 100 ms on SQLite.
 * 2. The handoff benchmark (bench/baton/handoff.ts) with the journal off and on SQLite
 *    (`BENCH_JOURNAL`), each round a fresh process, alternated for ROUNDS (3), next to the
 *    agents-js side run in the same rounds (SECTIONS=handoff): the 20x target against agents-js.
 * Prints Markdown tables on stdout, with the CPU model.
 *   npm run bench:resume     (SESSIONS=1000 RESUMES=200 ROUNDS=3 PEER=1)
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { accessToken, connect, type Service, startService } from "../examples/resume/service.ts"
import { type PostgresCluster, startPostgres } from "../test/setup/postgres.ts"
import { runPeer } from "./baton/peer.ts"
import { envInt, log, quantile } from "./baton/stats.ts"

const SESSIONS = envInt("SESSIONS", 1000)
const RESUMES = envInt("RESUMES", 200)
const ROUNDS = envInt("ROUNDS", 3)
const PEER = envInt("PEER", 1)
const SECRET = "bench-resume-shared-secret"

const ms = (x: number | null) => (x === null ? "n/a" : `${x.toFixed(1)} ms`)

/** SESSIONS sessions journaled by `service` (each asks for the weather and is handed to the weather
 * agent, who answers), each socket then cut: their resume tokens. */
const fill = async (service: Service): Promise<Array<string>> => {
  const tokens: Array<string> = []
  const BATCH = 25
  for (let i = 0; i < SESSIONS; i += BATCH) {
    const batch = await Promise.all(Array.from({ length: Math.min(BATCH, SESSIONS - i) }, async () => {
      const client = await connect(`${service.ws}/ws?token=${await accessToken(service, SECRET)}`)
      const ready = await client.waitFor((f) => f.type === "ready", "ready", 60_000)
      client.send({ type: "user_text", text: "What's the weather in Paris?" })
      await client.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "the weather agent's answer", 60_000)
      client.socket.terminate() // a cut: the session stays resumable
      return ready.resumeToken as string
    }))
    tokens.push(...batch)
    if ((i / BATCH) % 8 === 0) log(`  ${tokens.length} / ${SESSIONS} sessions journaled`)
  }
  return tokens
}

/** The reconnect → resumed `ready` times of RESUMES sessions on `service`, one at a time. */
const resumeTimes = async (service: Service, tokens: ReadonlyArray<string>) => {
  const times: Array<number> = []
  const refused: Array<string> = []
  for (let i = 0; i < RESUMES; i++) {
    const token = tokens[Math.floor((i * tokens.length) / RESUMES)]!
    const t0 = performance.now()
    const client = await connect(`${service.ws}/ws?resume=${encodeURIComponent(token)}`)
    const answer = await Promise.race([client.waitFor((f) => f.type === "ready", "ready", 30_000), client.closed])
    if (answer.type !== "ready" || answer.resumed !== true) {
      const id = token.split(".")[1]!
      const why = service.output().split("\n").find((line) => line.includes(`resume of ${id}`))
      refused.push(`${id}: ${JSON.stringify(answer)}${why ? ` (${JSON.parse(why).message})` : ""}`)
      continue
    }
    times.push(performance.now() - t0)
    client.socket.close(1000)
    await client.closed
  }
  if (refused.length > 0) log(`  ${refused.length} resume(s) refused:\n    ${refused.join("\n    ")}`)
  return { times: times.sort((a, b) => a - b), refused: refused.length }
}

const resumeRow = async (name: string, store: string) => {
  log(`resume on ${name}: journaling ${SESSIONS} sessions`)
  // a grace longer than the fill: every session is still resumable when the process is killed
  const first = await startService({ store, token: SECRET, resumeSeconds: 1800, env: { BATON_MAX_SESSIONS: String(SESSIONS + 10), BATON_TURNS_PER_S: "100" } })
  const tokens = await fill(first)
  await first.crash()
  const second = await startService({ store, token: SECRET })
  try {
    log(`resume on ${name}: ${RESUMES} reconnects after a SIGKILL`)
    const { times, refused } = await resumeTimes(second, tokens)
    return `| ${name} | ${SESSIONS} | ${times.length} | ${refused} | ${ms(quantile(times, 0.5))} | ${ms(quantile(times, 0.99))} | ${ms(times[times.length - 1]!)} |`
  } finally {
    second.child.kill("SIGKILL")
  }
}

interface HandoffJson {
  readonly toolToReplyDone: { readonly medianMs: number | null }
  readonly runToResolved: { readonly medianMs: number | null }
}

/** One round of bench/baton/handoff-main.ts in a fresh process, with `env`. */
const handoffRound = (env: Record<string, string>) =>
  new Promise<HandoffJson>((resolve, reject) => {
    const script = fileURLToPath(new URL("./baton/handoff-main.ts", import.meta.url))
    const child = spawn(process.execPath, ["--expose-gc", script], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } })
    let out = ""
    child.stdout.on("data", (d) => (out += String(d)))
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`handoff-main exited with ${code}`))
      resolve(JSON.parse(out.trim().split("\n").pop()!) as HandoffJson)
    })
  })

const handoffRows = async (folder: string) => {
  const rows: Array<string> = []
  for (let round = 1; round <= ROUNDS; round++) {
    log(`handoff round ${round}: journal off`)
    const off = await handoffRound({})
    log(`handoff round ${round}: journal on SQLite`)
    const on = await handoffRound({ BENCH_JOURNAL: `sqlite:${join(folder, `handoff-${round}.db`)}` })
    const peer = PEER ? await runPeer({ SECTIONS: "handoff" }) : undefined
    const peerMedian: number | null | undefined = peer?.ok ? peer.result.handoff?.toolToReplyDone?.medianMs : undefined
    const ratio = (baton: number | null) => (peerMedian && baton ? `${(peerMedian / baton).toFixed(1)}×` : "n/a")
    rows.push(
      `| round ${round} | ${ms3(off.toolToReplyDone.medianMs)} | ${ms3(on.toolToReplyDone.medianMs)} | ${ms3(peerMedian ?? null)} | ${ratio(off.toolToReplyDone.medianMs)} | ${ratio(on.toolToReplyDone.medianMs)} | ${ms3(off.runToResolved.medianMs)} | ${ms3(on.runToResolved.medianMs)} |`
    )
  }
  return rows
}

const ms3 = (x: number | null) => (x === null ? "n/a" : `${x.toFixed(3)} ms`)

const cpu = () => readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/)?.[1] ?? os.cpus()[0]?.model ?? "unknown CPU"

const folder = mkdtempSync(join(os.tmpdir(), "baton-bench-resume-"))
let postgres: PostgresCluster | undefined
try {
  const resume = [await resumeRow("SQLite (NORMAL)", `sqlite:${join(folder, "resume.db")}`)]
  try {
    postgres = await startPostgres()
    resume.push(await resumeRow("PostgreSQL (fsync on)", postgres.url))
  } catch (error) {
    resume.push(`| PostgreSQL | skipped: ${(error as Error).message.split("\n")[0]} | | | | | |`)
  }
  const handoff = await handoffRows(folder)
  console.log(`CPU: ${cpu()} (${os.cpus().length} cores), load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}, Node ${process.version}

Reconnect to resumed \`ready\` after a SIGKILL (the real service, /ws, one resume at a time):

| store | sessions in the store | resumed | refused | p50 | p99 | max |
|---|---|---|---|---|---|---|
${resume.join("\n")}

Handoff (tool entered → B's reply finished, median; \`run()\` → resolved, median), journal off vs on SQLite, each a fresh process, alternated:

| | baton, journal off | baton, journal on SQLite | agents-js | ratio off | ratio on | run() off | run() on |
|---|---|---|---|---|---|---|---|
${handoff.join("\n")}`)
} finally {
  postgres?.stop()
  rmSync(folder, { recursive: true, force: true })
}
