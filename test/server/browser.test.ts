/**
 * The playground page in a real headless Chromium (Debian's, driven by playwright-core), with a
 * fake microphone playing a WAV file: the page opens /ws, streams the microphone through its
 * AudioWorklet, the realtime mock hears a turn and calls the transfer tool, the floor passes to
 * the weather agent, whose spoken answer the page plays and shows. Chromium comes from
 * `npm run setup`; without it this test fails with the install line.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { openPage as open } from "./browserPage.ts"

const openPage = open()

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
