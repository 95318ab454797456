/**
 * `npm run bench:voice` (node bench/voice-stages.ts): time per stage of the offline voice engines
 * on real audio, the numbers the cascaded pipeline's latency is built from:
 *   - flite: text in -> first frame out (it synthesizes a sentence whole, so this is the sentence).
 *   - pocketsphinx: feeding 20 ms frames (real-time factor), and endUtterance -> Final (the part
 *     that adds to the user's wait), with the event loop's worst delay while it decodes.
 *   - VAD: time per frame, WebRTC (20 ms frames) and Silero (32 ms windows).
 * Environment: N (10 sentences per stage). Prints a Markdown table; the machine's CPU is printed
 * with it because the numbers depend on it (and on what else runs there).
 */
import { Effect, Layer, Stream } from "effect"
import os from "node:os"
import { monitorEventLoopDelay } from "node:perf_hooks"
import * as FliteTts from "../layers/local/FliteTts.ts"
import * as PocketsphinxStt from "../layers/local/PocketsphinxStt.ts"
import * as SileroVad from "../layers/local/SileroVad.ts"
import * as WebRtcVad from "../layers/local/WebRtcVad.ts"
import * as AudioFrame from "../services/AudioFrame.ts"
import { Stt } from "../services/Stt.ts"
import { Tts } from "../services/Tts.ts"
import { Vad } from "../services/Vad.ts"

const n = Number(process.env["N"] ?? 10)
const sentences = [
  "Hello, I would like to book a table for two people.",
  "Please transfer me to the billing department.",
  "What time does the hotel restaurant open tomorrow?",
  "I need to change my reservation to next Friday evening.",
  "Can you tell me how much the parking costs per night?"
]

const stats = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!
  return { median: at(0.5), p95: at(0.95), max: s.at(-1)! }
}
const fmt = (x: number) => (x >= 10 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toFixed(3))

const rows: Array<[string, string, string, string, string]> = []
const row = (stage: string, unit: string, xs: ReadonlyArray<number>, note = "") => {
  const s = stats(xs)
  rows.push([stage, `${fmt(s.median)} ${unit}`, `${fmt(s.p95)} ${unit}`, `${fmt(s.max)} ${unit}`, note])
}

const program = Effect.gen(function*() {
  const tts = yield* Tts
  const stt = yield* Stt
  const audio: Array<AudioFrame.AudioFrame> = []
  const first: Array<number> = []
  const rtf: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    let t1 = 0
    const frames = yield* tts.synthesize(sentences[i % sentences.length]!).pipe(
      Stream.tap(() => Effect.sync(() => void (t1 ||= performance.now()))),
      Stream.runCollect
    )
    first.push(t1 - t0)
    const all = AudioFrame.concat(frames)
    rtf.push((performance.now() - t0) / AudioFrame.durationMs(all))
    audio.push(all)
  }
  row("flite: text -> first frame", "ms", first, `${fmt(AudioFrame.durationMs(audio[0]!) / 1000)} s sentence`)

  const feed: Array<number> = []
  const final: Array<number> = []
  const lag: Array<number> = []
  for (const utterance of audio) {
    yield* Effect.scoped(Effect.gen(function*() {
      const stream = yield* stt.stream()
      const histogram = monitorEventLoopDelay({ resolution: 5 })
      histogram.enable()
      const t0 = performance.now()
      for (const frame of AudioFrame.split(utterance, 20)) yield* stream.push(frame)
      feed.push((performance.now() - t0) / AudioFrame.durationMs(utterance))
      const t1 = performance.now()
      yield* stream.endUtterance
      yield* stream.events.pipe(Stream.filter((e) => e._tag === "Final"), Stream.runHead)
      final.push(performance.now() - t1)
      histogram.disable()
      lag.push(histogram.max / 1e6)
    }))
  }
  row("pocketsphinx: feeding 20 ms frames", "x real time", feed)
  row("pocketsphinx: endUtterance -> Final", "ms", final)
  row("event loop delay while decoding (max)", "ms", lag, "decoder calls on koffi's worker threads")

  const speech = AudioFrame.concat(audio)
  for (const [name, vadLayer, frameMs] of [["WebRTC VAD", WebRtcVad.layer(), 20], ["Silero VAD", SileroVad.layer(), 32]] as const) {
    const perFrame = yield* Effect.scoped(Effect.gen(function*() {
      const vad = yield* Vad
      const stream = yield* vad.stream()
      const frames = AudioFrame.split(speech, frameMs)
      const times: Array<number> = []
      for (const frame of frames) {
        const t0 = performance.now()
        yield* stream.push(frame)
        times.push((performance.now() - t0) * 1000)
      }
      return times
    })).pipe(Effect.provide(vadLayer))
    row(`${name}: per ${frameMs} ms frame`, "µs", perFrame, `${perFrame.length} frames`)
  }
})

const cpu = os.cpus()[0]?.model ?? "unknown CPU"
Effect.runPromise(program.pipe(Effect.provide(Layer.mergeAll(FliteTts.layer(), PocketsphinxStt.layer())))).then(() => {
  console.log(`Offline voice stages, N=${n}, ${cpu} × ${os.cpus().length}, load ${os.loadavg()[0]!.toFixed(1)} (shared machine)\n`)
  console.log("| stage | median | p95 | max | note |\n|---|---|---|---|---|")
  for (const r of rows) console.log(`| ${r.join(" | ")} |`)
}, (e) => {
  console.error(e)
  process.exitCode = 1
})
