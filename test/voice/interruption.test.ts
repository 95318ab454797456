/**
 * Voice decisions that need no real audio to be exact: scripted engines (VAD on non-zero
 * samples, an STT that hears what the frames are marked with, a TTS making 50 ms of audio a
 * character... of silence marked per agent voice), so each case is the rule, not the engines.
 *
 * - a false interruption (speech over a reply, long enough to cut it, with no words) cuts the
 *   reply and then says its unheard rest again;
 * - each agent speaks with its own TTS voice options.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Queue, Stream } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as AudioInput from "../../services/AudioInput.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import { Stt, type SttEvent } from "../../services/Stt.ts"
import { Tts, type TtsOptions } from "../../services/Tts.ts"
import { Agent, AgentTask, Tool } from "../../src/index.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { recorder } from "./harness.ts"
import { until } from "../helpers.ts"
import * as ScriptedVad from "./scriptedVad.ts"

const RATE = 16000
const voicesUsed: Array<{ readonly text: string; readonly voice: string | undefined }> = []

const engines = Layer.mergeAll(
  ScriptedVad.layer({ minSpeechMs: 40, minSilenceMs: 200 }),
  // hears nothing: every utterance's final is empty (speech with no words)
  Layer.succeed(Stt, Stt.of({
    sampleRate: RATE,
    stream: () =>
      Effect.gen(function*() {
        const events = yield* Queue.unbounded<SttEvent>()
        return { events: Stream.fromQueue(events), push: () => Effect.void, endUtterance: Queue.offer(events, { _tag: "Final", text: "" }).pipe(Effect.asVoid) }
      })
  })),
  Layer.succeed(Tts, Tts.of({
    sampleRate: RATE,
    synthesize: (text: string, options?: TtsOptions) => {
      voicesUsed.push({ text, voice: options?.voice })
      return Stream.make(AudioFrame.make(new Int16Array((text.length * 50 * RATE) / 1000).fill(7), RATE))
    }
  }))
)

const LONG = "One two three four five six. Seven eight nine ten eleven twelve."


describe("voice pipeline decisions (scripted engines)", () => {
  it.live("a false interruption: the reply is cut, the speech had no words, the unheard rest is said again", () =>
    Effect.gen(function*() {
      const host = Agent.make({ name: "host", instructions: "Talk.", onEnter: Agent.say(LONG).pipe(Effect.asVoid) })
      const out = recorder()
      const line = yield* AudioInput.makeQueue
      const { session } = yield* VoicePipeline.start({ agent: host, input: line.service.frames, voice: { minInterruptionMs: 200 } }).pipe(
        Effect.provideService(AudioOutput, out.output)
      )
      yield* until("the reply playing for 600 ms", () => {
        const first = out.played.find((p) => p.agent === "host")
        return first !== undefined && Date.now() - first.at > 600
      })
      // 400 ms of "speech" (non-zero samples), then silence: long enough to cut, no words
      for (let i = 0; i < 20; i++) yield* line.offer(AudioFrame.make(new Int16Array(320).fill(1000), RATE)).pipe(Effect.andThen(Effect.sleep(20)))
      for (let i = 0; i < 60; i++) yield* line.offer(AudioFrame.silence(20, RATE)).pipe(Effect.andThen(Effect.sleep(20)))
      yield* until("two speeches of the host", () => new Set(out.played.filter((p) => p.agent === "host").map((p) => p.speechId)).size === 2, 30_000)
      yield* session.idle
      const said = (yield* session.history).items.flatMap((i) => (i._tag === "Message" && i.role === "assistant" ? [i] : []))
      assert.lengthOf(said, 2)
      const [cut, again] = said.map((m) => (m._tag === "Message" ? m.text : ""))
      assert.isTrue(said[0]!._tag === "Message" && said[0]!.interrupted)
      assert.isTrue(LONG.startsWith(cut!) && cut!.length < LONG.length, `cut: "${cut}"`)
      // what was said again is the rest, so the user heard the whole reply once
      assert.strictEqual(`${cut} ${again}`, LONG)
      assert.lengthOf(out.clears, 1)
    }).pipe(Effect.scoped, Effect.provide([engines, ScriptedModel.layer([])])), 60_000)

  it.live("each agent speaks with its own TTS voice; the others use the default", () =>
    Effect.gen(function*() {
      voicesUsed.length = 0
      const weather = Agent.make({ name: "weather", instructions: "Weather.", onEnter: Agent.say("Sunny.").pipe(Effect.asVoid) })
      const front = Agent.make({
        name: "front",
        instructions: "Front.",
        tools: [Tool.handoff("to_weather", () => weather)],
        onEnter: Agent.say("Welcome.").pipe(Effect.asVoid)
      })
      const out = recorder()
      const { session } = yield* VoicePipeline.start({
        agent: front,
        input: Stream.never,
        voice: { tts: { voice: "rms" }, voices: { weather: { voice: "slt" } } }
      }).pipe(Effect.provideService(AudioOutput, out.output))
      yield* session.run("weather please")
      assert.deepStrictEqual(voicesUsed, [{ text: "Welcome.", voice: "rms" }, { text: "Sunny.", voice: "slt" }])
    }).pipe(Effect.scoped, Effect.provide([engines, ScriptedModel.layer([{ when: { user: /weather/ }, reply: { toolCalls: [{ name: "to_weather" }] } }])])), 30_000)

  it.live("rule 6 on voice: a say() right before an AgentTask is played whole before the task's first audio", () =>
    Effect.gen(function*() {
      const verify: AgentTask.AgentTask<string> = AgentTask.make<string>({
        name: "verify",
        instructions: "Verify.",
        onEnter: Agent.say("Verification here.").pipe(Effect.asVoid)
      })
      const front = Agent.make({
        name: "front",
        instructions: "Front.",
        tools: [Tool.make("verify_caller", {
          description: "verify",
          handler: () => Agent.say("One moment, connecting you.").pipe(Effect.andThen(AgentTask.run(verify)))
        })]
      })
      const out = recorder()
      const { session } = yield* VoicePipeline.start({ agent: front, input: Stream.never }).pipe(Effect.provideService(AudioOutput, out.output))
      yield* session.run("check me")
      yield* until("the task's audio", () => out.played.some((p) => p.agent === "verify"))
      const lastFront = Math.max(...out.played.flatMap((p, i) => (p.agent === "front" ? [i] : [])))
      const firstVerify = out.played.findIndex((p) => p.agent === "verify")
      assert.isAbove(lastFront, -1, "front's words were played")
      assert.isBelow(lastFront, firstVerify, "every frame of front's words came before the task's first")
      const said = (yield* session.history).items.flatMap((i) => (i._tag === "Message" && i.role === "assistant" ? [i] : []))
      const interjection = said.find((m) => m._tag === "Message" && m.agent === "front")
      assert.isTrue(interjection?._tag === "Message" && interjection.text === "One moment, connecting you." && !interjection.interrupted)
    }).pipe(Effect.scoped, Effect.provide([engines, ScriptedModel.layer([{ when: { user: "check me" }, reply: { toolCalls: [{ name: "verify_caller" }] } }])])), 30_000)
})
