/**
 * The playground page in a real headless Chromium (Debian's, driven by playwright-core), with a
 * fake microphone playing a WAV file: the page opens /ws, streams the microphone through its
 * AudioWorklet, the realtime mock hears a turn and calls the transfer tool, the floor passes to
 * the weather agent, whose spoken answer the page plays and shows. Chromium comes from
 * `npm run setup`; without it this test fails with the install line.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { chromium } from "playwright-core"
import { OpenAiRealtime } from "../../layers/openai/OpenAiRealtime.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as Wav from "../../services/Wav.ts"
import { Agent, Handoff, Tool } from "../../src/index.ts"
import * as OpenAIRealtimeMock from "../mocks/openai-realtime/index.ts"
import { Plan } from "../mocks/openai-realtime/index.ts"
import { start } from "./harness.ts"

const CHROMIUM = "/usr/bin/chromium"

const weather = Agent.make({
  name: "weather",
  instructions: "You are the weather desk.",
  onEnter: Agent.reply({ instructions: "greet the caller" }).pipe(Effect.asVoid)
})
const front = Agent.make({
  name: "front",
  instructions: "You are the front desk.",
  tools: [Tool.make("transfer_to_weather", { description: "to the weather desk", handler: () => Effect.succeed(Handoff.to(weather)) })]
})

/** 0.6 s of a 220 Hz tone then 1.4 s of silence at 48 kHz: Chromium loops it as the microphone. */
const micWav = (dir: string) => {
  const rate = 48_000
  const data = new Int16Array(rate * 2)
  for (let i = 0; i < rate * 0.6; i++) data[i] = Math.round(Math.sin((2 * Math.PI * 220 * i) / rate) * 12_000)
  const path = join(dir, "mic.wav")
  writeFileSync(path, Wav.encode(AudioFrame.make(data, rate)))
  return path
}

/** The service with the realtime mock and the page open on it in Chromium (its microphone the WAV
 * above); `until` polls the page from outside, `pageErrors` has its errors and CSP reports,
 * `sent` what it sent on its socket. */
const openPage = Effect.gen(function*() {
  if (!existsSync(CHROMIUM)) {
    return yield* Effect.die(new Error(`${CHROMIUM} is missing: run \`npm run setup\` (or: sudo apt-get install -y chromium)`))
  }
  const mock = yield* OpenAIRealtimeMock.make({
    transcribe: () => "what is the weather",
    script: (ctx) =>
      ctx.instructions.includes("weather desk")
        ? Plan.say("Weather desk here. It is sunny.")
        : ctx.tools.some((t) => t.name === "transfer_to_weather") && ctx.lastUserText?.includes("weather")
        ? Plan.call("transfer_to_weather", {})
        : Plan.say("Hello.")
  })
  const server = yield* start(front, OpenAiRealtime.layer({ url: mock.url, apiKey: Redacted.make("sk-test"), inputTranscription: { model: "gpt-4o-mini-transcribe" } }))
  const dir = mkdtempSync(join(tmpdir(), "baton-browser-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const browser = yield* Effect.acquireRelease(
    Effect.promise(() =>
      chromium.launch({
        executablePath: CHROMIUM,
        args: [
          "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run",
          "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", `--use-file-for-fake-audio-capture=${micWav(dir)}`,
          "--autoplay-policy=no-user-gesture-required"
        ]
      })
    ),
    (b) => Effect.promise(() => b.close())
  )
  const page = yield* Effect.promise(() => browser.newPage())
  const pageErrors: Array<string> = []
  page.on("pageerror", (e) => pageErrors.push(e.message))
  // The page runs under its Content-Security-Policy: anything it blocks is reported here.
  page.on("console", (m) => m.text().includes("Content Security Policy") && pageErrors.push(m.text()))
  // Polled from outside the page (waitForFunction evaluates strings inside it, which the CSP forbids).
  const until = (expression: string, timeout = 10_000) =>
    Effect.promise(async () => {
      for (const end = Date.now() + timeout; !(await page.evaluate(expression));) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${expression}`)
        await new Promise((r) => setTimeout(r, 50))
      }
    })
  // what the page sends on its socket: "audio" for a binary frame, else the message's type
  const sent: Array<string> = []
  page.on("websocket", (ws) => ws.on("framesent", (f) => sent.push(typeof f.payload === "string" ? JSON.parse(f.payload).type : "audio")))
  yield* Effect.promise(() => page.goto(server.url))
  return { page, pageErrors, until, sent }
})

describe("the playground page in Chromium", () => {
  it.live("hears the microphone, shows the transcript and the handoff, plays the agent's audio", () =>
    Effect.gen(function*() {
      const { page, pageErrors, until } = yield* openPage
      assert.match(yield* Effect.promise(() => page.content()), /^<!DOCTYPE html>/i)
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      yield* Effect.promise(() => page.check("#openMic"))
      yield* until(`document.getElementById("floor").textContent === "weather"`, 20_000)
      yield* until(`document.getElementById("transcript").textContent.includes("Weather desk here")`, 20_000)
      yield* until(`window.baton.played > 0`, 20_000)
      yield* until(`document.querySelector("#timeline svg") !== null`, 20_000)
      const shown = (yield* Effect.promise(() =>
        page.evaluate(`({ transcript: document.getElementById("transcript").textContent, heard: window.baton.heard, played: window.baton.played })`)
      )) as { transcript: string; heard: number; played: number }
      assert.include(shown.transcript, "you:what is the weather")
      assert.include(shown.transcript, "floor: front → weather")
      assert.isAbove(shown.heard, 16_000) // over a second of microphone samples sent
      assert.isAbove(shown.played, 0)
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 60_000)

  it.live("issue 33 item 8: releasing hold to talk sends audio_end after the last audio it sent, and the turn is answered", () =>
    Effect.gen(function*() {
      const { page, pageErrors, until, sent } = yield* openPage
      yield* until(`document.getElementById("status").textContent.includes("voice on")`, 20_000)
      yield* Effect.promise(() => page.hover("#talk"))
      yield* Effect.promise(() => page.mouse.down())
      // released within the microphone's 0.6 s tone: the words end as the button goes up
      yield* until(`window.baton.heard > 0.3 * window.baton.ctx.sampleRate`, 20_000)
      yield* Effect.promise(() => page.mouse.up())
      yield* until(`window.baton.sending === false`)
      yield* until(`document.getElementById("transcript").textContent.includes("Weather desk here")`, 20_000)
      const end = sent.indexOf("audio_end")
      assert.isAbove(end, 0, sent.join(" "))
      assert.strictEqual(sent.lastIndexOf("audio_end"), end, "one audio_end for one release")
      assert.strictEqual(sent[end - 1], "audio", "the audio came first")
      assert.notInclude(sent.slice(end), "audio", "no audio after it")
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 60_000)
})
