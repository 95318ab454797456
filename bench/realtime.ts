/**
 * Realtime handoff benchmark (seed 001's table): ten conversation turns with a greeter on an
 * OpenAI Realtime connection, then a handoff (tool `transfer_to_weather`) to a weather agent
 * whose `onEnter` asks for a reply. Four variants: the connection reused or a fresh one, the
 * conversation copied to the new agent ("full") or not ("none").
 *
 * Everything runs against the OpenAI Realtime GA mock of test/mocks/openai-realtime (127.0.0.1,
 * real timers; connect 300 ms, round trip 50 ms, 100 ms from `response.created` to the first
 * audio), which this runner starts in a process of its own (`--mock-server`), so that neither
 * side shares an event loop with it. baton runs in this process; the agents-js side
 * (bench/agents-js/realtime.mjs, the `@livekit/agents-plugin-openai` RealtimeModel) runs in a
 * child process against the same mock, whose URL it gets in `RT_MOCK_BASE_URL`. Details and
 * results: bench/realtime/README.md.
 *
 *   node bench/realtime.ts               # both sides, Markdown on stdout, progress on stderr
 *   node bench/realtime.ts --no-peer     # baton only
 *   node bench/realtime.ts --json FILE   # also the raw numbers
 *
 * Environment: RT_REPS (10) measured runs per variant after RT_WARMUP (1), RT_TURNS (10),
 * RT_CONNECT_MS (300), RT_RTT_MS (50), RT_FIRST_AUDIO_MS (100). Runs are interleaved across the
 * variants (round robin) so that drift hits all of them alike.
 *
 * What is timed (all on one clock, `performance.timeOrigin + performance.now()`, shared with the
 * child process and with the mock's frame records):
 *
 * - T0 `handoff`: baton's `agent_handoff` event (its `at`, from a sub-millisecond Clock given to
 *   the session); agents-js: its `agent_handoff` conversation item event.
 * - `ready`: the first client frame the mock receives for the new agent: on the reused
 *   connection, the first one after T0; on a fresh connection, its first frame.
 * - `first audio`: the new agent's first audio frame delivered to the framework's audio output
 *   (baton: `AudioOutput.write`; agents-js: `AudioOutput.captureFrame`).
 *
 * Table: handoff = ready - T0; first audio = first audio - T0. Medians of RT_REPS runs.
 * Target (issue): with reuse, first audio <= (round trip + first audio delay) * 1.1.
 *
 * The pieces live in bench/baton/realtime/: options.ts (variants, RT_* settings, the shared
 * clock), scenario.ts, mock.ts (the mock process and its clock sync), sample.ts (one baton run),
 * analysis.ts (times and statistics), peer.ts (the agents-js child), report.ts (Markdown) and
 * bench.ts (the benchmark). This file is the entry point: the CLI and the public exports.
 */
import { writeFileSync } from "node:fs"
import { pathToFileURL } from "node:url"
import { Effect } from "effect"
import { benchRealtime } from "./baton/realtime/bench.ts"
import { mockServerMain } from "./baton/realtime/mock.ts"
import { log } from "./baton/realtime/options.ts"

export type { Analyzed, Stat, VariantResult } from "./baton/realtime/analysis.ts"
export { benchRealtime, runRealtimeBench } from "./baton/realtime/bench.ts"
export type { ConnFrames } from "./baton/realtime/mock.ts"
export {
  abs,
  type ConnectionMode,
  type ContextMode,
  optionsFromEnv,
  type RealtimeBenchOptions,
  type Variant,
  VARIANTS
} from "./baton/realtime/options.ts"
export type { PeerOutcome } from "./baton/realtime/peer.ts"
export { type RealtimeBenchResult, render } from "./baton/realtime/report.ts"
export type { ClientOp, RunSample } from "./baton/realtime/sample.ts"
export { GREET, INTRO, WEATHER_QUESTION } from "./baton/realtime/scenario.ts"

// ---- `node bench/realtime.ts` -------------------------------------------------------------------

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain && process.argv.includes("--mock-server")) {
  mockServerMain()
} else if (isMain) {
  const args = process.argv.slice(2)
  const jsonAt = args.indexOf("--json")
  const jsonFile = jsonAt >= 0 ? args[jsonAt + 1] : undefined
  const t0 = performance.now()
  Effect.runPromise(benchRealtime({ peer: !args.includes("--no-peer") })).then(
    (result) => {
      process.stdout.write(result.markdown)
      if (jsonFile) {
        const { markdown: _markdown, ...raw } = result
        writeFileSync(jsonFile, JSON.stringify(raw, null, 2) + "\n")
        log(`raw numbers written to ${jsonFile}`)
      }
      log(`done in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
      process.stdout.write("", () => process.exit(0))
    },
    (error: unknown) => {
      log("FAILED:", error instanceof Error ? (error.stack ?? error.message) : error)
      process.exit(1)
    }
  )
}
