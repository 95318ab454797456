/**
 * The OpenAI Realtime GA mock of the realtime benchmark, with a way to put its frame times on the
 * shared clock, run in a process of its own (`node bench/realtime.ts --mock-server`) and driven
 * from the runner over that process's stdin/stdout (clock skew, frame dump).
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect, type Scope } from "effect"
import * as OpenAIRealtimeMock from "../../../test/mocks/openai-realtime/index.ts"
import type { RecordedFrame } from "../../../test/mocks/shared/rules.ts"
import { abs, optionsFromEnv, type RealtimeBenchOptions } from "./options.ts"
import { scenarioScript } from "./scenario.ts"

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

export const framesOf = (record: MockRecord): ReadonlyArray<ConnFrames> =>
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

/**
 * The mock runs in a child process (`node bench/realtime.ts --mock-server`), so that neither side
 * shares its event loop with it: baton runs in this process, agents-js in another child. Lines on
 * its stdin: `ping <n>` (answered `{"pong":n,"at":...}`), `dump` (answered `{"dump":[ConnFrames]}`);
 * it exits when its stdin closes. Its first stdout line is `{"url":...,"baseUrl":...}`.
 */
export const mockServerMain = () => {
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

export interface MockProcess {
  readonly url: string
  readonly baseUrl: string
  /** Shared-clock difference (mock process minus this one), estimated from pings: ~0. */
  readonly skew: () => Promise<{ readonly skewMs: number; readonly pipeRttMs: number }>
  readonly dump: () => Promise<ReadonlyArray<ConnFrames>>
  readonly stop: () => void
}

/** The runner, bench/realtime.ts, which starts {@link mockServerMain} on `--mock-server`. */
const runnerFile = fileURLToPath(new URL("../../realtime.ts", import.meta.url))

export const startMockProcess = (o: RealtimeBenchOptions): Promise<MockProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [runnerFile, "--mock-server"], {
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
