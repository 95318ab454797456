/**
 * `npm run bench:livekit` (also the `livekit` section of `npm run bench`): many LiveKit jobs in
 * one baton worker, next to what one job costs @livekit/agents, which runs each job in a process
 * of its own.
 *
 * baton: a worker takes N jobs from the fake dispatch server (test/mocks/livekit, real sockets
 * on 127.0.0.1, protobuf), each a session in an in-memory room (no audio; the scripted model),
 * where the user asks and the floor passes to a second agent who answers. Measured: the time
 * until every job has answered, heap and RSS per open job (after a GC), event-loop delay
 * p99 / max while it runs.
 * agents-js: a Node process that loads @livekit/agents (what each of its job processes does
 * before it can take a job): time to ready and its RSS, median of 5. Needs
 * bench/agents-js/node_modules (`npm run bench` installs it).
 */
import { Effect, Exit, Redacted, Scope } from "effect"
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import os from "node:os"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as Worker from "../layers/livekit/Worker.ts"
import * as ScriptedModel from "../layers/testing/ScriptedModel.ts"
import { Agent, Tool } from "../src/index.ts"
import * as FakeServer from "../test/mocks/livekit/FakeServer.ts"
import * as MemoryRoom from "../test/mocks/livekit/MemoryRoom.ts"

const KEY = "APIbench"
const SECRET = "bench-secret-of-at-least-thirty-two-chars"
const sizes = (process.env["JOBS"] ?? "100,1000").split(",").map(Number)

const weather = Agent.make({ name: "weather", instructions: "Weather.", onEnter: Agent.say("Sunny in Paris.").pipe(Effect.asVoid) })
const greeter = Agent.make({ name: "greeter", instructions: "Greet.", tools: [Tool.handoff("transfer_to_weather", () => weather)] })
const model = ScriptedModel.layer([{ when: { user: /weather/ }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } }], { record: false })

const gc = () => (globalThis as { gc?: () => void }).gc?.()
const until = (check: () => boolean) =>
  Effect.promise(async () => {
    while (!check()) await new Promise((r) => setTimeout(r, 5))
  })

const batonJobs = (n: number) =>
  Effect.gen(function*() {
    const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
    const rooms = yield* MemoryRoom.make
    const scope = yield* Scope.make()
    const worker = yield* Worker.make({
      url: server.url,
      apiKey: KEY,
      apiSecret: Redacted.make(SECRET),
      maxJobs: n * 2,
      maxLagMs: 60_000,
      job: { agent: greeter }
    }).pipe(Scope.provide(scope), Effect.provide(rooms.layer))
    yield* worker.registered
    gc()
    const heap0 = process.memoryUsage().heapUsed
    const rss0 = process.memoryUsage().rss
    const lag = monitorEventLoopDelay({ resolution: 5 })
    lag.enable()
    const t0 = performance.now()
    const ids = Array.from({ length: n }, (_, i) => `J_${i}`)
    yield* Effect.promise(() => Promise.all(ids.map((id) => server.offer(id).then(() => server.assign(id)))))
    yield* until(() => ids.every((id) => rooms.rooms.get(`room-${id}`)?.joined))
    yield* Effect.forEach(ids, (id) => rooms.rooms.get(`room-${id}`)!.chat("weather please"), { discard: true })
    yield* until(() => ids.every((id) => rooms.rooms.get(`room-${id}`)!.texts.some((t) => t.text === "Sunny in Paris.")))
    const allAnswered = performance.now() - t0
    lag.disable()
    gc()
    const heapPerJob = (process.memoryUsage().heapUsed - heap0) / n
    const rssPerJob = (process.memoryUsage().rss - rss0) / n
    for (const id of ids) server.terminate(id)
    yield* until(() => worker.state().jobs === 0)
    yield* Scope.close(scope, Exit.void)
    return { n, allAnswered, heapPerJob, rssPerJob, lagP99: lag.percentile(99) / 1e6, lagMax: lag.max / 1e6 }
  }).pipe(Effect.scoped, Effect.provide(model))

const agentsDir = fileURLToPath(new URL("./agents-js/", import.meta.url))

/** One process loading @livekit/agents, as each agents-js job process does: time to ready, RSS. */
const agentsProcess = () =>
  new Promise<{ readyMs: number; rss: number }>((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, ["--input-type=module", "-e", "await import('@livekit/agents'); console.log(process.memoryUsage().rss)"], {
      cwd: agentsDir,
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout.on("data", (d) => (out += String(d)))
    child.on("exit", (code) => (code === 0 ? resolve({ readyMs: performance.now() - t0, rss: Number(out.trim()) }) : reject(new Error(`exit ${code}`))))
  })

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(bytes < 1024 * 1024 ? 2 : 1)} MiB`
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`

export const benchLiveKit = async (): Promise<string> => {
  const rows: Array<string> = []
  for (const n of sizes) {
    const r = await Effect.runPromise(batonJobs(n))
    rows.push(`| baton, ${n.toLocaleString("en")} jobs in one worker | ${r.allAnswered.toFixed(0)} ms | ${kib(r.heapPerJob)} heap, ${kib(Math.max(0, r.rssPerJob))} RSS | ${r.lagP99.toFixed(1)} / ${r.lagMax.toFixed(1)} ms |`)
  }
  let peer = "| agents-js, one process per job | (not measured: run `npm run bench` once to install bench/agents-js) | | |"
  if (existsSync(`${agentsDir}node_modules/@livekit/agents`)) {
    const runs: Array<{ readyMs: number; rss: number }> = []
    for (let i = 0; i < 5; i++) runs.push(await agentsProcess())
    peer = `| agents-js, one process per job (its start: load @livekit/agents) | ${median(runs.map((r) => r.readyMs)).toFixed(0)} ms a process | ${mib(median(runs.map((r) => r.rss)))} RSS a process | (separate processes) |`
  }
  const cpu = os.cpus()[0]?.model.trim() ?? "unknown CPU"
  return [
    `LiveKit jobs: ${cpu}, ${os.cpus().length} cores, Node ${process.version}. baton: jobs from the fake dispatch server, in-memory rooms, a chat turn with a handoff each.`,
    "",
    "| | all jobs answered / start cost | memory per job | event-loop delay p99 / max |",
    "|---|---:|---:|---:|",
    ...rows,
    peer
  ].join("\n")
}

if (import.meta.main) console.log(await benchLiveKit())
