/**
 * The realtime benchmark: the mock process, baton's runs (round robin over the variants), the
 * agents-js side, then the analysis and the report.
 */
import os from "node:os"
import { Effect } from "effect"
import { analyze, summarizeVariants } from "./analysis.ts"
import { type ConnFrames, startMockProcess } from "./mock.ts"
import { log, optionsFromEnv, type RealtimeBenchOptions, VARIANTS } from "./options.ts"
import { type PeerOutput, runPeerChild } from "./peer.ts"
import { type RealtimeBenchResult, render } from "./report.ts"
import { batonRun, type RunSample } from "./sample.ts"

/** Runs baton (and, unless `peer: false`, agents-js) through the four variants. */
export const benchRealtime = (overrides: Partial<RealtimeBenchOptions> = {}): Effect.Effect<RealtimeBenchResult, Error> =>
  Effect.gen(function*() {
    const o = optionsFromEnv(overrides)
    const loadAtStart = os.loadavg()[0] ?? 0
    const mock = yield* Effect.tryPromise({ try: () => startMockProcess(o), catch: (e) => new Error(`mock: ${String(e)}`) })
    return yield* Effect.gen(function*() {
      const clock = yield* Effect.promise(() => mock.skew())
      log(`mock process at ${mock.url} (clock skew ${clock.skewMs.toFixed(3)} ms, pipe round trip ${clock.pipeRttMs.toFixed(3)} ms)`)
      log(`baton: ${VARIANTS.length} variants x (${o.warmup} warm-up + ${o.reps}) runs`)
      const samples: Array<RunSample> = []
      for (let rep = 0; rep < o.warmup + o.reps; rep++) {
        for (const variant of VARIANTS) {
          const warmup = rep < o.warmup
          const sample = yield* batonRun(mock.url, variant, rep, warmup, o.turns)
          samples.push(sample)
        }
        log(`baton: round ${rep + 1}/${o.warmup + o.reps} done`)
      }

      let peerOut: PeerOutput | { readonly error: string } | undefined
      if (o.peer) {
        log(`agents-js: running bench/agents-js/realtime.mjs against ${mock.baseUrl}`)
        peerOut = yield* Effect.promise(() => runPeerChild(mock.baseUrl, o))
      }
      const unskew = (c: ConnFrames): ConnFrames => ({
        ...c,
        received: c.received.map((f) => ({ ...f, at: f.at - clock.skewMs })),
        sent: c.sent.map((f) => ({ ...f, at: f.at - clock.skewMs }))
      })
      const conns = (yield* Effect.promise(() => mock.dump())).map(unskew)
      const baton = summarizeVariants(samples.map((s) => analyze(s, conns, "You are Sunny")))

      let agentsJs: RealtimeBenchResult["agentsJs"] = { skipped: "run without the agents-js side (--no-peer)" }
      if (peerOut !== undefined) {
        if ("error" in peerOut) {
          agentsJs = { ok: false, reason: peerOut.error }
        } else {
          try {
            const runs = peerOut.runs.map((s) => analyze(s, conns, "You are Sunny"))
            agentsJs = { ok: true, meta: peerOut.meta, results: summarizeVariants(runs) }
          } catch (error) {
            agentsJs = { ok: false, reason: `its runs could not be matched with the mock's records: ${String(error)}` }
          }
        }
      }
      const cpus = os.cpus()
      const partial = {
        machine: {
          cpuModel: cpus[0]?.model.trim() ?? "unknown CPU",
          cores: cpus.length,
          node: process.version,
          platform: `${process.platform}-${process.arch}`,
          date: new Date().toISOString(),
          load: [loadAtStart, os.loadavg()[0] ?? 0] as const,
          mockClock: clock
        },
        options: o,
        targetMs: (o.roundTripMs + o.firstAudioMs) * 1.1,
        baton,
        agentsJs
      }
      return { ...partial, markdown: render(partial) }
    }).pipe(
      Effect.ensuring(Effect.sync(() => mock.stop())),
      Effect.mapError((e) => (e instanceof Error ? e : new Error(String(e))))
    )
  })

/** {@link benchRealtime} as a Promise (for a runner that is not an Effect program). */
export const runRealtimeBench = (overrides: Partial<RealtimeBenchOptions> = {}): Promise<RealtimeBenchResult> =>
  Effect.runPromise(benchRealtime(overrides))
