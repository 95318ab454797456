/**
 * One step of the capacity bench for baton: N voice calls in this one process, each a
 * `VoicePipeline` session (its own VAD stream, its own Deepgram socket; Cartesia's socket and the
 * chat client shared, as a service shares its layers), on the mocks of bench/capacity/mocks-main.ts.
 *
 * Each call's caller is the same loop (bench/capacity/caller.ts): a spoken question, then silence
 * to the end of the cycle, pushed in 20 ms frames at real time as a transport would (frames due
 * while the event loop was busy arrive late, together). The calls start spread over one cycle.
 * After a warm-up, during the window, it measures:
 *
 *   turn latency   the end of the question's speech (its time on the caller's real-time clock)
 *                  to the first write of the reply's audio to the call's AudioOutput
 *   underruns      a reply's audio written after the audio written before it had finished
 *                  playing (the listener would hear a gap)
 *   CPU            process.cpuUsage over the window (all threads: onnxruntime's too)
 *   RSS            the mean over the window, less the process's RSS before any call started
 *   event-loop lag perf_hooks.monitorEventLoopDelay p99 and max
 *
 * Environment: CALLS, VAD (silero | webrtc), URLS (JSON from mocks-main), CALLER (a 16 kHz WAV),
 * CYCLE_MS, WARMUP_S, WINDOW_S; DEEPGRAM_CHUNK_MS (DeepgramStt's chunkMs, for A/B runs: 20 sends
 * every frame as before it gathered audio); SILERO_INFERENCE=event-loop (Silero's batches on the
 * main thread, for A/B runs; default: its worker thread). Prints one line `RESULT {json}` on stdout.
 */
import { Effect, Layer, Queue, Redacted, References, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { CartesiaTts } from "../../layers/cartesia/index.ts"
import { DeepgramStt } from "../../layers/deepgram/index.ts"
import { SileroVad, WebRtcVad } from "../../layers/local/index.ts"
import { OpenAiChat } from "../../layers/openai/index.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { AudioOutput, type AudioOutputService } from "../../services/AudioOutput.ts"
import * as Wav from "../../services/Wav.ts"
import { Agent } from "../../src/index.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { type CallerLoop, loopOf } from "./caller.ts"
import { type StepResult, percentile } from "./stats.ts"

const env = (name: string, dflt?: string) => {
  const v = process.env[name] ?? dflt
  if (v === undefined) throw new Error(`baton-main: ${name} is required`)
  return v
}
const calls = Number(env("CALLS"))
const vadName = env("VAD", "silero")
const urls = JSON.parse(env("URLS")) as { deepgram: string; cartesia: string; openai: string }
const cycleMs = Number(env("CYCLE_MS", "5000"))
const warmupMs = Number(env("WARMUP_S", "8")) * 1000
const windowMs = Number(env("WINDOW_S", "20")) * 1000
const FRAME_MS = 20

const vad = vadName === "webrtc"
  ? WebRtcVad.layer()
  : SileroVad.layer({ inference: process.env["SILERO_INFERENCE"] === "event-loop" ? "event-loop" : "worker" })
const engines = Layer.mergeAll(
  vad,
  DeepgramStt.layer({
    apiKey: Redacted.make("dg-test"),
    baseUrl: urls.deepgram,
    chunkMs: process.env["DEEPGRAM_CHUNK_MS"] === undefined ? undefined : Number(process.env["DEEPGRAM_CHUNK_MS"])
  }),
  CartesiaTts.layer({ apiKey: Redacted.make("ct-test"), voice: "a0e99841-438c-4a64-b679-ae501e7d6091", baseUrl: urls.cartesia }),
  OpenAiChat.layer({ baseUrl: urls.openai, apiKey: Redacted.make("sk-test"), model: "gpt-test" }).pipe(Layer.provide(FetchHttpClient.layer))
)

const agent = Agent.make({ name: "weather", instructions: "Answer about the weather." })

/** What one call saw: its replies' first audio, its underruns. */
interface CallStats {
  readonly latencies: Array<number>
  underruns: number
  replies: number
}

/** An AudioOutput that plays nothing but keeps a listener's clock: when the audio written so far ends. */
const listener = (stats: CallStats, measuring: () => boolean, onFirstAudio: () => void): AudioOutputService => {
  let speech: string | undefined
  let playsUntil = 0
  return {
    write: (pcm, rate, info) =>
      Effect.sync(() => {
        const now = performance.now()
        const ms = (pcm.byteLength / 2 / rate) * 1000
        if (info.speechId !== speech) {
          speech = info.speechId
          playsUntil = now + ms
          onFirstAudio()
          return
        }
        if (now > playsUntil) {
          if (measuring()) stats.underruns++
          playsUntil = now + ms
        } else playsUntil += ms
      }),
    clear: () =>
      Effect.sync(() => {
        speech = undefined
      })
  }
}

const main = Effect.gen(function*() {
  const caller: CallerLoop = loopOf(yield* Wav.readFile(env("CALLER")), cycleMs)
  const rssBefore = process.memoryUsage().rss
  const t0 = performance.now() + 200
  const windowStart = t0 + cycleMs + warmupMs
  const windowEnd = windowStart + windowMs
  const measuring = () => {
    const t = performance.now()
    return t >= windowStart && t < windowEnd
  }
  const feeds: Array<{ readonly queue: Queue.Queue<AudioFrame.AudioFrame, never>; readonly startAt: number; sent: number }> = []
  const all: Array<CallStats> = []
  for (let i = 0; i < calls; i++) {
    const startAt = t0 + (i * cycleMs) / calls
    const stats: CallStats = { latencies: [], underruns: 0, replies: 0 }
    all.push(stats)
    const queue = yield* Queue.unbounded<AudioFrame.AudioFrame, never>()
    const feed = { queue, startAt, sent: 0 }
    feeds.push(feed)
    /** The end of the caller's last question, on the real-time clock of the call. */
    const lastSpeechEnd = () => {
      const cycle = Math.floor((performance.now() - startAt - caller.speechEndMs) / cycleMs)
      return cycle < 0 ? undefined : startAt + cycle * cycleMs + caller.speechEndMs
    }
    const output = listener(stats, measuring, () => {
      const end = lastSpeechEnd()
      if (end === undefined || end < windowStart || end >= windowEnd) return
      stats.replies++
      stats.latencies.push(performance.now() - end)
    })
    yield* VoicePipeline.start({ agent, input: Stream.fromQueue(queue), voice: { minEndpointingDelayMs: 500 } }).pipe(
      Effect.provideService(AudioOutput, output)
    )
  }
  // The transport: every 10 ms, each call gets the frames its caller has said by now.
  const tick = setInterval(() => {
    const now = performance.now()
    for (const feed of feeds) {
      const due = Math.floor((now - feed.startAt) / FRAME_MS)
      while (feed.sent < due) {
        // a new frame each time, as a transport decodes each packet into its own buffer
        Queue.offerUnsafe(feed.queue, AudioFrame.make(caller.frameAt(feed.sent).slice(), 16000))
        feed.sent++
      }
    }
  }, 10)
  yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(tick)))

  yield* Effect.sleep(Math.max(0, windowStart - performance.now()))
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  const cpu0 = process.cpuUsage()
  const wall0 = performance.now()
  const rss: Array<number> = []
  while (performance.now() < windowEnd) {
    yield* Effect.sleep(1000)
    rss.push(process.memoryUsage().rss)
  }
  const cpu = process.cpuUsage(cpu0)
  const wall = performance.now() - wall0
  lag.disable()
  // replies to questions that ended in the window may come just after it
  yield* Effect.sleep(3000)

  const latencies = all.flatMap((s) => s.latencies).sort((a, b) => a - b)
  if (process.env["DEBUG"]) console.error(latencies.map((x) => x.toFixed(0)).join(" "))
  const expected = all.length * Math.floor(windowMs / cycleMs)
  const rssMean = rss.reduce((a, b) => a + b, 0) / Math.max(1, rss.length)
  const result: StepResult = {
    framework: "baton",
    vad: vadName,
    calls,
    processes: 1,
    cpuCores: (cpu.user + cpu.system) / 1000 / wall,
    rssMb: rssMean / 2 ** 20,
    rssPerCallMb: (rssMean - rssBefore) / 2 ** 20 / calls,
    lagP99Ms: lag.percentile(99) / 1e6,
    lagMaxMs: lag.max / 1e6,
    turns: latencies.length,
    turnsExpected: expected,
    latencyP50Ms: percentile(latencies, 0.5),
    latencyP99Ms: percentile(latencies, 0.99),
    underruns: all.reduce((a, s) => a + s.underruns, 0)
  }
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
}).pipe(
  Effect.scoped,
  Effect.provide(engines),
  Effect.provideService(References.MinimumLogLevel, "Error")
)

if (import.meta.main) {
  await Effect.runPromise(main)
  process.exit(0)
}
