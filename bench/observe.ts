/**
 * What observing a session costs: one seed 002 session (start, a note and a transfer in one
 * response, billing's greeting, close) on the scripted model, measured with no observer, with
 * the metrics observer, and with metrics + traces (the native tracer, nothing exported) + the
 * JSONL recorder (to a temporary directory). Prints a Markdown table (median and p90 per
 * session, ms) on stdout.
 *   npm run bench:observe            (N=300 sessions per row after WARMUP=50)
 */
import { mkdtempSync, rmSync } from "node:fs"
import os from "node:os"
import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Layer, Metric, Schema } from "effect"
import * as ScriptedModel from "../layers/testing/ScriptedModel.ts"
import { rules } from "../examples/parallel-handoff/script.ts"
import { Agent, AgentSession, Tool } from "../src/index.ts"
import * as Metrics from "../src/observe/Metrics.ts"
import * as Recorder from "../src/observe/Recorder.ts"
import * as Tracing from "../src/observe/Tracing.ts"
import * as SessionObserver from "../src/SessionObserver.ts"
import { envInt, log, summarize } from "./baton/stats.ts"

// The parallel-handoff example's agents, with a note tool that does not sleep.
const billing: Agent.Agent = Agent.make({
  name: "billing",
  instructions: "You handle billing. Use the notes in the conversation.",
  onEnter: Agent.reply({ instructions: "introduce yourself as billing and mention the note" }).pipe(Effect.asVoid)
})
const front: Agent.Agent = Agent.make({
  name: "front",
  instructions: "You answer the phone. Save notes and transfer billing questions.",
  tools: [
    Tool.make("save_note", { description: "Save a note", parameters: Schema.Struct({ text: Schema.String }), handler: ({ text }) => Effect.succeed(`Saved: ${text}`) }),
    Tool.handoff("transfer_to_billing", () => billing, { description: "Transfer to billing" })
  ]
})
const fast = rules
const N = envInt("N", 300)
const WARMUP = envInt("WARMUP", 50)

const once = Effect.scoped(Effect.gen(function*() {
  const started = performance.now()
  const session = yield* AgentSession.start({ agent: front })
  yield* session.run("I have a question about my bill")
  yield* session.close
  return performance.now() - started
}))

const measure = (name: string, layer: Layer.Layer<never>) =>
  Effect.gen(function*() {
    const times: Array<number> = []
    for (let i = 0; i < WARMUP + N; i++) {
      const ms = yield* once
      if (i >= WARMUP) times.push(ms)
    }
    const s = summarize(times, false)
    log(`${name}: median ${s.medianMs} ms`)
    return { name, ...s }
  }).pipe(Effect.provide(Layer.merge(ScriptedModel.layer(fast), layer)), Effect.provideService(Metric.MetricRegistry, new Map()))

const dir = mkdtempSync(`${os.tmpdir()}/baton-bench-observe-`)
const main = Effect.gen(function*() {
  const rows = [
    yield* measure("no observer", Layer.empty),
    yield* measure("metrics", SessionObserver.layer(Metrics.observer)),
    yield* measure(
      "metrics + traces + JSONL recorder",
      Recorder.layer(dir).pipe(
        Layer.provideMerge(SessionObserver.layer(Metrics.observer, Tracing.observer)),
        Layer.provide(NodeFileSystem.layer)
      )
    )
  ]
  const cpu = os.cpus()[0]?.model ?? "?"
  console.log(`Observing a session (seed 002 run, start to close), ${N} sessions per row, ${os.cpus().length} cores, ${cpu}, Node ${process.version}\n`)
  console.log("| observers | median ms | p90 ms |\n| --- | ---: | ---: |")
  for (const r of rows) console.log(`| ${r.name} | ${r.medianMs} | ${r.p90Ms} |`)
})

Effect.runPromise(main).finally(() => rmSync(dir, { recursive: true, force: true }))
