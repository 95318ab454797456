/**
 * The room's audio path through @livekit/rtc-node's own classes, offline (LoopbackRoom): the
 * user's speech goes AudioSource → LocalAudioTrack → AudioStream into a job's session (the
 * offline voice pipeline hears it), the floor passes, and the new agent's reply is published as
 * frames on the agent's track, read back the same way. RtcNode's Layer disposes rtc-node.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Redacted, Stream } from "effect"
import * as Job from "../../layers/livekit/Job.ts"
import * as LoopbackRoom from "../../layers/livekit/LoopbackRoom.ts"
import { RtcNode } from "../../layers/rtc/RtcNode.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Agent, Tool } from "../../src/index.ts"
import { engines, silence, speak } from "../voice/harness.ts"
import { until } from "../helpers.ts"

const weather = Agent.make({ name: "weather", instructions: "Weather.", onEnter: Agent.say("It will be sunny and warm all day.").pipe(Effect.asVoid) })
const greeter = Agent.make({ name: "greeter", instructions: "Greet.", tools: [Tool.handoff("transfer_to_weather", () => weather)] })
const model = ScriptedModel.layer([{ when: { user: /weather|whether/i }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } }])


describe("LiveKit room audio (rtc-node loopback)", () => {
  it.live("a spoken question in the room is heard, the floor passes, the answer is published as audio frames", () =>
    Effect.gen(function*() {
      const question = yield* speak("What is the weather in Paris?")
      const room = yield* LoopbackRoom.make()
      const job = yield* Job.run({ id: "J_1", roomName: "loopback", url: "ws://unused", token: Redacted.make("unused") }, { agent: greeter }).pipe(
        Effect.provide(room.layer),
        Effect.scoped,
        Effect.forkScoped
      )
      // what the agent publishes, read back from its track from the start (10 ms frames, for 8 s)
      const published: Array<AudioFrame.AudioFrame> = []
      const reader = yield* room.agentAudio.pipe(
        Effect.flatMap((audio) => audio.pipe(Stream.take(800), Stream.runForEach((f) => Effect.sync(() => void published.push(f))))),
        Effect.forkScoped
      )
      // the user speaks into the room, in 10 ms frames paced by rtc-node
      yield* room.speak(AudioFrame.split(AudioFrame.concat([silence(300), question, silence(1200)]), 10))
      yield* until("the agent's words in the room", () => room.texts.some((t) => t.text === "It will be sunny and warm all day."))
      assert.isTrue(room.texts.some((t) => t.topic === "lk.transcription" && /weather/.test(t.text)), JSON.stringify(room.texts))
      assert.strictEqual(room.attributes["lk.agent.name"], "weather")
      // the reply was published: its frames, read back from the agent's track, are speech (not silence)
      const loud = published.filter((f) => f.data.some((s) => Math.abs(s) > 500)).length
      assert.isAbove(loud, 100, `${loud} of ${published.length} frames carried speech`)
      yield* Fiber.interrupt(reader)
      yield* room.leave
      yield* until("the job ended", () => job.pollUnsafe() !== undefined)
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(engines, model, RtcNode.layer))), 60_000)
})
