/**
 * The agents-js side of the realtime benchmark: bench/agents-js/realtime.mjs in a child process,
 * against the same mock.
 */
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { VariantResult } from "./analysis.ts"
import type { RealtimeBenchOptions } from "./options.ts"
import type { RunSample } from "./sample.ts"

export type PeerOutcome =
  | { readonly ok: true; readonly meta: Record<string, unknown>; readonly results: ReadonlyArray<VariantResult> }
  | { readonly ok: false; readonly reason: string }

const peerDir = fileURLToPath(new URL("../../agents-js/", import.meta.url))
const peerScript = fileURLToPath(new URL("../../agents-js/realtime.mjs", import.meta.url))

export interface PeerOutput {
  readonly meta: Record<string, unknown>
  readonly runs: ReadonlyArray<RunSample>
}

export const runPeerChild = (baseUrl: string, o: RealtimeBenchOptions): Promise<PeerOutput | { readonly error: string }> =>
  new Promise((resolve) => {
    if (!existsSync(`${peerDir}node_modules/@livekit/agents-plugin-openai`)) {
      return resolve({ error: "bench/agents-js/node_modules lacks @livekit/agents-plugin-openai: run npm ci --prefix bench/agents-js" })
    }
    const child = spawn(process.execPath, [peerScript], {
      stdio: ["ignore", "pipe", "inherit"],
      env: {
        ...process.env,
        RT_MOCK_BASE_URL: baseUrl,
        RT_REPS: String(o.reps),
        RT_WARMUP: String(o.warmup),
        RT_TURNS: String(o.turns)
      }
    })
    const chunks: Array<Buffer> = []
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk))
    const killer = setTimeout(() => child.kill("SIGKILL"), 15 * 60_000)
    child.on("error", (error) => {
      clearTimeout(killer)
      resolve({ error: `the agents-js realtime bench could not start: ${error.message}` })
    })
    child.on("close", (code, signal) => {
      clearTimeout(killer)
      if (code !== 0) return resolve({ error: `the agents-js realtime bench ${signal ? `was killed (${signal})` : `exited with code ${code}`}; see its stderr` })
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")) as PeerOutput)
      } catch (error) {
        resolve({ error: `the agents-js realtime bench printed no JSON: ${String(error)}` })
      }
    })
  })
