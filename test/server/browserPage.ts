/**
 * The playground page in a real headless Chromium (Debian's, driven by playwright-core), on the
 * service with the OpenAI Realtime mock; Chromium's microphone is a WAV file. Screenshots go to
 * `.cache/browser/` (ignored by git).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, type Layer, Redacted } from "effect"
import { chromium, type Page } from "playwright-core"
import { OpenAiRealtime } from "../../layers/openai/OpenAiRealtime.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as Wav from "../../services/Wav.ts"
import { Agent, Handoff, Tool } from "../../src/index.ts"
import * as OpenAIRealtimeMock from "../mocks/openai-realtime/index.ts"
import { Plan } from "../mocks/openai-realtime/index.ts"
import { start } from "./harness.ts"

const CHROMIUM = "/usr/bin/chromium"

/** Where the tests' screenshots go. */
export const SHOTS = join(import.meta.dirname, "../../.cache/browser")

export const STORY = "Once upon a time a small robot learned to hand a conversation to a friend, and nobody ever talked over anyone again."

const weather = Agent.make({
  name: "weather",
  instructions: "You are the weather desk.",
  onEnter: Agent.reply({ instructions: "greet the caller" }).pipe(Effect.asVoid)
})
export const front = Agent.make({
  name: "front",
  instructions: "You are the front desk.",
  tools: [Tool.make("transfer_to_weather", { description: "to the weather desk", handler: () => Effect.succeed(Handoff.to(weather)) })]
})
/** The front desk greeting the caller as the session starts. */
export const greetingFront = Agent.make({
  name: "front",
  instructions: "You are the front desk.",
  tools: front.tools,
  onEnter: Agent.reply({ instructions: "greet the caller" }).pipe(Effect.asVoid)
})

/** 0.6 s of a 220 Hz tone then 1.4 s of silence at 48 kHz: Chromium loops it as the microphone. */
const micWav = (dir: string, mic?: AudioFrame.AudioFrame) => {
  const rate = 48_000
  const data = new Int16Array(rate * 2)
  for (let i = 0; i < rate * 0.6; i++) data[i] = Math.round(Math.sin((2 * Math.PI * 220 * i) / rate) * 12_000)
  const path = join(dir, "mic.wav")
  writeFileSync(path, Wav.encode(mic ?? AudioFrame.make(data, rate)))
  return path
}

export interface OpenOptions {
  readonly agent?: Agent.Agent
  /** Chromium's autoplay policy as a person meets it (default: no user gesture required). */
  readonly autoplayPolicy?: boolean
  /** Hears "what is the weather" from the microphone (default); or nothing from it. */
  readonly transcribe?: string
  /** The service's models instead of the realtime mock (a cascaded voice pipeline). */
  readonly models?: Layer.Layer<any, any>
  /** What the microphone plays (looped) instead of the tone. */
  readonly mic?: AudioFrame.AudioFrame
}

/** The service with the realtime mock and the page open on it in Chromium (its microphone the WAV
 * above); `until` polls the page from outside, `pageErrors` has its errors and CSP reports,
 * `console` every console message, `sent` what it sent on its socket. */
export const openPage = (options: OpenOptions = {}) =>
  Effect.gen(function*() {
    if (!existsSync(CHROMIUM)) {
      return yield* Effect.die(new Error(`${CHROMIUM} is missing: run \`npm run setup\` (or: sudo apt-get install -y chromium)`))
    }
    const mock = yield* OpenAIRealtimeMock.make({
      transcribe: () => options.transcribe ?? "what is the weather",
      script: (ctx) =>
        ctx.instructions.includes("weather desk")
          ? Plan.say("Weather desk here. It is sunny.")
          : ctx.lastUserText?.includes("story")
          ? Plan.say(STORY)
          : ctx.tools.some((t) => t.name === "transfer_to_weather") && ctx.lastUserText?.includes("weather")
          ? Plan.call("transfer_to_weather", {})
          : Plan.say("Hello.")
    })
    const server = yield* start(options.agent ?? front, options.models ?? OpenAiRealtime.layer({ url: mock.url, apiKey: Redacted.make("sk-test"), inputTranscription: { model: "gpt-4o-mini-transcribe" } }), {
      // a loaded test machine is not an overloaded service: no 503 for event-loop lag here
      maxLagMs: 0
    })
    const dir = mkdtempSync(join(tmpdir(), "baton-browser-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
    const browser = yield* Effect.acquireRelease(
      Effect.promise(() =>
        chromium.launch({
          executablePath: CHROMIUM,
          args: [
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run",
            "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", `--use-file-for-fake-audio-capture=${micWav(dir, options.mic)}`,
            ...(options.autoplayPolicy ? [] : ["--autoplay-policy=no-user-gesture-required"])
          ]
        })
      ),
      (b) => Effect.promise(() => b.close())
    )
    const page = yield* Effect.promise(() => browser.newPage({ viewport: { width: 1100, height: 700 } }))
    const pageErrors: Array<string> = []
    const console: Array<string> = []
    page.on("pageerror", (e) => pageErrors.push(e.message))
    // The page runs under its Content-Security-Policy: anything it blocks is reported here.
    page.on("console", (m) => {
      console.push(m.text())
      if (m.text().includes("Content Security Policy")) pageErrors.push(m.text())
    })
    // Polled from outside the page (waitForFunction evaluates strings inside it, which the CSP forbids).
    const until = (expression: string, timeout = 10_000) =>
      Effect.promise(async () => {
        for (const end = Date.now() + timeout; !(await page.evaluate(expression));) {
          if (Date.now() > end) throw new Error(`timed out waiting for ${expression}`)
          await new Promise((r) => setTimeout(r, 25))
        }
      })
    const evaluate = <A>(expression: string) => Effect.promise(() => page.evaluate(expression) as Promise<A>)
    // what the page sends on its socket: "audio" for a binary frame, else the message's type
    const sent: Array<string> = []
    page.on("websocket", (ws) => ws.on("framesent", (f) => sent.push(typeof f.payload === "string" ? JSON.parse(f.payload).type : "audio")))
    const shot = (name: string, target: Page = page) =>
      Effect.promise(async () => {
        mkdirSync(SHOTS, { recursive: true })
        const path = join(SHOTS, `${name}.png`)
        await target.screenshot({ path })
        return path
      })
    const type = (text: string) => Effect.promise(async () => {
      await page.fill("#text", text)
      await page.press("#text", "Enter")
    })
    yield* Effect.promise(() => page.goto(server.url))
    return { page, server, pageErrors, console, until, evaluate, sent, shot, type }
  })
