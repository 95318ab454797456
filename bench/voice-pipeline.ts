/**
 * `npm run bench:voice-pipeline` (also the `voice` section of `npm run bench`): the cascaded
 * pipeline on real audio, offline (WebRTC VAD, pocketsphinx, flite; a scripted model answering
 * at once, so the LLM stage is baton's own overhead). The caller's question is streamed in
 * real time in 20 ms frames; from the end of their speech, each stage is timed:
 *
 *   VAD end        end of speech -> the VAD says it ended (the utterance goes to the STT)
 *   STT final      -> pocketsphinx's final transcript (a reply may start now: preemptive generation)
 *   turn end       -> the endpointing silence is over and the user's turn is recorded
 *   LLM first tok  -> the agent starts speaking (first text delta)
 *   TTS first      -> the first audio frame handed to the output
 *
 * baton's own share of a turn: everything on the turn's path that is neither an engine working
 * nor the endpointing silence: (1) from what let the turn end (the final transcript, or the frame
 * that ended the silence, whichever came last) to the user's turn recorded, (2) from there to the
 * agent speaking (the scripted model answers at once, so this is baton's), (3) from the agent
 * speaking, or the TTS's first frame if that came later, to the first audio handed to the output.
 * Printed as p50/p99 over all the turns (10 by default: p99 is the worst) with the CPU model;
 * issue 36's target is under 5 ms p99.
 *
 * The voice options are the pipeline's defaults (adaptive endpointing, preemptive generation);
 * ENDPOINTING=<ms> sets minEndpointingDelayMs (and the longest silence to it: no adaptation) and
 * PREEMPTIVE=0 turns preemptive generation off, to compare. HANGOVER=1 keeps WebRTC VAD's own
 * hangover and SECOND_PASS=1 pocketsphinx's second pass (the engines' settings before issue 36's
 * offline work), to compare on the same machine at the same load; FLITE_ENGINE=program spawns the
 * flite program per sentence (the engine before libflite ran in process).
 * Twice: a direct answer, and an answer after a handoff (the greeter transfers, the new agent
 * answers on entering). Environment: N (runs per scenario, default 5), WARMUP (runs per scenario
 * before those, not measured; default 1). Prints a Markdown table
 * with the CPU model. agents-js's voice pipeline is not run here: it needs its STT/TTS plugins'
 * servers (Deepgram, Cartesia, ...), which cannot be faked offline in the same process layout.
 */
import { Effect, Layer, Stream } from "effect"
import os from "node:os"
import * as FliteTts from "../layers/local/FliteTts.ts"
import * as PocketsphinxStt from "../layers/local/PocketsphinxStt.ts"
import * as WebRtcVad from "../layers/local/WebRtcVad.ts"
import * as ScriptedModel from "../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../services/AudioFrame.ts"
import * as AudioInput from "../services/AudioInput.ts"
import { AudioOutput } from "../services/AudioOutput.ts"
import { Stt, type SttOptions } from "../services/Stt.ts"
import { Tts, type TtsOptions } from "../services/Tts.ts"
import { Agent, Tool } from "../src/index.ts"
import * as VoicePipeline from "../src/voice/VoicePipeline.ts"
import { quantile } from "./baton/stats.ts"

const n = Number(process.env["N"] ?? 5)
const warmup = Number(process.env["WARMUP"] ?? 1)
const ENDPOINTING = process.env["ENDPOINTING"] === undefined ? undefined : Number(process.env["ENDPOINTING"])
const PREEMPTIVE = process.env["PREEMPTIVE"] !== "0"
const voiceOptions = {
  preemptiveGeneration: PREEMPTIVE,
  ...(ENDPOINTING === undefined ? {} : { minEndpointingDelayMs: ENDPOINTING, maxEndpointingDelayMs: ENDPOINTING })
}
const HANGOVER = process.env["HANGOVER"] === "1"
const SECOND_PASS = process.env["SECOND_PASS"] === "1"
/** FLITE_ENGINE=program spawns flite per sentence (before libflite in process), to compare. */
const FLITE_ENGINE = process.env["FLITE_ENGINE"] === "program" ? "program" : process.env["FLITE_ENGINE"] === "library" ? "library" : undefined
const REPLY = "It will be sunny and warm all day."

const weather = Agent.make({ name: "weather", instructions: "Weather.", onEnter: Agent.reply({ instructions: "forecast" }).pipe(Effect.asVoid) })
const greeter = Agent.make({ name: "greeter", instructions: "Greet.", tools: [Tool.handoff("transfer_to_weather", () => weather)] })
const direct = Agent.make({ name: "direct", instructions: "Answer." })
const model = ScriptedModel.layer([
  { when: { agent: "greeter" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { instructions: "forecast" }, reply: { text: REPLY } },
  { when: { agent: "direct" }, reply: { text: REPLY } }
], { record: false })
/** When the pipeline last asked the STT for an utterance's final: the VAD's end of speech. */
let endpointAt = 0
const timedStt = Layer.effect(
  Stt,
  Effect.map(Effect.service(Stt), (stt) => ({
    ...stt,
    stream: (options?: SttOptions) =>
      Effect.map(stt.stream(options), (stream) => ({
        ...stream,
        endUtterance: Effect.sync(() => void (endpointAt = performance.now())).pipe(Effect.andThen(stream.endUtterance))
      }))
  }))
).pipe(Layer.provide(PocketsphinxStt.layer({ secondPass: SECOND_PASS })))
/** When the TTS emitted the first frame of each synthesis (the engine's own work ends there). */
const ttsFirstFrames: Array<number> = []
/** flite's engine that ran (library or program). */
let fliteEngine = "?"
const timedTts = Layer.effect(
  Tts,
  Effect.map(FliteTts.make({ voice: "rms", ...(FLITE_ENGINE === undefined ? {} : { engine: FLITE_ENGINE }) }).pipe(
    Effect.tap((tts) => Effect.sync(() => void (fliteEngine = tts.engine)))
  ), (tts) => ({
    ...tts,
    synthesize: (text: string, options?: TtsOptions) => {
      let first = true
      return tts.synthesize(text, options).pipe(Stream.tap(() =>
        Effect.sync(() => {
          if (first) ttsFirstFrames.push(performance.now())
          first = false
        })
      ))
    }
  }))
)
const engines = Layer.mergeAll(timedTts, timedStt, WebRtcVad.layer({ hangover: HANGOVER }))

interface Stages {
  readonly vad: number
  readonly stt: number
  readonly turn: number
  readonly llm: number
  readonly tts: number
  readonly total: number
  /** baton's own share (see the header). */
  readonly own: number
}

/** Where speech ends in `audio`: after its last loud 10 ms window (ms). */
const speechEndMs = (audio: AudioFrame.AudioFrame) => {
  const window = audio.sampleRate / 100
  let last = 0
  for (let start = 0; start + window <= audio.data.length; start += window) {
    let energy = 0
    for (let i = start; i < start + window; i++) energy += audio.data[i]! * audio.data[i]!
    if (Math.sqrt(energy / window) > 500) last = start + window
  }
  return (last / audio.sampleRate) * 1000
}

const once = (agent: Agent.Agent, question: AudioFrame.AudioFrame) =>
  Effect.gen(function*() {
    let firstAudio: number | undefined
    const line = yield* AudioInput.makeQueue
    const { session } = yield* VoicePipeline.start({ agent, input: line.service.frames, voice: voiceOptions }).pipe(
      Effect.provideService(AudioOutput, {
        write: () => Effect.sync(() => void (firstAudio ??= performance.now())),
        clear: () => Effect.void
      })
    )
    const times: Record<string, number> = {}
    yield* session.events.pipe(
      Stream.runForEach((e) =>
        Effect.sync(() => {
          const t = performance.now()
          if (e.type === "user_input_transcribed" && e.final) times["final"] ??= t
          if (e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user") times["turn"] ??= t
          if (e.type === "agent_state_changed" && e.state === "speaking") times["speaking"] ??= t
        })
      ),
      Effect.forkScoped
    )
    const end = speechEndMs(question)
    let speechEndedAt = 0
    let sent = 0
    const offeredAt: Array<number> = []
    ttsFirstFrames.length = 0
    for (const frame of AudioFrame.split(AudioFrame.concat([AudioFrame.silence(200, 16000), question, AudioFrame.silence(1500, 16000)]), 20)) {
      offeredAt.push(performance.now())
      yield* line.offer(frame)
      sent += 20
      if (speechEndedAt === 0 && sent >= 200 + end) speechEndedAt = performance.now()
      yield* Effect.sleep(20)
      if (firstAudio !== undefined) break
    }
    while (firstAudio === undefined) yield* Effect.sleep(5)
    yield* line.end
    const turn = times["turn"]!
    const speaking = times["speaking"]!
    const lastFrame = offeredAt.filter((t) => t <= turn).at(-1) ?? 0
    const ttsFirst = ttsFirstFrames.filter((t) => t <= firstAudio!).at(-1) ?? 0
    const own = Math.max(0, turn - Math.max(times["final"]!, lastFrame)) + Math.max(0, speaking - turn) +
      Math.max(0, firstAudio - Math.max(speaking, ttsFirst))
    return {
      own,
      vad: endpointAt - speechEndedAt,
      stt: times["final"]! - endpointAt,
      turn: times["turn"]! - times["final"]!,
      llm: times["speaking"]! - times["turn"]!,
      tts: firstAudio - times["speaking"]!,
      total: firstAudio - speechEndedAt
    } satisfies Stages
  }).pipe(Effect.scoped)

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (x: number) => `${x.toFixed(0)} ms`

export const benchVoicePipeline = Effect.gen(function*() {
  const tts = yield* Tts
  const question = AudioFrame.concat(yield* Stream.runCollect(tts.synthesize("What is the weather in Paris?")))
  const rows: Array<string> = []
  const own: Array<number> = []
  for (const [label, agent] of [["direct answer", direct], ["answer after a handoff", greeter]] as const) {
    const runs: Array<Stages> = []
    // (the first turns of a process run code V8 has not compiled yet: not what a caller meets on a
    // service that has been answering calls, and not measured, as in the side-by-side bench)
    for (let i = 0; i < warmup; i++) yield* once(agent, question)
    for (let i = 0; i < n; i++) runs.push(yield* once(agent, question))
    own.push(...runs.map((r) => r.own))
    const col = (k: keyof Stages) => fmt(median(runs.map((r) => r[k])))
    rows.push(`| ${label} | ${col("vad")} | ${col("stt")} | ${col("turn")} | ${col("llm")} | ${col("tts")} | **${col("total")}** |`)
  }
  const cpu = os.cpus()[0]?.model.trim() ?? "unknown CPU"
  const load = os.loadavg()[0]!.toFixed(1)
  const sorted = [...own].sort((a, b) => a - b)
  const p99 = quantile(sorted, 0.99)!
  return [
    `Cascaded voice, offline (WebRTC VAD, pocketsphinx, flite rms (${fliteEngine}); scripted model), median of ${n} runs after ${warmup} not measured; ${cpu}, ${os.cpus().length} cores, Node ${process.version}; ${
      ENDPOINTING === undefined ? "endpointing: the defaults (adaptive)" : `endpointing ${ENDPOINTING} ms`
    }, preemptive generation ${PREEMPTIVE ? "on" : "off"}; WebRTC VAD's own hangover ${HANGOVER ? "kept" : "off"}, pocketsphinx's second pass ${
      SECOND_PASS ? "on" : "off"
    }; load average ${load}.`,
    "",
    "| user's end of speech → | VAD end | STT final | turn end | LLM first token | TTS first audio | first audio byte |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...rows,
    "",
    `baton's own share of a turn (offline): p50 ${quantile(sorted, 0.5)!.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms over ${own.length} turns (after the warm-up); ${cpu}, load average ${load}; target under 5 ms p99: ${
      p99 < 5 ? "met" : "not met"
    }.`
  ].join("\n")
}).pipe(Effect.provide(Layer.mergeAll(engines, model)))

if (import.meta.main) console.log(await Effect.runPromise(benchVoicePipeline))

