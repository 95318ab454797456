/**
 * `npm run bench:voice-side-by-side` (also the `voiceSideBySide` section of `npm run bench`):
 * voice turns of baton and of agents-js 1.9 on the same mocked providers, the same caller and the
 * same settings (issue 36).
 *
 * - Providers: the Deepgram, Cartesia and OpenAI-chat mocks of test/mocks on 127.0.0.1, in this
 *   process, with the same injected latencies for both: every Deepgram message STT_LATENCY_MS
 *   (150) after the audio that brought it (so the final comes that long after the audio's end),
 *   the chat model's first token LLM_FIRST_TOKEN_MS (300) after the request, Cartesia's first
 *   chunk TTS_FIRST_BYTE_MS (120) after a context's first input.
 * - baton: bench/baton/voice-turns.ts (its Deepgram, Cartesia and OpenAI chat layers, Silero VAD
 *   from layers/local). agents-js: bench/agents-js/voice.mjs (its own deepgram, cartesia, openai
 *   and silero plugins, pointed at the mocks by their base-URL options). Each in a process of its
 *   own, one after the other, with this Node binary; the same command line for both.
 * - The caller: a flite (voice rms, 16 kHz) WAV of one question, streamed at real-time pace in
 *   20 ms frames (500 ms of silence before it, silence after it until the answer). Measured, in
 *   the framework's process: from the end of the speech in the WAV (after its last 10 ms window
 *   with RMS above 500) to the first sample with |s| > 100 out of the framework's audio output,
 *   counted as if the output played from its first frame in real time.
 * - Settings, the same for both: Silero VAD with MIN_SILENCE_MS (300) of silence, MIN_SPEECH_MS
 *   (100), threshold 0.5; endpointing MIN_ENDPOINTING_MS (500) after the end of speech (baton's
 *   minEndpointingDelayMs, agents-js's turnHandling.endpointing.minDelay with turnDetection
 *   'vad'); Deepgram's own endpointing at both plugins' default (25 ms). agents-js keeps its
 *   default preemptive generation (on; PREEMPTIVE=0 turns it off); baton runs its defaults.
 * - Turns: TURNS (20) measured after WARMUP (1), each a fresh session (the engines, so their
 *   sockets, are shared by a process's turns), twice: a direct answer, and an answer after a
 *   handoff (the greeter's tool hands off to a weather agent that answers on entering).
 *   TURNS=5 runs it short (about 2.5 min instead of 7 on a loaded 2-core machine).
 *
 * Prints a Markdown table (median, p95, min, max; the stages from the end of speech) with the CPU
 * model, the load average and the settings, and a `Target (voice):` line: met when baton's median
 * and p95 are both at least 25% below agents-js's, for both kinds of turn. `--json FILE` also
 * writes every turn of both sides.
 */
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Stream } from "effect"
import * as FliteTts from "../layers/local/FliteTts.ts"
import * as AudioFrame from "../services/AudioFrame.ts"
import { Tts } from "../services/Tts.ts"
import * as Wav from "../services/Wav.ts"
import * as CartesiaMock from "../test/mocks/cartesia/server.ts"
import * as DeepgramMock from "../test/mocks/deepgram/server.ts"
import * as ChatMock from "../test/mocks/openai-chat/server.ts"
import { envInt, log, quantile } from "./baton/stats.ts"

/** What the caller asks, what the model answers. */
export const QUESTION = "What is the weather in Paris tomorrow?"
export const ANSWER = "It will be sunny and warm all day."
/** The target: baton at least this much below agents-js, median and p95. */
const TARGET_BELOW = 0.25

export interface VoiceSettings {
  readonly turns: number
  readonly warmup: number
  readonly sttLatencyMs: number
  readonly llmFirstTokenMs: number
  readonly ttsFirstByteMs: number
  readonly minEndpointingMs: number
  readonly vadMinSilenceMs: number
  readonly vadMinSpeechMs: number
  readonly preemptive: boolean
}

export const settingsFromEnv = (): VoiceSettings => ({
  turns: envInt("TURNS", 20),
  warmup: envInt("WARMUP_TURNS", 1),
  sttLatencyMs: envInt("STT_LATENCY_MS", 150),
  llmFirstTokenMs: envInt("LLM_FIRST_TOKEN_MS", 300),
  ttsFirstByteMs: envInt("TTS_FIRST_BYTE_MS", 120),
  minEndpointingMs: envInt("MIN_ENDPOINTING_MS", 500),
  vadMinSilenceMs: envInt("MIN_SILENCE_MS", 300),
  vadMinSpeechMs: envInt("MIN_SPEECH_MS", 100),
  preemptive: process.env["PREEMPTIVE"] !== "0"
})

/** One turn as the children print it (bench/agents-js/voice.mjs's header). */
export interface TurnLine {
  readonly type: "turn"
  readonly turn: number
  readonly warmup: boolean
  readonly latencyMs: number
  readonly speechEndAt: number
  readonly firstSoundAt: number
  readonly transcript: string | null
  readonly agent: string | undefined
  readonly thinkingAt: number | null
  readonly speakingAt: number | null
  readonly pushLagMaxMs: number
  /** Seen by the mocks (added here), from the end of speech: the first chat request after it, the
   * last one before the first sound (the one whose answer was heard), and the first input of the
   * last Cartesia context started before the first sound. */
  readonly llmRequestMs?: number | null
  readonly answeredLlmRequestMs?: number | null
  readonly ttsRequestMs?: number | null
}

export interface SideResult {
  readonly framework: "baton" | "agents-js"
  readonly handoff: boolean
  readonly ready?: Record<string, unknown>
  readonly turns: ReadonlyArray<TurnLine>
  /** Why the side has no (or too few) turns. */
  readonly error?: string
}

const batonScript = fileURLToPath(new URL("./baton/voice-turns.ts", import.meta.url))
const peerDir = fileURLToPath(new URL("./agents-js/", import.meta.url))
const peerScript = join(peerDir, "voice.mjs")

/** Runs one side's child to the end: its JSON lines. */
const runSide = (framework: SideResult["framework"], handoff: boolean, args: ReadonlyArray<string>, settings: VoiceSettings) =>
  new Promise<SideResult>((resolve) => {
    const script = framework === "baton" ? batonScript : peerScript
    const child = spawn(process.execPath, [script, ...args, "--handoff", handoff ? "1" : "0"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PREEMPTIVE: settings.preemptive ? "1" : "0" }
    })
    const turns: Array<TurnLine> = []
    let ready: Record<string, unknown> | undefined
    let error: string | undefined
    let buffered = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8")
      let nl: number
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = JSON.parse(buffered.slice(0, nl)) as { type: string; message?: string }
        buffered = buffered.slice(nl + 1)
        if (line.type === "ready") ready = line
        else if (line.type === "turn") {
          turns.push(line as TurnLine)
          log(`${framework}${handoff ? " (handoff)" : ""} turn ${(line as TurnLine).turn}: ${(line as TurnLine).latencyMs.toFixed(0)} ms`)
        } else if (line.type === "error") error = line.message
      }
    })
    // The child's diagnostics, kept for an error report (the framework's own logs can be long).
    child.stderr.on("data", (chunk: Buffer) => void (stderr = (stderr + chunk.toString("utf8")).slice(-4000)))
    const limit = setTimeout(() => child.kill("SIGKILL"), (settings.turns + settings.warmup) * 20_000 + 60_000)
    child.on("exit", (code, signal) => {
      clearTimeout(limit)
      if (code !== 0 && error === undefined) error = `${framework} exited with ${code ?? signal}: ${stderr.trim().split("\n").slice(-5).join(" / ")}`
      resolve({ framework, handoff, ...(ready ? { ready } : {}), turns, ...(error ? { error } : {}) })
    })
  })

/** Each turn with what the mocks saw of it, on one clock (epoch ms through each process's timeOrigin). */
const withMockStages = (side: SideResult, chat: ChatMock.ChatMock, ct: CartesiaMock.CartesiaMock): SideResult => {
  const origin = Number(side.ready?.["timeOrigin"] ?? Number.NaN)
  if (!Number.isFinite(origin)) return side
  const here = performance.timeOrigin
  const requests = chat.requests.map((r) => here + r.at)
  const contexts = new Map<unknown, number>()
  for (const m of ct.messages) if (!contexts.has(m.message["context_id"])) contexts.set(m.message["context_id"], here + m.at)
  const starts = [...contexts.values()]
  return {
    ...side,
    turns: side.turns.map((t) => {
      const end = origin + t.speechEndAt
      const sound = origin + t.firstSoundAt
      const within = (xs: ReadonlyArray<number>) => xs.filter((x) => x > end && x <= sound)
      const llm = within(requests)
      const tts = within(starts)
      return {
        ...t,
        llmRequestMs: llm.length > 0 ? llm[0]! - end : null,
        answeredLlmRequestMs: llm.length > 0 ? llm.at(-1)! - end : null,
        ttsRequestMs: tts.length > 0 ? tts.at(-1)! - end : null
      }
    })
  }
}

/** The caller's WAV, made by flite (rms, 16 kHz) through baton's flite layer. */
const callerWav = (path: string) =>
  Effect.gen(function*() {
    const tts = yield* Tts
    const audio = AudioFrame.concat(yield* Stream.runCollect(tts.synthesize(QUESTION)))
    yield* Wav.writeFile(path, audio)
    return audio
  }).pipe(Effect.provide(FliteTts.layer({ voice: "rms" })))

/** Milliseconds of `audio` in 10 ms windows the Deepgram mock counts as speech (RMS above 1% of full scale). */
const speechMsOf = (audio: AudioFrame.AudioFrame) => {
  const w = audio.sampleRate / 100
  let ms = 0
  for (let s = 0; s + w <= audio.data.length; s += w) {
    let e = 0
    for (let i = s; i < s + w; i++) e += audio.data[i]! * audio.data[i]!
    if (Math.sqrt(e / w) / 32768 > 0.01) ms += 10
  }
  return ms
}

/** The model's answers: the greeter hands off when the caller has spoken, every other request gets the answer. */
const respond = (request: ChatMock.ChatRequest): ChatMock.ChatAnswer =>
  ChatMock.toolNames(request).includes("transfer_to_weather") && request.messages.at(-1)?.role === "user"
    ? { toolCall: { name: "transfer_to_weather" } }
    : { text: ANSWER }

/** HEAD, and whether the code the baton side runs (src, layers, services) has uncommitted changes. */
const batonRevision = () => {
  try {
    const git = (...a: Array<string>) => execFileSync("git", a, { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    return `${git("rev-parse", "--short", "HEAD")}${git("status", "--porcelain", "--", "src", "layers", "services") === "" ? "" : " with uncommitted changes in src/, layers/ or services/"}`
  } catch {
    return "git revision unknown"
  }
}

export const cpuModel = (): string => {
  try {
    return /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? os.cpus()[0]?.model ?? "unknown CPU"
  } catch {
    return os.cpus()[0]?.model.trim() ?? "unknown CPU"
  }
}

export interface VoiceSideBySide {
  readonly markdown: string
  readonly targetMet: boolean | undefined
  readonly raw: {
    readonly machine: Record<string, unknown>
    readonly settings: VoiceSettings
    readonly sides: ReadonlyArray<SideResult>
  }
}

interface Stats {
  readonly n: number
  readonly median: number
  readonly p95: number
  readonly min: number
  readonly max: number
}
const stats = (xs: ReadonlyArray<number>): Stats | undefined => {
  if (xs.length === 0) return undefined
  const s = [...xs].sort((a, b) => a - b)
  return { n: s.length, median: quantile(s, 0.5)!, p95: quantile(s, 0.95)!, min: s[0]!, max: s.at(-1)! }
}
const ms = (x: number | undefined) => (x === undefined ? "–" : `${x.toFixed(0)} ms`)
const measured = (side: SideResult | undefined) => (side?.turns ?? []).filter((t) => !t.warmup)

/** Turns whose transcript or speaker is not what the scenario makes: the run is not comparable. */
const wrongTurns = (side: SideResult) =>
  measured(side).filter((t) =>
    t.transcript?.replace(/[^a-z ]/gi, "").toLowerCase() !== QUESTION.replace(/[^a-z ]/gi, "").toLowerCase() ||
    t.agent !== (side.handoff ? "weather" : "direct")
  )

export const benchVoiceSideBySide = (settings: VoiceSettings = settingsFromEnv(), peer = true): Promise<VoiceSideBySide> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const dir = mkdtempSync(join(os.tmpdir(), "baton-voice-sxs-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
    const wav = join(dir, "caller.wav")
    const audio = yield* callerWav(wav)
    const wavMs = AudioFrame.durationMs(audio)
    // The mock reveals a word per msPerWord of speech: the last one with the last of the speech, as a real STT would.
    const msPerWord = Math.floor(speechMsOf(audio) / QUESTION.split(" ").length)
    const dg = yield* DeepgramMock.make({ transcripts: [QUESTION], msPerWord, latencyMs: settings.sttLatencyMs })
    const ct = yield* CartesiaMock.make({ firstChunkMs: settings.ttsFirstByteMs })
    const chat = yield* ChatMock.make({ firstTokenMs: settings.llmFirstTokenMs, respond })
    const args = [
      "--wav", wav,
      "--deepgram", dg.url.replace(/\/v1\/listen$/, ""),
      "--cartesia", ct.url.replace(/^ws/, "http").replace(/\/tts\/websocket$/, ""),
      "--openai", chat.baseUrl,
      "--turns", String(settings.turns),
      "--warmup", String(settings.warmup),
      "--min-endpointing-ms", String(settings.minEndpointingMs),
      "--vad-min-silence-ms", String(settings.vadMinSilenceMs),
      "--vad-min-speech-ms", String(settings.vadMinSpeechMs)
    ]
    const peerInstalled = existsSync(join(peerDir, "node_modules"))
    if (peer && !peerInstalled) log("agents-js side skipped: bench/agents-js/node_modules is missing (npm ci --prefix bench/agents-js)")
    const sides: Array<SideResult> = []
    const load0 = os.loadavg()[0]!
    for (const handoff of [false, true]) {
      log(`voice side by side: baton${handoff ? ", with a handoff" : ""}`)
      sides.push(withMockStages(yield* Effect.promise(() => runSide("baton", handoff, args, settings)), chat, ct))
      if (peer && peerInstalled) {
        log(`voice side by side: agents-js${handoff ? ", with a handoff" : ""}`)
        sides.push(withMockStages(yield* Effect.promise(() => runSide("agents-js", handoff, args, settings)), chat, ct))
      }
    }
    const machine = {
      cpuModel: cpuModel(),
      baton: batonRevision(),
      cores: os.cpus().length,
      node: process.version,
      loadAvg1mBefore: load0,
      loadAvg1mAfter: os.loadavg()[0]!,
      date: new Date().toISOString(),
      agentsVersion: sides.find((s) => s.framework === "agents-js")?.ready?.["agentsVersion"] ?? null,
      plugins: sides.find((s) => s.framework === "agents-js")?.ready?.["plugins"] ?? null,
      wavMs,
      msPerWord,
      speechEndMs: sides[0]?.ready?.["speechEndMs"] ?? null
    }
    return render(settings, machine, sides, peer && peerInstalled)
  })))

/** Deepgram's own endpointing (both plugins' default): the pause after the words before its final. */
const DEEPGRAM_ENDPOINTING_MS = 25

/**
 * The least end of speech → first audio the providers' injected latencies allow, whatever the
 * framework: the STT's final (its endpointing pause and latency), the model's first token, the
 * TTS's first byte; after a handoff a second model call, which can only start once the turn is
 * confirmed (the handoff is a tool, not run on words the user may go on from) and the first
 * call's tool call is in. No audio before the turn is confirmed (the endpointing delay).
 */
export const floorMs = (settings: VoiceSettings, handoff: boolean) => {
  const firstAnswer = DEEPGRAM_ENDPOINTING_MS + settings.sttLatencyMs + settings.llmFirstTokenMs
  return handoff
    ? Math.max(firstAnswer, settings.minEndpointingMs) + settings.llmFirstTokenMs + settings.ttsFirstByteMs
    : Math.max(firstAnswer + settings.ttsFirstByteMs, settings.minEndpointingMs)
}

const render = (settings: VoiceSettings, machine: Record<string, any>, sides: ReadonlyArray<SideResult>, withPeer: boolean): VoiceSideBySide => {
  const side = (framework: SideResult["framework"], handoff: boolean) => sides.find((s) => s.framework === framework && s.handoff === handoff)
  const stage = (s: SideResult | undefined, f: (t: TurnLine) => number | null) =>
    stats(measured(s).map(f).filter((x): x is number => x !== null))?.median
  const lines: Array<string> = []
  lines.push(
    `End of the caller's speech → first audio out, ${settings.turns} turns (after ${settings.warmup} warm-up) per row; ${machine.cpuModel}, ${machine.cores} cores, Node ${machine.node}, load average ${
      machine.loadAvg1mBefore.toFixed(1)
    } → ${machine.loadAvg1mAfter.toFixed(1)}; baton ${machine.baton}; agents-js ${machine.agentsVersion ?? "not run"}.`,
    `Mocks on 127.0.0.1 (test/mocks): Deepgram messages +${settings.sttLatencyMs} ms, LLM first token ${settings.llmFirstTokenMs} ms, Cartesia first chunk ${settings.ttsFirstByteMs} ms. Silero VAD min silence ${settings.vadMinSilenceMs} ms, min speech ${settings.vadMinSpeechMs} ms; endpointing ${settings.minEndpointingMs} ms; agents-js preemptive generation ${
      settings.preemptive ? "on (its default)" : "off"
    }. Caller: flite rms, ${(machine.wavMs / 1000).toFixed(2)} s WAV, speech ends at ${Number(machine.speechEndMs).toFixed(0)} ms.`,
    "Stage columns: medians, from the end of speech, of when the mocks received the first chat request, the chat request whose answer was heard, and the first input of the Cartesia context that was heard.",
    "",
    "| turn | framework | median | p95 | min | max | → 1st LLM request | → answered LLM request | → TTS request | TTS request → first audio |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  )
  const verdicts: Array<{ label: string; met: boolean; text: string }> = []
  for (const handoff of [false, true]) {
    const label = handoff ? "after a handoff" : "direct answer"
    const b = side("baton", handoff)
    const a = side("agents-js", handoff)
    for (const s of [b, a]) {
      if (s === undefined) continue
      const st = stats(measured(s).map((t) => t.latencyMs))
      const wrong = wrongTurns(s)
      lines.push(
        `| ${label} | ${s.framework} | **${ms(st?.median)}** | ${ms(st?.p95)} | ${ms(st?.min)} | ${ms(st?.max)} | ${
          ms(stage(s, (t) => t.llmRequestMs ?? null))
        } | ${ms(stage(s, (t) => t.answeredLlmRequestMs ?? null))} | ${ms(stage(s, (t) => t.ttsRequestMs ?? null))} | ${
          ms(stage(s, (t) => (t.ttsRequestMs == null ? null : t.latencyMs - t.ttsRequestMs)))
        } |` +
          (s.error ? ` failed: ${s.error}` : "") + (wrong.length > 0 ? ` ${wrong.length} turns with a wrong transcript or speaker` : "")
      )
    }
    const bs = stats(measured(b).map((t) => t.latencyMs))
    const as = stats(measured(a).map((t) => t.latencyMs))
    const comparable = bs !== undefined && as !== undefined && !b?.error && !a?.error && wrongTurns(b!).length === 0 && wrongTurns(a!).length === 0
    if (comparable) {
      const below = (x: number, y: number) => 1 - x / y
      const m = below(bs.median, as.median)
      const p = below(bs.p95, as.p95)
      const pct = (x: number) => `${x >= 0 ? "" : "+"}${(-x * 100).toFixed(0)}%`
      const met = m >= TARGET_BELOW && p >= TARGET_BELOW
      const floor = floorMs(settings, handoff)
      const goal = (1 - TARGET_BELOW) * Math.min(as.median, as.p95)
      verdicts.push({
        label,
        met,
        text: `${label} ${met ? "met" : "not met"}: median ${ms(bs.median)} vs ${ms(as.median)} (${pct(m)}), p95 ${ms(bs.p95)} vs ${ms(as.p95)} (${pct(p)}); the providers' floor ${
          ms(floor)
        } ${floor <= goal ? `is under the target's ${ms(goal)}: reachable` : `is above the target's ${ms(goal)}: not reachable with these latencies`}`
      })
    }
  }
  const targetMet = verdicts.length === 2 ? verdicts.every((v) => v.met) : undefined
  lines.push(
    "",
    `Target (voice: baton's end of speech → first audio at least ${TARGET_BELOW * 100}% below agents-js's, median and p95, on the same mocks and settings): ${
      targetMet === undefined
        ? withPeer ? "not measured (a side failed or heard the wrong words; see above)" : "not measured (agents-js not run)"
        : `${targetMet ? "met" : "not met"}; ${verdicts.map((v) => v.text).join(". ")}`
    }.`
  )
  return { markdown: lines.join("\n"), targetMet, raw: { machine, settings, sides } }
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const jsonAt = args.indexOf("--json")
  const t0 = performance.now()
  const result = await benchVoiceSideBySide(settingsFromEnv(), !args.includes("--no-peer"))
  if (jsonAt >= 0 && args[jsonAt + 1] !== undefined) writeFileSync(args[jsonAt + 1]!, JSON.stringify(result.raw, null, 2) + "\n")
  log(`voice side by side done in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
  process.stdout.write(result.markdown + "\n", () => process.exit(0))
}
