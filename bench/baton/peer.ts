/**
 * The agents-js side: bench/agents-js/bench.mjs run as a child process with this same Node
 * binary and --expose-gc. It inherits the environment, so N, WARMUP, LIFECYCLE_N, IDLE_SESSIONS,
 * SECTIONS, ... apply to both sides. Its progress lines pass through to our stderr; its stdout is
 * one JSON object.
 */
import { spawn, spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { log } from "./stats.ts"

export type PeerOutcome =
  | { readonly ok: true; readonly result: PeerResult; readonly installed: boolean }
  | { readonly ok: false; readonly reason: string; readonly installed: boolean }

/** The fields of bench/agents-js's JSON that the report reads (see its README). */
export interface PeerResult {
  readonly meta: { readonly agentsVersion: string | null; readonly rtcNodeVersion: string | null; readonly node: string }
  readonly handoff?: Record<string, any>
  readonly lifecycle?: Record<string, any>
  readonly idleHeap?: Record<string, any>
}

const dir = fileURLToPath(new URL("../agents-js/", import.meta.url))
const script = fileURLToPath(new URL("../agents-js/bench.mjs", import.meta.url))
/** The peer's own hard stop is 15 min; this is a backstop. */
const KILL_AFTER_MS = 16 * 60_000

const install = (): string | undefined => {
  log(`bench/agents-js/node_modules is missing: running npm ci --prefix bench/agents-js (about 25 s)`)
  const r = spawnSync("npm", ["ci", "--prefix", dir, "--no-audit", "--no-fund"], { stdio: ["ignore", 2, 2] })
  if (r.error) return `npm ci --prefix bench/agents-js could not run: ${r.error.message}`
  if (r.status !== 0) return `npm ci --prefix bench/agents-js failed (exit ${r.status ?? r.signal}); see its output above, and remove bench/agents-js/node_modules before retrying`
  return undefined
}

/** Runs the agents-js bench once; `env` overrides variables (SECTIONS for one section). */
export const runPeer = async (env: Record<string, string> = {}): Promise<PeerOutcome> => {
  let installed = false
  if (!existsSync(`${dir}node_modules`)) {
    const failure = install()
    if (failure) return { ok: false, reason: failure, installed }
    installed = true
  }
  log(`running the agents-js side: ${process.execPath} --expose-gc bench/agents-js/bench.mjs`)
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--expose-gc", script], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } })
    const chunks: Array<Buffer> = []
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk))
    const killer = setTimeout(() => child.kill("SIGKILL"), KILL_AFTER_MS)
    child.on("error", (error) => {
      clearTimeout(killer)
      resolve({ ok: false, reason: `the agents-js bench could not start: ${error.message}`, installed })
    })
    child.on("close", (code, signal) => {
      clearTimeout(killer)
      if (code !== 0) {
        const how = signal ? `was killed (${signal})` : `exited with code ${code}`
        return resolve({ ok: false, reason: `the agents-js bench ${how}; its reason is on stderr above`, installed })
      }
      try {
        resolve({ ok: true, result: JSON.parse(Buffer.concat(chunks).toString("utf8")) as PeerResult, installed })
      } catch (error) {
        resolve({ ok: false, reason: `the agents-js bench printed no valid JSON: ${String(error)}`, installed })
      }
    })
  })
}
