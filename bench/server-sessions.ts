/**
 * Sessions held by one service process over its WebSocket endpoint (issue 14): N clients (100,
 * then 1,000; SERVER_SESSIONS=100,1000) connect to /ws on 127.0.0.1, each takes two text turns, the
 * second a handoff whose new agent speaks, and stays connected. Prints event-loop lag p99/max
 * while they talk (the clients run in this same process, so the figure includes their work),
 * heap per open session (after gc) and the turns per second reached.
 *
 *   npx node --expose-gc bench/server-sessions.ts
 */
import { monitorEventLoopDelay } from "node:perf_hooks"
import os from "node:os"
import { Effect } from "effect"
import WebSocket from "ws"
import * as ScriptedModel from "../layers/testing/ScriptedModel.ts"
import { Agent, Handoff, Tool } from "../src/index.ts"
import { start } from "../test/server/harness.ts"
import { gcNow } from "./baton/stats.ts"

const weather = Agent.make({ name: "weather", instructions: "weather", onEnter: Agent.reply({ instructions: "greet" }).pipe(Effect.asVoid) })
const front = Agent.make({
  name: "front",
  instructions: "front",
  tools: [Tool.make("transfer", { description: "to weather", handler: () => Effect.succeed(Handoff.to(weather)) })]
})
const model = ScriptedModel.layer([
  { when: { user: "weather" }, reply: { toolCalls: [{ name: "transfer" }] } },
  { when: { instructions: "greet" }, reply: { text: "Weather desk, sunny today." } },
  { when: { user: "hello" }, reply: { text: "Hello from the front desk." } }
], { record: false })

/** Resolves when `count` speech_finished frames have arrived. */
const client = (url: string) =>
  new Promise<{ socket: WebSocket; turn: (text: string, speeches: number) => Promise<number> }>((resolve, reject) => {
    const socket = new WebSocket(url)
    let finished = 0
    let waiter: (() => void) | undefined
    socket.on("message", (data, binary) => {
      if (binary) return
      if (String(data).includes("\"speech_finished\"")) {
        finished++
        waiter?.()
      }
    })
    socket.once("open", () =>
      resolve({
        socket,
        turn: (text, speeches) =>
          new Promise((done) => {
            const t0 = performance.now()
            const target = finished + speeches
            waiter = () => {
              if (finished >= target) done(performance.now() - t0)
            }
            socket.send(JSON.stringify({ type: "user_text", text }))
          })
      })
    )
    socket.once("error", reject)
  })

const measure = (n: number) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start(front, model, { maxSessions: n + 10 })
    yield* Effect.promise(() => gcNow())
    const heap0 = process.memoryUsage().heapUsed
    const lag = monitorEventLoopDelay({ resolution: 1 })
    lag.enable()
    const t0 = performance.now()
    const turns: Array<number> = []
    const clients = yield* Effect.promise(() =>
      Promise.all(Array.from({ length: n }, async () => {
        const c = await client(`${server.ws}/ws`)
        turns.push(await c.turn("hello", 1))
        turns.push(await c.turn("weather please", 1))
        return c
      }))
    )
    const wall = performance.now() - t0
    lag.disable()
    yield* Effect.promise(() => gcNow())
    const heapPerSession = (process.memoryUsage().heapUsed - heap0) / n
    for (const c of clients) c.socket.close()
    turns.sort((a, b) => a - b)
    return {
      n,
      open: server.state.registry.open(),
      turnsPerSecond: Math.round(turns.length / (wall / 1000)),
      turnP50: turns[Math.floor(turns.length / 2)]!,
      turnP99: turns[Math.floor(turns.length * 0.99)]!,
      lagP99: lag.percentile(99) / 1e6,
      lagMax: lag.max / 1e6,
      heapKiBPerSession: heapPerSession / 1024
    }
  }))

const sizes = (process.env.SERVER_SESSIONS ?? "100,1000").split(",").map(Number)
const rows: Array<string> = []
for (const n of sizes) {
  const r = await Effect.runPromise(measure(n))
  rows.push(`| ${n.toLocaleString("en-US")} | ${r.open} | ${r.turnsPerSecond} | ${r.turnP50.toFixed(1)} / ${r.turnP99.toFixed(1)} ms | ${r.lagP99.toFixed(1)} / ${r.lagMax.toFixed(1)} ms | ${r.heapKiBPerSession.toFixed(1)} KiB |`)
  console.error(`[server bench] ${n} sessions done`)
}
console.log(`Sessions over /ws in one process (${os.cpus()[0]?.model.trim()}, ${os.cpus().length} cores, Node ${process.version}); clients in the same process.\n`)
console.log("| sessions | open at the end | turns/s | turn p50 / p99 | event-loop lag p99 / max | heap per session |")
console.log("|---:|---:|---:|---:|---:|---:|")
for (const r of rows) console.log(r)
process.exit(0)
