/**
 * baton's voice turns on its cloud layers pointed at local mocks (Deepgram STT, Cartesia TTS,
 * OpenAI chat) with Silero VAD (layers/local): the baton twin of bench/agents-js/voice.mjs, with
 * the same command line, the same caller (a WAV streamed at real-time pace in 20 ms frames) and
 * the same JSON lines on stdout, so bench/voice-side-by-side.ts (and bench/capacity.ts) can run
 * either framework in a process of its own against the same mocks:
 *
 *   node bench/baton/voice-turns.ts --wav caller.wav --deepgram ws://127.0.0.1:P1 \
 *     --cartesia http://127.0.0.1:P2 --openai http://127.0.0.1:P3/v1 [options]
 *
 * Options and output: as in bench/agents-js/voice.mjs's header (`--preemptive` is agents-js's
 * alone and ignored here; baton's pipeline runs with its own defaults for everything but the VAD
 * and endpointing settings given). Each turn is a fresh `VoicePipeline.start` session with the
 * engines' layers built once (sockets reused across turns), or one session for every turn with
 * `--session call` (with `--handoff 1` only its first turn hands off: the weather agent keeps the
 * floor). BATON_EVENTS=1 prints the session's events on stderr.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Fiber, Layer, Redacted, Stream } from "effect"
import { readFileSync } from "node:fs"
import { parseArgs } from "node:util"
import * as CartesiaTts from "../../layers/cartesia/CartesiaTts.ts"
import * as DeepgramStt from "../../layers/deepgram/DeepgramStt.ts"
import * as SileroVad from "../../layers/local/SileroVad.ts"
import { OpenAiChat } from "../../layers/openai/OpenAiChat.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as AudioInput from "../../services/AudioInput.ts"
import { AudioOutput, type AudioOutputService } from "../../services/AudioOutput.ts"
import * as Wav from "../../services/Wav.ts"
import { Agent, Tool } from "../../src/index.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"

const out = process.stdout.write.bind(process.stdout)
process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write
console.log = console.error
const emit = (line: unknown) => out(JSON.stringify(line) + "\n")
const fail = (message: string): never => {
  emit({ type: "error", message })
  process.exit(1)
}

const names = [
  "wav", "deepgram", "cartesia", "openai", "deepgram-key", "cartesia-key", "openai-key", "turns", "warmup", "handoff",
  "session", "min-endpointing-ms", "vad-min-silence-ms", "vad-min-speech-ms", "vad-threshold", "preemptive", "lead-ms",
  "tail-ms", "gap-ms", "speech-end-ms", "output-rate"
] as const
const { values: argv } = parseArgs({ options: Object.fromEntries(names.map((n) => [n, { type: "string" as const }])) })
const opt = (name: (typeof names)[number]) =>
  (argv as Record<string, string | undefined>)[name] ?? process.env[name.toUpperCase().replaceAll("-", "_")]
const num = (name: (typeof names)[number], fallback: number) => {
  const v = Number(opt(name) ?? fallback)
  return Number.isFinite(v) && v >= 0 ? v : fail(`--${name} must be a non-negative number`)
}
const required = (name: (typeof names)[number]) => opt(name) ?? fail(`--${name} is required`)

const settings = {
  wav: required("wav"),
  deepgram: required("deepgram"),
  cartesia: required("cartesia"),
  openai: required("openai"),
  turns: num("turns", 20),
  warmup: num("warmup", 1),
  handoff: opt("handoff") === "1",
  session: opt("session") ?? "turn",
  minEndpointingMs: num("min-endpointing-ms", 500),
  vadMinSilenceMs: num("vad-min-silence-ms", 300),
  vadMinSpeechMs: num("vad-min-speech-ms", 100),
  vadThreshold: num("vad-threshold", 0.5),
  leadMs: num("lead-ms", 500),
  tailMs: num("tail-ms", 5000),
  gapMs: num("gap-ms", 1500),
  outputRate: num("output-rate", 24000)
}
if (settings.session !== "turn" && settings.session !== "call") fail("--session must be turn or call")

const wav = (() => {
  const decoded = Wav.decodeSync(readFileSync(settings.wav))
  if (typeof decoded === "string") return fail(`${settings.wav}: ${decoded}`)
  return decoded.channels === 1 ? decoded : fail(`${settings.wav}: only mono WAVs are taken`)
})()
/** After the last 10 ms window whose RMS is above 500 (ms): the rule voice.mjs uses. */
const speechEndOf = (audio: AudioFrame.AudioFrame) => {
  const w = audio.sampleRate / 100
  let last = 0
  for (let s = 0; s + w <= audio.data.length; s += w) {
    let e = 0
    for (let i = s; i < s + w; i++) e += audio.data[i]! * audio.data[i]!
    if (Math.sqrt(e / w) > 500) last = s + w
  }
  return (last / audio.sampleRate) * 1000
}
const speechEndMs = opt("speech-end-ms") === undefined ? speechEndOf(wav) : num("speech-end-ms", 0)

// ---- engines on the mocks -----------------------------------------------------------------------
const engines = Layer.mergeAll(
  SileroVad.layer(),
  DeepgramStt.layer({ apiKey: Redacted.make(opt("deepgram-key") ?? "dg-test"), baseUrl: `${settings.deepgram}/v1/listen` }),
  CartesiaTts.layer({
    apiKey: Redacted.make(opt("cartesia-key") ?? "ct-test"),
    voice: "a0e99841-438c-4a64-b679-ae501e7d6091",
    baseUrl: `${settings.cartesia.replace(/^http/, "ws")}/tts/websocket`,
    sampleRate: settings.outputRate
  }),
  OpenAiChat.layer({ model: "gpt-4.1-mini", apiKey: Redacted.make(opt("openai-key") ?? "sk-test"), baseUrl: settings.openai }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )
)

// ---- agents: the same instructions, tools and names as voice.mjs --------------------------------
const weather = Agent.make({
  name: "weather",
  instructions: "You answer questions about the weather.",
  onEnter: Agent.reply({ instructions: "Give the forecast the caller asked for." }).pipe(Effect.asVoid)
})
const greeter = Agent.make({
  name: "greeter",
  instructions: "You greet callers and transfer weather questions.",
  tools: [Tool.handoff("transfer_to_weather", () => weather, { description: "Transfer the caller to the weather agent." })]
})
const direct = Agent.make({ name: "direct", instructions: "You answer questions about the weather." })

// ---- one turn -------------------------------------------------------------------------------------
interface Turn {
  speechEndAt?: number
  firstSoundAt?: number
  firstFrameAt?: number
  transcript?: string
  agent?: string
  thinkingAt?: number
  speakingAt?: number
  pushLagMaxMs?: number
}

const SILENT = 100
/** The speeches already heard in earlier turns: the rest of a reply still being written when the
 * next turn of a call starts is not that turn's answer. */
const earlier = new Set<string>()
/** A sink that "plays" the turn's output from its first frame in real time and notes the first sound. */
const timedOutput = (current: { turn: Turn | undefined; samples: number; start: number }): AudioOutputService => ({
  write: (pcm, sampleRate, info) =>
    Effect.sync(() => {
      const t = current.turn
      if (t === undefined || earlier.has(info.speechId)) return
      const now = performance.now()
      if (t.firstFrameAt === undefined) {
        t.firstFrameAt = current.start = now
        current.samples = 0
      }
      if (t.firstSoundAt === undefined) {
        const view = new DataView(pcm.buffer, pcm.byteOffset, pcm.byteLength)
        for (let i = 0; i + 1 < pcm.byteLength; i += 2) {
          const s = view.getInt16(i, true)
          if (s > SILENT || s < -SILENT) {
            t.firstSoundAt = Math.max(now, current.start + ((current.samples + i / 2) / sampleRate) * 1000)
            t.agent = info.agent
            earlier.add(info.speechId)
            break
          }
        }
      }
      current.samples += pcm.byteLength / 2
    }),
  clear: () => Effect.void
})

const FRAME_MS = 20
const frames = AudioFrame.split(wav, FRAME_MS)
const silence = AudioFrame.silence(FRAME_MS, wav.sampleRate)
const sleepUntil = (t: number) => Effect.promise(() => new Promise<void>((r) => setTimeout(r, Math.max(0, t - performance.now()))))

/** Streams silence, the WAV, then silence until the answer's first sound (or tail-ms). */
const speak = (line: AudioInput.AudioInputQueue, t: Turn, leadMs: number) =>
  Effect.gen(function*() {
    const lead = Math.round(leadMs / FRAME_MS)
    const speechEnd = lead * FRAME_MS + speechEndMs
    const total = lead + frames.length + Math.ceil(settings.tailMs / FRAME_MS)
    const t0 = performance.now()
    let lagMax = 0
    for (let k = 0; k < total; k++) {
      const due = t0 + (k + 1) * FRAME_MS
      yield* sleepUntil(due)
      lagMax = Math.max(lagMax, performance.now() - due)
      yield* line.offer(k >= lead && k < lead + frames.length ? frames[k - lead]! : silence)
      if ((k + 1) * FRAME_MS >= speechEnd && t.speechEndAt === undefined) t.speechEndAt = t0 + speechEnd
      if (t.firstSoundAt !== undefined) break
    }
    t.pushLagMaxMs = lagMax
  })

const current: { turn: Turn | undefined; samples: number; start: number } = { turn: undefined, samples: 0, start: 0 }

/** A session on `line`, its events noted on the current turn. */
const openSession = (line: AudioInput.AudioInputQueue) =>
  Effect.gen(function*() {
    const { session } = yield* VoicePipeline.start({
      agent: settings.handoff ? greeter : direct,
      input: line.service.frames,
      voice: {
        minEndpointingDelayMs: settings.minEndpointingMs,
        vad: { minSilenceMs: settings.vadMinSilenceMs, minSpeechMs: settings.vadMinSpeechMs, threshold: settings.vadThreshold }
      }
    }).pipe(Effect.provideService(AudioOutput, timedOutput(current)))
    yield* session.events.pipe(
      Stream.runForEach((e) =>
        Effect.sync(() => {
          if (process.env["BATON_EVENTS"] === "1") console.error("[baton event]", performance.now().toFixed(0), JSON.stringify(e).slice(0, 200))
          const t = current.turn
          if (t === undefined) return
          if (e.type === "user_input_transcribed" && e.final) t.transcript = `${t.transcript ?? ""} ${e.transcript}`.trim()
          if (e.type === "agent_state_changed" && e.state === "thinking") t.thinkingAt ??= performance.now()
          if (e.type === "agent_state_changed" && e.state === "speaking") t.speakingAt ??= performance.now()
        })
      ),
      Effect.forkScoped
    )
    return session
  })

const report = (i: number, t: Turn) => {
  if (t.firstSoundAt === undefined || t.speechEndAt === undefined) fail(`turn ${i}: no audio within ${settings.tailMs} ms of the end of speech`)
  emit({
    type: "turn",
    turn: i - settings.warmup,
    warmup: i < settings.warmup,
    handoff: settings.handoff,
    latencyMs: t.firstSoundAt! - t.speechEndAt!,
    speechEndAt: t.speechEndAt,
    firstSoundAt: t.firstSoundAt,
    firstFrameAt: t.firstFrameAt,
    transcript: t.transcript ?? null,
    agent: t.agent,
    thinkingAt: t.thinkingAt ?? null,
    speakingAt: t.speakingAt ?? null,
    pushLagMaxMs: t.pushLagMaxMs
  })
}

const program = Effect.gen(function*() {
  const wall0 = performance.now()
  const context = yield* Layer.build(engines)
  emit({ type: "ready", framework: "baton", node: process.version, timeOrigin: performance.timeOrigin, speechEndMs, wavRate: wav.sampleRate, settings })
  const total = settings.warmup + settings.turns
  if (settings.session === "call") {
    const line = yield* AudioInput.makeQueue
    yield* openSession(line).pipe(Effect.provide(context))
    for (let i = 0; i < total; i++) {
      const t: Turn = {}
      current.turn = t
      yield* speak(line, t, i === 0 ? settings.leadMs : settings.gapMs)
      report(i, t)
    }
  } else {
    for (let i = 0; i < total; i++) {
      const t: Turn = {}
      current.turn = t
      yield* Effect.scoped(Effect.gen(function*() {
        const line = yield* AudioInput.makeQueue
        const session = yield* openSession(line).pipe(Effect.provide(context))
        yield* speak(line, t, settings.leadMs)
        current.turn = undefined
        yield* line.end
        yield* session.close.pipe(Effect.ignore, Effect.timeout("2 seconds"), Effect.ignore)
      }))
      report(i, t)
    }
  }
  emit({ type: "done", turns: settings.turns, wallMs: performance.now() - wall0 })
})

const fiber = Effect.runFork(Effect.scoped(program))
const exit = await Effect.runPromise(Fiber.await(fiber))
if (exit._tag === "Failure") fail(`baton voice turns failed: ${String(exit.cause)}`)
out("", () => process.exit(0))
