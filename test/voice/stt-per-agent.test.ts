/**
 * Each agent may listen with its own speech-to-text options (`sttByAgent`): after a handoff, the
 * next utterance is heard with the new holder's (a French desk hears in French). Scripted
 * engines: speech is non-zero samples, the STT answers each utterance in turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Queue, Stream } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as AudioInput from "../../services/AudioInput.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import { Stt, type SttEvent, type SttOptions } from "../../services/Stt.ts"
import { Tts } from "../../services/Tts.ts"
import { Agent, Tool } from "../../src/index.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { until } from "../helpers.ts"
import { recorder } from "./harness.ts"
import * as ScriptedVad from "./scriptedVad.ts"

const RATE = 16000
const opened: Array<string | undefined> = []
const answers = ["transfer me to the French desk", "bonjour"]

const engines = Layer.mergeAll(
  ScriptedVad.layer({ minSpeechMs: 40, minSilenceMs: 200 }),
  Layer.succeed(Stt, Stt.of({
    sampleRate: RATE,
    stream: (options?: SttOptions) =>
      Effect.gen(function*() {
        opened.push(options?.language)
        const events = yield* Queue.unbounded<SttEvent>()
        return {
          events: Stream.fromQueue(events),
          push: () => Effect.void,
          endUtterance: Effect.suspend(() => Queue.offer(events, { _tag: "Final", text: answers.shift() ?? "" })).pipe(Effect.asVoid)
        }
      })
  })),
  Layer.succeed(Tts, Tts.of({ sampleRate: RATE, synthesize: () => Stream.make(AudioFrame.silence(20, RATE)) }))
)

describe("voice pipeline: speech to text per agent", () => {
  it.live("after a handoff the next utterance is heard with the new holder's STT options", () =>
    Effect.gen(function*() {
      const french = Agent.make({ name: "french", instructions: "Français." })
      const front = Agent.make({ name: "front", instructions: "Front.", tools: [Tool.handoff("to_french", () => french)] })
      const line = yield* AudioInput.makeQueue
      const out = recorder()
      const { session } = yield* VoicePipeline.start({
        agent: front,
        input: line.service.frames,
        voice: { stt: { language: "en" }, sttByAgent: { french: { language: "fr" } } }
      }).pipe(Effect.provideService(AudioOutput, out.output))
      const utter = Effect.gen(function*() {
        for (let i = 0; i < 15; i++) yield* line.offer(AudioFrame.make(new Int16Array(320).fill(900), RATE)).pipe(Effect.andThen(Effect.sleep(2)))
        for (let i = 0; i < 40; i++) yield* line.offer(AudioFrame.silence(20, RATE)).pipe(Effect.andThen(Effect.sleep(2)))
      })
      yield* utter
      yield* until("the handoff", () => Effect.runSync(session.currentAgent)?.name === "french")
      yield* session.idle
      yield* utter
      yield* until("the French turn", () => Effect.runSync(session.history).items.some((i) => i._tag === "Message" && i.text === "bonjour"))
      assert.deepStrictEqual(opened, ["en", "fr"])
      const heardBy = Effect.runSync(session.history).items.flatMap((i) => (i._tag === "Message" && i.role === "user" ? [`${i.agent}: ${i.text}`] : []))
      assert.deepStrictEqual(heardBy, ["front: transfer me to the French desk", "french: bonjour"])
    }).pipe(Effect.scoped, Effect.provide([engines, ScriptedModel.layer([{ when: { user: /French desk/ }, reply: { toolCalls: [{ name: "to_french" }] } }])])), 30_000)
})
