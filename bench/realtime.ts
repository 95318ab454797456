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
 */
import { spawn } from "node:child_process"
import { existsSync, writeFileSync } from "node:fs"
import os from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"
import { Clock, Effect, type Scope } from "effect"
import { OpenAiRealtime } from "../layers/openai/OpenAiRealtime.ts"
import { AudioOutput, type AudioOutputService } from "../services/AudioOutput.ts"
import { type RealtimeConnection, RealtimeModel } from "../services/RealtimeModel.ts"
import { Agent, AgentSession, Handoff, Tool } from "../src/index.ts"
import * as OpenAIRealtimeMock from "../test/mocks/openai-realtime/index.ts"
import { Plan, type ScriptContext } from "../test/mocks/openai-realtime/index.ts"
import type { RecordedFrame } from "../test/mocks/shared/rules.ts"

// ---- settings ------------------------------------------------------------------------------------

export type ContextMode = "full" | "none"
export type ConnectionMode = "reuse" | "fresh"

export interface Variant {
  readonly name: string
  readonly connection: ConnectionMode
  readonly context: ContextMode
}

export const VARIANTS: ReadonlyArray<Variant> = [
  { name: "reuse + context copied", connection: "reuse", context: "full" },
  { name: "reuse + context empty", connection: "reuse", context: "none" },
  { name: "fresh + context copied", connection: "fresh", context: "full" },
  { name: "fresh + context empty", connection: "fresh", context: "none" }
]

export interface RealtimeBenchOptions {
  readonly reps: number
  readonly warmup: number
  readonly turns: number
  readonly connectMs: number
  readonly roundTripMs: number
  readonly firstAudioMs: number
  /** Also run the agents-js side (default true). */
  readonly peer: boolean
}

const envInt = (name: string, dflt: number): number => {
  const v = process.env[name]
  if (v === undefined || v === "") return dflt
  const n = Number(v)
  if (!Number.isFinite(n) || n < 0) throw new Error(`env ${name}=${v} is not a non-negative number`)
  return Math.floor(n)
}

export const optionsFromEnv = (overrides: Partial<RealtimeBenchOptions> = {}): RealtimeBenchOptions => ({
  reps: Math.max(1, envInt("RT_REPS", 10)),
  warmup: envInt("RT_WARMUP", 1),
  turns: envInt("RT_TURNS", 10),
  connectMs: envInt("RT_CONNECT_MS", 300),
  roundTripMs: envInt("RT_RTT_MS", 50),
  firstAudioMs: envInt("RT_FIRST_AUDIO_MS", 100),
  peer: true,
  ...overrides
})

/** One clock for this process, the child process and the mock's records. */
export const abs = (): number => performance.timeOrigin + performance.now()

const log = (...parts: ReadonlyArray<unknown>) => console.error("[realtime bench]", ...parts)

// ---- the scenario (shared with bench/agents-js/realtime.mjs: keep the texts in step) --------------

/** Marker of the greeter's onEnter reply. */
export const GREET = "greet the user and ask how you can help"
/** Marker of the weather agent's onEnter reply. */
export const INTRO = "introduce yourself as the weather specialist and ask what city"
export const WEATHER_QUESTION = "What's the weather like today?"
const greeterInstructions = (tag: string) =>
  `You are Kelly, a friendly greeter. Keep responses concise. When the user asks about weather, use the transfer_to_weather tool. [${tag}]`
const weatherInstructions = (tag: string) =>
  `You are Sunny, a weather specialist. Keep responses concise. Help the user with weather questions. [${tag}]`

/** The mock's model: stateless, decided by the instructions, the tools and the last item. */
const scenarioScript = (ctx: ScriptContext) => {
  if (ctx.instructions.includes(INTRO)) return Plan.say("Hi, I'm Sunny, the weather specialist. Which city?", { audioMs: 500 })
  if (ctx.instructions.includes(GREET)) return Plan.say("Hello, I'm Kelly. How can I help?", { audioMs: 500 })
  const last = ctx.lastItem
  const asksWeather = last?.type === "message" && last.role === "user" && (ctx.lastUserText ?? "").toLowerCase().includes("weather")
  if (asksWeather && ctx.tools.some((t) => t.name === "transfer_to_weather")) return Plan.call("transfer_to_weather", {})
  return Plan.say("Sure, noted.", { audioMs: 300 })
}

// ---- the mock, with a way to put its frame times on the shared clock ------------------------------

interface MockRecord {
  readonly mock: OpenAIRealtimeMock.OpenAIRealtimeMock
  /** Per connection: shared-clock time minus the mock's `atMs` (its `openedAt` on the shared clock). */
  readonly offsets: Map<number, number>
}

/**
 * Puts every mock connection's frame times on the shared clock. The mock stamps a frame with
 * `performance.now() - openedAt` and then, synchronously, notifies its waiters; a frame matcher
 * is one of them, so `abs() - atMs` seen there is `openedAt` on the shared clock, late by at most
 * what ran in between: the smallest value seen is kept.
 */
const watchOffsets = (mock: OpenAIRealtimeMock.OpenAIRealtimeMock, offsets: Map<number, number>) => {
  const hour = { timeoutMs: 3_600_000 }
  const watch = (conn: OpenAIRealtimeMock.OpenAIRealtimeConnection) => {
    let last = -1
    const see = (f: RecordedFrame) => {
      if (conn.closeInfo() !== undefined) return true
      if (f.direction === "out" && f.seq > last) {
        last = f.seq
        const candidate = abs() - f.atMs
        const known = offsets.get(conn.index)
        if (known === undefined || candidate < known) offsets.set(conn.index, candidate)
      }
      return false
    }
    return conn.awaitSent(see, hour).pipe(Effect.ignore)
  }
  return Effect.gen(function*() {
    for (let i = 0;; i++) {
      const conn = yield* mock.awaitConnection(i, hour)
      yield* Effect.forkChild(watch(conn), { startImmediately: true })
    }
  }).pipe(Effect.ignore)
}

const startMock = (o: RealtimeBenchOptions): Effect.Effect<MockRecord, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const offsets = new Map<number, number>()
    const mock = yield* OpenAIRealtimeMock.make({
      connectMs: o.connectMs,
      roundTripMs: o.roundTripMs,
      firstAudioMs: o.firstAudioMs,
      script: scenarioScript
    })
    yield* Effect.forkScoped(watchOffsets(mock, offsets))
    return { mock, offsets }
  })

/** A mock connection's frames on the shared clock, and what it was opened for. */
export interface ConnFrames {
  readonly index: number
  /** Instructions of its `session.update` frames that set some, in order. */
  readonly instructions: ReadonlyArray<string>
  readonly received: ReadonlyArray<{ readonly at: number; readonly type: string }>
  readonly sent: ReadonlyArray<{ readonly at: number; readonly type: string }>
}

const framesOf = (record: MockRecord): ReadonlyArray<ConnFrames> =>
  record.mock.connections().map((conn) => {
    const offset = record.offsets.get(conn.index) ?? Number.NaN
    const instructions = conn.received().flatMap((f) => {
      const json = f.type === "session.update" ? f.json as { session?: { instructions?: unknown } } : undefined
      return typeof json?.session?.instructions === "string" ? [json.session.instructions] : []
    })
    const map = (f: RecordedFrame) => ({ at: offset + f.atMs, type: f.type ?? "<invalid>" })
    return {
      index: conn.index,
      instructions,
      received: conn.received().map(map),
      sent: conn.sent().filter((f) => !f.noise).map(map)
    }
  })

// ---- baton: an instrumented RealtimeModel -------------------------------------------------------

export interface ClientOp {
  readonly at: number
  readonly conn: string
  readonly op: string
}

/**
 * The OpenAI provider, with every operation timestamped (right before its frame is written). With
 * `forbidReuse`, the model (and its connections) declare instructions and tools immutable, so the
 * pool cannot give the greeter's connection to the weather agent (their instructions and tools
 * differ: DESIGN rule 7) and opens a fresh one, seeded with the new agent's context.
 */
const instrument = (
  base: RealtimeModel["Service"],
  forbidReuse: boolean,
  ops: Array<ClientOp>
): RealtimeModel["Service"] => {
  const capabilities = forbidReuse ? { ...base.capabilities, mutableInstructions: false, mutableTools: false } : base.capabilities
  let n = 0
  return RealtimeModel.of({
    ...base,
    capabilities,
    connect: (config) =>
      Effect.gen(function*() {
        const id = `c${++n}`
        const stamp = (op: string) => ops.push({ at: abs(), conn: id, op })
        stamp(`connect() called (${config.instructions.startsWith("You are Sunny") ? "weather" : "greeter"}, ${config.chatContext.items.length} items)`)
        // Added before the provider's own finalizers: runs after them (socket closed).
        yield* Effect.addFinalizer(() => Effect.sync(() => stamp("closed")))
        const conn = yield* base.connect(config)
        yield* Effect.addFinalizer(() => Effect.sync(() => stamp("close started")))
        stamp("connect() returned (socket open, session.created, configuration acknowledged)")
        const timed = <A, E>(op: string, effect: Effect.Effect<A, E>) => Effect.suspend(() => (stamp(op), effect))
        const wrapped: RealtimeConnection = {
          ...conn,
          capabilities,
          updateSession: (changes) =>
            timed(`updateSession(${Object.keys(changes).join(", ")})`, conn.updateSession(changes)),
          updateChatContext: (context) => timed(`updateChatContext(${context.items.length} items)`, conn.updateChatContext(context)),
          sendToolOutput: (output) => timed("sendToolOutput", conn.sendToolOutput(output)),
          createResponse: (options) => timed("createResponse", conn.createResponse(options)),
          cancelResponse: timed("cancelResponse", conn.cancelResponse)
        }
        return wrapped
      })
  })
}

// ---- baton: one run -----------------------------------------------------------------------------

export interface RunSample {
  readonly variant: string
  readonly rep: number
  readonly warmup: boolean
  readonly tag: string
  /** Absolute times (ms on the shared clock). */
  readonly tTool: number
  readonly tHandoff: number
  readonly tFirstAudio: number
  /** Connections opened by the run. */
  readonly opened: number
  /** baton only: client operations, timestamped. */
  readonly ops?: ReadonlyArray<ClientOp>
}

/** A sub-millisecond Clock (event `at` values on the shared clock); sleeping as usual. */
const preciseClock = (base: Clock.Clock): Clock.Clock => ({
  currentTimeMillisUnsafe: abs,
  currentTimeMillis: Effect.sync(abs),
  currentTimeNanosUnsafe: () => base.currentTimeNanosUnsafe(),
  currentTimeNanos: base.currentTimeNanos,
  monotonicTimeNanosUnsafe: () => base.monotonicTimeNanosUnsafe(),
  monotonicTimeNanos: base.monotonicTimeNanos,
  sleep: (duration) => base.sleep(duration)
})

const batonRun = (url: string, variant: Variant, rep: number, warmup: boolean, turns: number) =>
  Effect.gen(function*() {
    const tag = `baton ${variant.connection}/${variant.context} #${rep}${warmup ? "w" : ""}`
    const ops: Array<ClientOp> = []
    const model = instrument(OpenAiRealtime.make({ url }), variant.connection === "fresh", ops)
    let tTool = Number.NaN
    let tFirstAudio = Number.NaN
    const audio: AudioOutputService = {
      write: (_pcm, _rate, info) =>
        Effect.sync(() => {
          if (info.agent === "weather" && Number.isNaN(tFirstAudio)) tFirstAudio = abs()
        }),
      clear: () => Effect.void
    }
    const weather: Agent.Agent = Agent.make({
      name: "weather",
      instructions: weatherInstructions(tag),
      tools: [
        Tool.make("lookup_weather", { description: "Weather for a city", handler: () => Effect.succeed("sunny") }),
        Tool.handoff("transfer_to_greeter", () => greeter)
      ],
      onEnter: Agent.reply({ instructions: INTRO }).pipe(Effect.asVoid)
    })
    const greeter: Agent.Agent = Agent.make({
      name: "greeter",
      instructions: greeterInstructions(tag),
      tools: [
        Tool.make("transfer_to_weather", {
          description: "Transfer to the weather agent when the user asks about weather.",
          handler: () =>
            Effect.sync(() => {
              tTool = abs()
              return Handoff.to(weather, { context: variant.context })
            })
        })
      ],
      onEnter: Agent.reply({ instructions: GREET }).pipe(Effect.asVoid)
    })
    const base = yield* Clock.Clock
    return yield* Effect.scoped(Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: greeter })
      yield* session.idle
      for (let i = 1; i <= turns; i++) yield* session.run(`Turn ${i}: tell me something nice.`)
      const result = yield* session.run(WEATHER_QUESTION)
      const handoff = result.sessionEvents.find((e) => e.type === "agent_handoff" && e.to === "weather")
      if (!handoff) return yield* Effect.fail(new Error(`${tag}: no handoff to weather`))
      if (Number.isNaN(tFirstAudio)) return yield* Effect.fail(new Error(`${tag}: the weather agent never spoke`))
      const stats = session.realtime()
      const expected = variant.connection === "reuse" ? 1 : 2
      if (stats?.opened !== expected) {
        return yield* Effect.fail(new Error(`${tag}: ${stats?.opened} connections opened, expected ${expected}`))
      }
      const sample: RunSample = {
        variant: variant.name,
        rep,
        warmup,
        tag,
        tTool,
        tHandoff: handoff.at,
        tFirstAudio,
        opened: stats.opened,
        ops
      }
      return sample
    })).pipe(
      Effect.provideService(RealtimeModel, model),
      Effect.provideService(AudioOutput, audio),
      Effect.provideService(Clock.Clock, preciseClock(base))
    )
  })

// ---- analysis -----------------------------------------------------------------------------------

export interface Analyzed extends RunSample {
  /** ready - T0: the first client frame the mock received for the new agent. */
  readonly handoffMs: number
  readonly firstAudioMs: number
  readonly toolToFirstAudioMs: number
  /** tool call -> T0. */
  readonly toolToHandoffMs: number
  /** T0 -> the mock receives the new agent's `response.create`. */
  readonly requestMs: number
  /** That `response.create` received -> the mock sends the first audio delta. */
  readonly serverMs: number
  /** The mock sends the first audio delta -> the framework's audio output has it. */
  readonly deliveryMs: number
  /** The frames on the new agent's connection from T0 to its first audio, relative to T0. */
  readonly timeline: ReadonlyArray<{ readonly at: number; readonly dir: "in" | "out" | "client"; readonly what: string }>
}

const analyze = (sample: RunSample, conns: ReadonlyArray<ConnFrames>, newAgentPrefix: string): Analyzed => {
  const mine = conns.filter((c) => c.instructions.some((i) => i.includes(`[${sample.tag}]`)))
  // A connection opened for the new agent: its first instructions are the new agent's.
  const fresh = mine.find((c) => c.instructions[0]?.startsWith(newAgentPrefix))
  const conn = fresh ?? mine[0]
  if (!conn) throw new Error(`${sample.tag}: no mock connection found for the run`)
  const t0 = sample.tHandoff
  const firstIn = fresh ? conn.received[0] : conn.received.find((f) => f.at > t0)
  if (!firstIn) throw new Error(`${sample.tag}: the mock received nothing for the new agent`)
  const firstAudioOut = conn.sent.find((f) => f.at > t0 && f.type === "response.output_audio.delta")
  const request = conn.received.find((f) => f.at > t0 && f.type === "response.create")
  if (!firstAudioOut || !request) throw new Error(`${sample.tag}: no response.create / audio for the new agent on the mock`)
  const until = sample.tFirstAudio
  // From the tool call on (on the old connection too, when a fresh one was opened).
  const from = Math.min(sample.tTool, t0) - 1
  const rel = (t: number) => t - t0
  const frames = (c: ConnFrames, label: string) => [
    ...c.received.filter((f) => f.at > from && f.at <= until).map((f) => ({ at: rel(f.at), dir: "in" as const, what: label + f.type })),
    ...c.sent.filter((f) => f.at > from && f.at <= firstAudioOut.at).map((f) => ({ at: rel(f.at), dir: "out" as const, what: label + f.type }))
  ]
  const timeline: Array<Analyzed["timeline"][number]> = [
    ...frames(conn, fresh ? "(new socket) " : ""),
    ...mine.filter((c) => c !== conn).flatMap((c) => frames(c, "(old socket) ")),
    ...(sample.ops ?? []).filter((op) => op.at > sample.tTool - 1 && op.at <= until).map((op) => ({ at: rel(op.at), dir: "client" as const, what: `${op.conn}: ${op.op}` })),
    { at: rel(sample.tTool), dir: "client", what: "tool transfer_to_weather runs" },
    { at: 0, dir: "client", what: "agent_handoff (T0)" },
    { at: rel(sample.tFirstAudio), dir: "client", what: "first audio delivered to the audio output" }
  ]
  timeline.sort((a, b) => a.at - b.at)
  return {
    ...sample,
    handoffMs: firstIn.at - t0,
    firstAudioMs: sample.tFirstAudio - t0,
    toolToFirstAudioMs: sample.tFirstAudio - sample.tTool,
    toolToHandoffMs: t0 - sample.tTool,
    requestMs: request.at - t0,
    serverMs: firstAudioOut.at - request.at,
    deliveryMs: sample.tFirstAudio - firstAudioOut.at,
    timeline
  }
}

// ---- statistics -----------------------------------------------------------------------------------

const quantile = (sorted: ReadonlyArray<number>, p: number): number | null => {
  if (sorted.length === 0) return null
  const h = (sorted.length - 1) * p
  const lo = Math.floor(h)
  const hi = Math.ceil(h)
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!)
}
const r1 = (x: number) => Math.round(x * 10) / 10

export interface Stat {
  readonly n: number
  readonly median: number | null
  readonly min: number | null
  readonly max: number | null
}
const stat = (xs: ReadonlyArray<number>): Stat => {
  const s = [...xs].sort((a, b) => a - b)
  const q = quantile(s, 0.5)
  return { n: s.length, median: q === null ? null : r1(q), min: s.length ? r1(s[0]!) : null, max: s.length ? r1(s.at(-1)!) : null }
}

export interface VariantResult {
  readonly variant: Variant
  readonly handoff: Stat
  readonly firstAudio: Stat
  readonly toolToFirstAudio: Stat
  readonly toolToHandoff: Stat
  readonly request: Stat
  readonly server: Stat
  readonly delivery: Stat
  /** The run whose first audio is the median one (its timeline goes in the report). */
  readonly typical: Analyzed | undefined
}

const summarizeVariants = (runs: ReadonlyArray<Analyzed>): ReadonlyArray<VariantResult> =>
  VARIANTS.map((variant) => {
    const mine = runs.filter((r) => r.variant === variant.name && !r.warmup)
    const byAudio = [...mine].sort((a, b) => a.firstAudioMs - b.firstAudioMs)
    return {
      variant,
      handoff: stat(mine.map((r) => r.handoffMs)),
      firstAudio: stat(mine.map((r) => r.firstAudioMs)),
      toolToFirstAudio: stat(mine.map((r) => r.toolToFirstAudioMs)),
      toolToHandoff: stat(mine.map((r) => r.toolToHandoffMs)),
      request: stat(mine.map((r) => r.requestMs)),
      server: stat(mine.map((r) => r.serverMs)),
      delivery: stat(mine.map((r) => r.deliveryMs)),
      typical: byAudio[Math.floor((byAudio.length - 1) / 2)]
    }
  })

// ---- the agents-js side -------------------------------------------------------------------------

export type PeerOutcome =
  | { readonly ok: true; readonly meta: Record<string, unknown>; readonly results: ReadonlyArray<VariantResult> }
  | { readonly ok: false; readonly reason: string }

const peerDir = fileURLToPath(new URL("./agents-js/", import.meta.url))
const peerScript = fileURLToPath(new URL("./agents-js/realtime.mjs", import.meta.url))

interface PeerOutput {
  readonly meta: Record<string, unknown>
  readonly runs: ReadonlyArray<RunSample>
}

const runPeerChild = (baseUrl: string, o: RealtimeBenchOptions): Promise<PeerOutput | { readonly error: string }> =>
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

// ---- report -------------------------------------------------------------------------------------

export interface RealtimeBenchResult {
  readonly machine: {
    readonly cpuModel: string
    readonly cores: number
    readonly node: string
    readonly platform: string
    readonly date: string
    /** 1-minute load average at the start and at the end (the machine may be shared). */
    readonly load: readonly [number, number]
    /** Clock skew of the mock process (subtracted from its frame times), and the pipe round trip. */
    readonly mockClock: { readonly skewMs: number; readonly pipeRttMs: number }
  }
  readonly options: RealtimeBenchOptions
  readonly targetMs: number
  readonly baton: ReadonlyArray<VariantResult>
  readonly agentsJs: PeerOutcome | { readonly skipped: string }
  /** The whole report (header, table, target line, timelines). */
  readonly markdown: string
}

const fmt = (s: Stat | undefined) => (s?.median === null || s === undefined ? "–" : s.median.toFixed(1))
const range = (s: Stat | undefined) => (s?.median === null || s === undefined ? "–" : `${s.min!.toFixed(1)}–${s.max!.toFixed(1)}`)

const timelineText = (run: Analyzed): string => {
  // Frames of one kind less than 3 ms apart are shown once (×n, with the time of the last), even
  // when frames of another kind interleave; item acknowledgements (added/done/deleted) are one kind.
  const kind = (e: Analyzed["timeline"][number]) =>
    e.dir === "out" && /^conversation\.item\.(added|done|deleted)$/.test(e.what) && !run.timeline.some((x) => x.dir === "out" && x.what === "response.created" && x.at < e.at)
      ? "conversation.item acknowledgements (added/done/deleted)"
      : e.what.replace(/^(\w+): send /, "$1: ")
  const groups: Array<{ at: number; last: number; dir: string; what: string; count: number }> = []
  for (const e of run.timeline) {
    const what = kind(e)
    const g = groups.slice(-6).find((x) => x.dir === e.dir && x.what === what && e.at - x.last < 3)
    if (g) {
      g.count++
      g.last = e.at
    } else groups.push({ at: e.at, last: e.at, dir: e.dir, what, count: 1 })
  }
  const dirText: Record<string, string> = { in: "mock <- client", out: "mock -> client", client: "client        " }
  const ms = (x: number) => `${x >= 0 ? "+" : "-"}${Math.abs(x).toFixed(1)}`
  return groups
    .map((g) =>
      `${ms(g.at).padStart(7)} ms  ${dirText[g.dir]}  ${g.what}${g.count > 1 ? ` ×${g.count} (to ${ms(g.last)})` : ""}`
    )
    .join("\n")
}

export const render = (r: Omit<RealtimeBenchResult, "markdown">): string => {
  const o = r.options
  const peer = "ok" in r.agentsJs && r.agentsJs.ok ? r.agentsJs.results : undefined
  const peerReason = "skipped" in r.agentsJs ? r.agentsJs.skipped : r.agentsJs.ok ? undefined : r.agentsJs.reason
  const lines: Array<string> = []
  lines.push(`## Realtime handoff (seed 001): ${o.turns} turns, then a handoff`)
  lines.push("")
  lines.push(
    `${r.machine.cpuModel}, ${r.machine.cores} cores, ${r.machine.platform}, Node ${r.machine.node}, ${r.machine.date}, ` +
      `load average ${r.machine.load[0].toFixed(2)} at the start, ${r.machine.load[1].toFixed(2)} at the end. ` +
      `The mock runs in a process of its own (clock skew ${r.machine.mockClock.skewMs.toFixed(3)} ms, corrected). ` +
      `OpenAI Realtime GA mock on 127.0.0.1: connect ${o.connectMs} ms, round trip ${o.roundTripMs} ms, first audio ${o.firstAudioMs} ms ` +
      `after response.created. Medians of ${o.reps} runs per variant (after ${o.warmup} warm-up), in ms.` +
      (peer ? ` agents-js: ${String((r.agentsJs as { meta: Record<string, unknown> }).meta.agents ?? "")}.` : "")
  )
  lines.push("")
  lines.push("| variant | baton handoff | baton first audio | agents-js handoff | agents-js first audio |")
  lines.push("|---|---:|---:|---:|---:|")
  r.baton.forEach((b, i) => {
    const p = peer?.[i]
    lines.push(`| ${b.variant.name} | ${fmt(b.handoff)} | ${fmt(b.firstAudio)} | ${p ? fmt(p.handoff) : "–"} | ${p ? fmt(p.firstAudio) : "–"} |`)
  })
  lines.push("")
  const reuse = r.baton.filter((b) => b.variant.connection === "reuse")
  const met = reuse.every((b) => b.firstAudio.median !== null && b.firstAudio.median <= r.targetMs)
  lines.push(
    `Target (reuse): first audio <= (${o.roundTripMs} + ${o.firstAudioMs}) ms + 10% = **${r.targetMs.toFixed(0)} ms**: ` +
      `baton ${reuse.map((b) => `${fmt(b.firstAudio)}`).join(" / ")} ms -> **${met ? "met" : "missed"}**` +
      (peer
        ? `; agents-js ${peer.filter((p) => p.variant.connection === "reuse").map((p) => fmt(p.firstAudio)).join(" / ")} ms.`
        : ".")
  )
  if (peerReason) lines.push(`\nagents-js columns empty: ${peerReason}`)
  lines.push("")
  lines.push("handoff = T0 -> the first client frame the mock receives for the new agent (reused connection: first frame after T0; fresh: first frame on the new socket). first audio = T0 -> the new agent's first audio frame handed to the framework's audio output. T0 = the `agent_handoff` event.")
  lines.push("")
  lines.push("Ranges (min–max) and tool call -> first audio (median):")
  lines.push("")
  lines.push("| variant | baton handoff | baton first audio | baton tool -> audio | agents-js handoff | agents-js first audio | agents-js tool -> audio |")
  lines.push("|---|---:|---:|---:|---:|---:|---:|")
  r.baton.forEach((b, i) => {
    const p = peer?.[i]
    lines.push(
      `| ${b.variant.name} | ${range(b.handoff)} | ${range(b.firstAudio)} | ${fmt(b.toolToFirstAudio)} | ${range(p?.handoff)} | ${range(p?.firstAudio)} | ${fmt(p?.toolToFirstAudio)} |`
    )
  })
  lines.push("")
  lines.push(
    "Where the time goes (medians): tool call -> T0; T0 -> the mock receives the new agent's `response.create` (what the framework waits for before it asks for the reply); that request -> the mock's first audio delta (round trip + first-audio delay + the mock's timer slack); that delta -> the framework's audio output."
  )
  lines.push("")
  lines.push("| variant | side | tool -> T0 | T0 -> response.create | response.create -> audio sent | audio sent -> delivered | T0 -> first audio |")
  lines.push("|---|---|---:|---:|---:|---:|---:|")
  r.baton.forEach((b, i) => {
    for (const [side, v] of [["baton", b], ["agents-js", peer?.[i]]] as const) {
      if (!v) continue
      lines.push(`| ${b.variant.name} | ${side} | ${fmt(v.toolToHandoff)} | ${fmt(v.request)} | ${fmt(v.server)} | ${fmt(v.delivery)} | ${fmt(v.firstAudio)} |`)
    }
  })
  for (const [side, results] of [["baton", r.baton], ["agents-js", peer]] as const) {
    if (!results) continue
    lines.push("")
    lines.push(`### ${side}: what the handoff waits for (the median run of each variant, times from T0)`)
    for (const v of results) {
      if (!v.typical) continue
      lines.push("")
      lines.push(`**${v.variant.name}** (${v.typical.tag}): handoff ${v.typical.handoffMs.toFixed(1)} ms, first audio ${v.typical.firstAudioMs.toFixed(1)} ms`)
      lines.push("")
      lines.push("```")
      lines.push(timelineText(v.typical))
      lines.push("```")
    }
  }
  return lines.join("\n") + "\n"
}

// ---- the mock in a process of its own ----------------------------------------------------------

/**
 * The mock runs in a child process (`node bench/realtime.ts --mock-server`), so that neither side
 * shares its event loop with it: baton runs in this process, agents-js in another child. Lines on
 * its stdin: `ping <n>` (answered `{"pong":n,"at":...}`), `dump` (answered `{"dump":[ConnFrames]}`);
 * it exits when its stdin closes. Its first stdout line is `{"url":...,"baseUrl":...}`.
 */
const mockServerMain = () => {
  const o = optionsFromEnv()
  const program = Effect.scoped(Effect.gen(function*() {
    const record = yield* startMock(o)
    const out = (value: unknown) => Effect.sync(() => void process.stdout.write(JSON.stringify(value) + "\n"))
    yield* out({ url: record.mock.url, baseUrl: record.mock.baseUrl })
    yield* Effect.callback<void>((resume) => {
      let buffer = ""
      process.stdin.setEncoding("utf8")
      process.stdin.on("data", (chunk: string) => {
        buffer += chunk
        for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
          const line = buffer.slice(0, nl).trim()
          buffer = buffer.slice(nl + 1)
          if (line.startsWith("ping ")) process.stdout.write(JSON.stringify({ pong: Number(line.slice(5)), at: abs() }) + "\n")
          else if (line === "dump") process.stdout.write(JSON.stringify({ dump: framesOf(record) }) + "\n")
        }
      })
      process.stdin.on("end", () => resume(Effect.void))
    })
  }))
  Effect.runPromise(program).then(
    () => process.stdout.write("", () => process.exit(0)),
    (error: unknown) => {
      console.error("[realtime mock] failed:", error)
      process.exit(1)
    }
  )
}

interface MockProcess {
  readonly url: string
  readonly baseUrl: string
  /** Shared-clock difference (mock process minus this one), estimated from pings: ~0. */
  readonly skew: () => Promise<{ readonly skewMs: number; readonly pipeRttMs: number }>
  readonly dump: () => Promise<ReadonlyArray<ConnFrames>>
  readonly stop: () => void
}

const thisFile = fileURLToPath(import.meta.url)

const startMockProcess = (o: RealtimeBenchOptions): Promise<MockProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [thisFile, "--mock-server"], {
      stdio: ["pipe", "pipe", "inherit"],
      env: {
        ...process.env,
        RT_CONNECT_MS: String(o.connectMs),
        RT_RTT_MS: String(o.roundTripMs),
        RT_FIRST_AUDIO_MS: String(o.firstAudioMs)
      }
    })
    const waiters: Array<(line: string) => boolean> = []
    let buffer = ""
    let started = false
    child.stdout!.setEncoding("utf8")
    child.stdout!.on("data", (chunk: string) => {
      buffer += chunk
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl)
        buffer = buffer.slice(nl + 1)
        const i = waiters.findIndex((w) => w(line))
        if (i >= 0) waiters.splice(i, 1)
      }
    })
    child.on("exit", (code) => {
      if (!started) reject(new Error(`the mock process exited (${code}) before it was ready`))
    })
    const next = <A>(pick: (value: any) => A | undefined): Promise<A> =>
      new Promise((done) =>
        waiters.push((line) => {
          const value = pick(JSON.parse(line))
          if (value === undefined) return false
          done(value)
          return true
        })
      )
    const send = (line: string) => child.stdin!.write(line + "\n")
    next((v) => (typeof v.url === "string" ? (v as { url: string; baseUrl: string }) : undefined)).then(({ baseUrl, url }) => {
      started = true
      resolve({
        url,
        baseUrl,
        skew: async () => {
          const samples: Array<{ skew: number; rtt: number }> = []
          for (let n = 0; n < 20; n++) {
            const sent = abs()
            const reply = next((v) => (v.pong === n ? (v.at as number) : undefined))
            send(`ping ${n}`)
            const at = await reply
            const back = abs()
            samples.push({ skew: at - (sent + back) / 2, rtt: back - sent })
          }
          samples.sort((a, b) => a.rtt - b.rtt)
          const best = samples[0]!
          return { skewMs: best.skew, pipeRttMs: best.rtt }
        },
        dump: () => {
          const reply = next((v) => (Array.isArray(v.dump) ? (v.dump as ReadonlyArray<ConnFrames>) : undefined))
          send("dump")
          return reply
        },
        stop: () => void child.stdin!.end()
      })
    }, reject)
  })

// ---- the benchmark ------------------------------------------------------------------------------

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
