/**
 * The playground as a person meets it (issue 39), in Chromium: the words shown as they are
 * spoken, a cut reply marked as cut, a "speaking…" state, a "click to start audio" control under
 * the autoplay policy, the microphone's level, the timeline following the call, the favicon.
 * Each test leaves a screenshot in `.cache/browser/`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { join } from "node:path"
import { Layer, Schema } from "effect"
import { Agent, Tool } from "../../src/index.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { engines, speak } from "../voice/harness.ts"
import { greetingFront, openPage, SHOTS, STORY } from "./browserPage.ts"

let shotTaken = false

const story = `window.baton.all.find((l) => l.agent === "front" && l.said.startsWith("Once"))`
const storyLine = `(${story})?.div`
const shownOf = `(${storyLine})?.querySelector(".words").textContent ?? ""`

describe("the playground as a person meets it", () => {
  it.live("shows the words as they are spoken, and \"speaking…\" while the agent talks", () =>
    Effect.gen(function*() {
      const { until, evaluate, shot, type, pageErrors } = yield* openPage()
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      yield* type("tell me a story")
      // the whole text came at once; its audio lasts seconds: part of it is shown, with "speaking…"
      yield* until(`window.baton.played > 0 && (${shownOf}).length > 10`, 15_000)
      const mid = yield* evaluate<{ shown: string; speaking: boolean; text: string }>(
        `({ shown: ${shownOf}, text: (${story}).text, speaking: document.getElementById("speaking").classList.contains("on") })`
      )
      yield* shot("text-follows-audio-mid")
      assert.strictEqual(mid.text, STORY)
      assert.isBelow(mid.shown.length, STORY.length, "not the whole reply while it is spoken")
      assert.isTrue(STORY.startsWith(mid.shown))
      assert.isTrue(mid.speaking)
      yield* until(`(${shownOf}) === ${JSON.stringify(STORY)} && !document.getElementById("speaking").classList.contains("on")`, 20_000)
      yield* shot("text-follows-audio-done")
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 60_000)

  it.live("a reply cut by a typed message is shown cut: the words heard, marked \"cut off\"", () =>
    Effect.gen(function*() {
      const { until, evaluate, shot, type, pageErrors } = yield* openPage()
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      yield* type("tell me a story")
      yield* until(`(${shownOf}).length > 20`, 15_000)
      yield* type("hello")
      yield* until(`(${storyLine})?.querySelector(".cut-mark") != null`, 15_000).pipe(
        Effect.tapError(() => Effect.flatMap(evaluate<string>(`document.getElementById("events").textContent`), (events) => Effect.logError(events)))
      )
      yield* until(`document.getElementById("transcript").textContent.includes("you:hello")`)
      const cut = yield* evaluate<string>(shownOf)
      yield* shot("cut-reply")
      assert.isBelow(cut.length, STORY.length)
      assert.isTrue(STORY.startsWith(cut.trim()))
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 60_000)

  it.live("under the autoplay policy: a \"click to start audio\" control, nothing refused or logged before it, sound after it", () =>
    Effect.gen(function*() {
      const { page, until, evaluate, shot, console, pageErrors } = yield* openPage({ agent: greetingFront, autoplayPolicy: true })
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      // the greeting's audio came before any gesture: not played, not queued
      yield* until(`window.baton.dropped > 0`, 15_000)
      yield* until(`document.getElementById("transcript").textContent.includes("Hello.")`, 15_000)
      assert.isTrue(yield* evaluate<boolean>(`!document.getElementById("startAudio").hidden && window.baton.ctx === null`))
      yield* shot("autoplay-control")
      yield* Effect.promise(() => page.click("#startAudio"))
      yield* until(`window.baton.ctx?.state === "running" && document.getElementById("startAudio").hidden`)
      yield* Effect.promise(async () => {
        await page.fill("#text", "tell me a story")
        await page.press("#text", "Enter")
      })
      yield* until(`window.baton.played > 0`, 15_000)
      yield* shot("autoplay-started")
      assert.deepStrictEqual(console.filter((m) => m.includes("AudioContext")), [])
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 60_000)

  it.live("while the user speaks, the microphone's level shows on a meter", () =>
    Effect.gen(function*() {
      const { page, until, shot, pageErrors } = yield* openPage({ transcribe: "hmm" })
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      assert.isTrue(yield* Effect.promise(() => page.isHidden("#level")))
      yield* Effect.promise(() => page.check("#openMic"))
      yield* until(`!document.getElementById("level").hidden && document.getElementById("level").value > 0.3`, 15_000)
      yield* shot("level-meter")
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 60_000)

  it.live("with the voice pipeline, the interim transcript shows in the transcript as the user speaks, then their words", () =>
    Effect.gen(function*() {
      const question = yield* speak("What is the weather in Paris?").pipe(Effect.provide(engines))
      const mic = AudioFrame.concat([AudioFrame.silence(500, 16000), question, AudioFrame.silence(4000, 16000)])
      const model = ScriptedModel.layer([{ when: () => true, reply: { text: "Sunny." } }])
      const { page, until, evaluate, shot, pageErrors } = yield* openPage({ models: Layer.mergeAll(model, engines), mic })
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      const interims: Array<string> = []
      yield* Effect.promise(() => page.check("#openMic"))
      // polled: the guesses show in the transcript while the words are spoken
      yield* Effect.promise(async () => {
        for (const end = Date.now() + 20_000; Date.now() < end;) {
          const text = await page.evaluate(`document.querySelector("#transcript .interim")?.textContent ?? ""`) as string
          if (text !== "" && !interims.includes(text)) interims.push(text)
          if (interims.length > 0 && text === "") break
          if (interims.length === 1) await shotOnce()
          await new Promise((r) => setTimeout(r, 20))
        }
      })
      yield* until(`document.querySelector("#transcript .user:not(.interim)") !== null`, 20_000)
      assert.isAbove(interims.length, 0, "an interim transcript was shown")
      assert.include(interims[0], "you (hearing…):")
      assert.strictEqual(yield* evaluate<number>(`document.querySelectorAll("#transcript .interim").length`), 0, "the guess gave way to the words")
      yield* shot("heard-final")
      assert.deepStrictEqual(pageErrors, [])
      async function shotOnce() {
        if (shotTaken) return
        shotTaken = true
        await page.screenshot({ path: join(SHOTS, "interim-transcript.png") })
      }
    }).pipe(Effect.scoped), 60_000)

  it.live("typing over the agent's words before its tool call (voice pipeline): the words stop, marked cut; the call runs; the message is answered after it", () =>
    Effect.gen(function*() {
      const looked: Array<string> = []
      const lookup = Tool.make("lookup_weather", {
        description: "the weather of a city",
        parameters: Schema.Struct({ city: Schema.String }),
        handler: ({ city }) => Effect.sync(() => (looked.push(city), `${city}: sunny`))
      })
      const desk = Agent.make({ name: "desk", instructions: "Weather.", tools: [lookup] })
      const model = ScriptedModel.layer([
        { when: { user: "weather in Paris" }, reply: { text: "Let me check the weather in Paris for you, it will only take a moment.", toolCalls: [{ name: "lookup_weather", arguments: { city: "Paris" } }] } },
        { when: { user: "windy" }, reply: { text: "Paris is sunny and calm." } }
      ])
      const { until, evaluate, shot, type, pageErrors, page } = yield* openPage({ agent: desk, models: Layer.mergeAll(model, engines) })
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      yield* Effect.promise(() => page.click("#startAudio"))
      yield* type("what's the weather in Paris?")
      const first = `window.baton.all.find((l) => l.said.startsWith("Let me check"))`
      yield* until(`window.baton.played > 0 && (${first})?.shown > 5`, 20_000)
      yield* type("is it windy?")
      yield* until(`(${first})?.cut === true`, 10_000)
      yield* until(`document.getElementById("transcript").textContent.includes("Paris is sunny and calm.")`, 20_000)
      yield* until(`!window.baton.talking`, 20_000)
      const cut = yield* evaluate<string>(`(${first}).div.querySelector(".words").textContent`)
      yield* shot("typed-over-tool-call")
      assert.deepStrictEqual(looked, ["Paris"], "the lookup ran")
      assert.isBelow(cut.length, "Let me check the weather in Paris for you, it will only take a moment.".length)
      assert.include(yield* evaluate<string>(`document.getElementById("events").textContent`), "function_tools_executed")
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 60_000)

  it.live("the timeline follows the latest event unless scrolled back, fits the width, opens in a new tab", () =>
    Effect.gen(function*() {
      const { page, until, evaluate, shot, type, pageErrors } = yield* openPage()
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      const box = `document.getElementById("timeline")`
      // the latest event (the rightmost bar) is in the box
      const latestInView = `(() => { const r = ${box}.getBoundingClientRect(); const right = Math.max(...[...${box}.querySelectorAll("g.bar")].map((g) => g.getBoundingClientRect().right)); return right > r.left && right <= r.right })()`
      const turns = (n: number) => `document.querySelectorAll("#transcript .user").length >= ${n} && window.baton.all.length >= ${n} && window.baton.all.every((l) => l.done || l.cut)`
      // turns until the call is wider than the panel
      for (let n = 0; n < 10; n++) {
        yield* type(`hi number ${n}`)
        yield* until(turns(n + 1), 15_000)
        yield* until(`window.baton.svg.includes("hi number ${n}")`, 10_000)
        if (yield* evaluate<boolean>(`${box}.scrollLeft > 0`)) break
      }
      assert.isAbove(yield* evaluate<number>(`${box}.scrollLeft`), 0, "the panel scrolled along")
      assert.isTrue(yield* evaluate<boolean>(latestInView))
      yield* shot("timeline-follows")
      // scrolled back: the next picture keeps the place
      yield* evaluate(`(${box}.scrollLeft = 0, ${box}.dispatchEvent(new Event("scroll")), true)`)
      const svgBefore = yield* evaluate<string>(`window.baton.svg`)
      yield* type("hi again")
      yield* until(`window.baton.svg !== ${JSON.stringify(svgBefore)}`, 15_000)
      assert.strictEqual(yield* evaluate<number>(`${box}.scrollLeft`), 0)
      // fit width
      yield* Effect.promise(() => page.check("#fit"))
      const fit = yield* evaluate<{ svg: number; box: number }>(`({ svg: ${box}.querySelector("svg").getBoundingClientRect().width, box: ${box}.clientWidth })`)
      assert.isAtMost(Math.abs(fit.svg - fit.box), 2)
      yield* shot("timeline-fit")
      // the full picture in a new tab
      const [popup] = yield* Effect.promise(() => Promise.all([page.waitForEvent("popup"), page.click("#openTimeline")]))
      yield* Effect.promise(() => popup.waitForLoadState())
      assert.include(yield* Effect.promise(() => popup.content()), "<svg")
      yield* shot("timeline-full", popup)
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 90_000)

  it.live("/favicon.ico answers 200 with a small icon, and the page asks for nothing that fails", () =>
    Effect.gen(function*() {
      const { page, server, until, shot, pageErrors } = yield* openPage()
      const failed: Array<string> = []
      page.on("response", (r) => r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`))
      yield* Effect.promise(() => page.reload())
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      const icon = yield* Effect.promise(() => fetch(`${server.url}/favicon.ico`).then(async (r) => ({ status: r.status, type: r.headers.get("content-type"), body: await r.text() })))
      assert.strictEqual(icon.status, 200)
      assert.include(icon.type ?? "", "image/svg+xml")
      assert.isBelow(icon.body.length, 2000)
      assert.deepStrictEqual(failed, [])
      yield* Effect.promise(() => page.goto(`${server.url}/favicon.ico`))
      yield* shot("favicon")
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 60_000)
})
