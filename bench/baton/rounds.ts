/**
 * The handoff measured in alternating rounds (baton, agents-js, baton, agents-js, ...), each side
 * in a fresh process, so that a noisy moment on a shared machine cannot decide the verdict: the
 * report prints every round's ratio and their min / median / max, and the target is judged on
 * the median.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import type { HandoffResult } from "./handoff.ts"
import { type PeerOutcome, type PeerResult, runPeer } from "./peer.ts"
import { log } from "./stats.ts"

export interface Round {
  readonly baton?: HandoffResult | undefined
  readonly peer?: Record<string, any> | undefined
  /** The peer's versions, as its JSON reports them. */
  readonly peerMeta?: PeerResult["meta"] | undefined
  readonly errors: ReadonlyArray<string>
}

const script = fileURLToPath(new URL("./handoff-main.ts", import.meta.url))

const runBaton = (): Promise<HandoffResult> =>
  new Promise((resolve, reject) => {
    // The verdict's rounds start as cold as agents-js's: no generic Effect warm-up first.
    const env = { ...process.env, EFFECT_WARMUP: "0" }
    const child = spawn(process.execPath, ["--expose-gc", script], { stdio: ["ignore", "pipe", "inherit"], env })
    const chunks: Array<Buffer> = []
    child.stdout.on("data", (c: Buffer) => chunks.push(c))
    child.on("error", reject)
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`baton's handoff round exited with code ${code}`))
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")) as HandoffResult)
      } catch (error) {
        reject(new Error(`baton's handoff round printed no valid JSON: ${String(error)}`))
      }
    })
  })

const peerHandoff = (outcome: PeerOutcome) => (outcome.ok ? outcome.result.handoff : undefined)

export const runRounds = async (rounds: number, withPeer: boolean): Promise<ReadonlyArray<Round>> => {
  const out: Array<Round> = []
  for (let i = 1; i <= rounds; i++) {
    log(`handoff round ${i} of ${rounds}: baton`)
    const errors: Array<string> = []
    const baton = await runBaton().catch((e: unknown) => {
      errors.push(String(e))
      return undefined
    })
    let peer: Record<string, any> | undefined
    let peerMeta: PeerResult["meta"] | undefined
    if (withPeer) {
      log(`handoff round ${i} of ${rounds}: agents-js`)
      const outcome = await runPeer({ SECTIONS: "handoff" })
      if (!outcome.ok) errors.push(outcome.reason)
      peer = peerHandoff(outcome)
      if (outcome.ok) peerMeta = outcome.result.meta
    }
    out.push({ baton, peer, peerMeta, errors })
  }
  return out
}

export interface RatioSpread {
  readonly ratios: ReadonlyArray<number>
  readonly min: number
  readonly median: number
  readonly max: number
}

/** agents-js ÷ baton per round for one measure; undefined when no round has both sides. */
export const spread = (
  rounds: ReadonlyArray<Round>,
  pick: (side: { readonly toolToReplyDone?: { readonly medianMs?: number | null } } | undefined) => number | null | undefined
): RatioSpread | undefined => {
  const ratios = rounds.flatMap((r) => {
    const b = pick(r.baton)
    const a = pick(r.peer)
    return b && a ? [a / b] : []
  })
  if (ratios.length === 0) return undefined
  const sorted = [...ratios].sort((x, y) => x - y)
  const mid = (sorted.length - 1) / 2
  return {
    ratios,
    min: sorted[0]!,
    median: (sorted[Math.floor(mid)]! + sorted[Math.ceil(mid)]!) / 2,
    max: sorted[sorted.length - 1]!
  }
}

/** The round whose cold ratio is the median one: its full table stands for the run. */
export const medianRound = (rounds: ReadonlyArray<Round>): Round | undefined => {
  const complete = rounds.filter((r) => r.baton && r.peer)
  if (complete.length === 0) return rounds.find((r) => r.baton) ?? rounds[0]
  const ratio = (r: Round) => (r.peer!.toolToReplyDone?.medianMs ?? 0) / r.baton!.toolToReplyDone.medianMs!
  const sorted = [...complete].sort((x, y) => ratio(x) - ratio(y))
  return sorted[Math.floor((sorted.length - 1) / 2)]
}
