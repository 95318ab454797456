/**
 * Barge-in on real audio (rule 1 for voice: the floor holder's words stop when the user takes
 * the turn). The agent starts a long reply; one second into its audio, the user
 * starts to speak (flite's voice, fed in real time like a live line). The reply's audio stops at
 * the frame where the user's speech reaches `minInterruptionMs`, and the history keeps only the
 * words that were played. Where the cut falls in the reply depends on how fast this machine runs
 * the VAD (a loaded one falls behind real time): the words kept are checked against the audio
 * played by the cut, not against a fixed count.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as AudioInput from "../../services/AudioInput.ts"
import { AudioOutput, type AudioOutputService } from "../../services/AudioOutput.ts"
import { Agent } from "../../src/index.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { until } from "../helpers.ts"
import { engines, recorder, silence, speak } from "./harness.ts"

// Long enough (about twenty seconds) that the cut falls inside it even when the VAD runs late
const LONG = [
  "It will be sunny and warm all day.",
  "Tomorrow will be sunny and warm.",
  "I can book a table for two people tonight.",
  "The weekend looks fine as well, with a little wind by the sea.",
  "On Monday the clouds come back, and there may be some rain in the evening.",
  "Tuesday and Wednesday stay cool and grey, with showers in the afternoon.",
  "By Thursday the sun is out again, and the rest of the week is warm."
].join(" ")
const host = Agent.make({ name: "host", instructions: "You talk.", onEnter: Agent.say(LONG).pipe(Effect.asVoid) })
const THRESHOLD = 500

/** Where speech starts in `audio`: the first 10 ms window louder than a whisper (ms). */
const onsetMs = (audio: AudioFrame.AudioFrame) => {
  const window = audio.sampleRate / 100
  for (let start = 0; start + window <= audio.data.length; start += window) {
    let energy = 0
    for (let i = start; i < start + window; i++) energy += audio.data[i]! * audio.data[i]!
    if (Math.sqrt(energy / window) > 500) return (start / audio.sampleRate) * 1000
  }
  return 0
}

describe("voice pipeline, barge-in on real audio", () => {
  it.live("the user speaks one second into a long reply: it stops within a frame of the threshold; the history keeps the words played", () =>
    Effect.gen(function*() {
      const interruption = yield* speak("I can book a table for two people tonight.")
      const replyMs = AudioFrame.durationMs(yield* speak(LONG))
      const out = recorder()
      // where the input is (ms of audio handed to the pipeline), and where the user's speech begins in it
      let inputMs = 0
      let speechAtMs: number | undefined
      let clearAtMs: number | undefined
      const output: AudioOutputService = {
        write: out.output.write,
        clear: (info) => Effect.sync(() => void (clearAtMs ??= inputMs)).pipe(Effect.andThen(out.output.clear(info)))
      }
      const firstAudio = () => out.played.find((p) => p.agent === "host")?.at
      // a live line: 20 ms frames in real time; silence until the reply has played for one second.
      // Each frame is due at its place on the line's clock (the line does not slow down when this
      // process is descheduled: late frames arrive together), so the input keeps pace with the playout.
      const line = yield* AudioInput.makeQueue
      const lineStartedAt = Date.now()
      let lineMs = 0
      const send = (frame: AudioFrame.AudioFrame) =>
        line.offer(frame).pipe(
          Effect.andThen(Effect.suspend(() => {
            lineMs += AudioFrame.durationMs(frame)
            return Effect.sleep(Math.max(0, lineStartedAt + lineMs - Date.now()))
          }))
        )
      yield* Effect.forkScoped(Effect.gen(function*() {
        while (firstAudio() === undefined || Date.now() - firstAudio()! < 1000) yield* send(silence(20))
        // flite's audio opens with a little silence: the speech starts at its first loud 10 ms
        speechAtMs = inputMs + onsetMs(interruption)
        for (const frame of AudioFrame.split(AudioFrame.concat([interruption, silence(1000)]), 20)) yield* send(frame)
        yield* line.end
      }))
      // counted as the pipeline takes each frame
      const live = line.service.frames.pipe(Stream.tap((frame) => Effect.sync(() => void (inputMs += AudioFrame.durationMs(frame)))))
      const { session, inputDone } = yield* VoicePipeline.start({ agent: host, input: live, voice: { minInterruptionMs: THRESHOLD } }).pipe(
        Effect.provideService(AudioOutput, output)
      )
      yield* inputDone
      // the user's turn answered: waited for, since under load its final transcript can come after
      // the input ended, and inputDone then completes just before the turn reaches the session
      yield* until("the host's answer", () => out.played.some((p) => p.agent === "host" && out.clears.every((c) => c.speechId !== p.speechId)), 60_000)
      yield* session.idle
      // the cut came when the user had spoken THRESHOLD ms (the VAD's onset estimate is within a few frames)
      assert.isDefined(clearAtMs, "the reply was cut")
      const spokenBeforeCut = clearAtMs! - speechAtMs!
      assert.isAtLeast(spokenBeforeCut, THRESHOLD - 60, `cut after ${spokenBeforeCut} ms of speech`)
      assert.isAtMost(spokenBeforeCut, THRESHOLD + 60, `cut after ${spokenBeforeCut} ms of speech`)
      // nothing of the reply was handed to the output after the cut
      const cut = out.clears.find((c) => c.agent === "host")!
      assert.isFalse(out.played.some((p) => p.speechId === cut.speechId && p.at > cut.at))
      // the history keeps a strict prefix of the reply's words: as many as the audio played by the
      // cut holds (speech taken as even, give or take a second and a half of it). Played: the time
      // since the first frame, but no more than was written (a loaded machine synthesizes late).
      const history = yield* session.history
      const said = history.items.flatMap((i) => (i._tag === "Message" && i.role === "assistant" && i.agent === "host" ? [i] : []))
      const kept = said[0]
      assert.isDefined(kept)
      assert.isTrue(kept!._tag === "Message" && kept!.interrupted)
      const keptText = kept!._tag === "Message" ? kept!.text : ""
      assert.isTrue(LONG.startsWith(keptText), `"${keptText}" is not a prefix of the reply`)
      const words = keptText.split(/\s+/).filter((w) => w !== "").length
      const replyWords = LONG.split(/\s+/).length
      const written = AudioFrame.concat(out.played.filter((p) => p.speechId === cut.speechId).map((p) => p.frame))
      const playedMs = Math.min(cut.at - firstAudio()!, AudioFrame.durationMs(written))
      const wordsPerSecond = replyWords / (replyMs / 1000)
      assert.isAtLeast(playedMs, 1000, "the user spoke one second into the reply")
      assert.isBelow(words, replyWords, keptText)
      assert.approximately(words, (replyWords * playedMs) / replyMs, 1.5 * wordsPerSecond, `"${keptText}" after ${playedMs} ms of ${Math.round(replyMs)}`)
      // and the user's words became the next turn, which the host answered
      const finals = (yield* session.eventLog).flatMap((e) => (e.type === "user_input_transcribed" && e.final ? [e.transcript] : []))
      assert.lengthOf(finals, 1)
      assert.strictEqual(said.at(-1)?._tag === "Message" ? said.at(-1)!.text : undefined, "Sure.")
    }).pipe(Effect.scoped, Effect.provide([engines, ScriptedModel.layer([{ when: { agent: "host" }, reply: { text: "Sure." } }])])), 120_000)
})
