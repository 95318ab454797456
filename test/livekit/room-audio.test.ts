/**
 * The room's audio path through @livekit/rtc-node's own classes, offline (LoopbackRoom): the
 * user's speech goes AudioSource → LocalAudioTrack → AudioStream into a job's session (the
 * offline voice pipeline hears it), the floor passes, and the new agent's reply is published as
 * frames on the agent's track, read back the same way. RtcNode's Layer disposes rtc-node.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Layer, Option, Redacted, Stream } from "effect"
import * as Job from "../../layers/livekit/Job.ts"
import * as LoopbackRoom from "../../layers/livekit/LoopbackRoom.ts"
import { RoomError } from "../../layers/livekit/Room.ts"
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

describe("LiveKit room audio: rtc-node failing under a job", () => {
  /** rtc-node with the agent's AudioSource (the second one the loopback room makes, after the
   * user's microphone) closed before its first frame: its own captureFrame then rejects. */
  const closedAgentSource = Layer.effect(
    RtcNode,
    Effect.gen(function*() {
      const rtc = yield* RtcNode
      let made = 0
      class AgentSourceClosed extends rtc.AudioSource {
        private readonly agents = made++ === 1
        override async captureFrame(frame: InstanceType<typeof rtc.AudioFrame>) {
          if (this.agents) await this.close()
          return super.captureFrame(frame)
        }
      }
      return { ...rtc, AudioSource: AgentSourceClosed }
    })
  ).pipe(Layer.provide(RtcNode.layer))

  it.live("a rejected AudioSource.captureFrame ends the job with a RoomError saying what failed and the fix, not a defect", () =>
    Effect.gen(function*() {
      const hello = Agent.make({ name: "hello", instructions: "Greet.", onEnter: Agent.say("Hello, how can I help?").pipe(Effect.asVoid) })
      const room = yield* LoopbackRoom.make()
      const exit = yield* Job.run({ id: "J_1", roomName: "loopback", url: "ws://unused", token: Redacted.make("unused") }, { agent: hello }).pipe(
        Effect.provide(room.layer),
        Effect.scoped,
        Effect.timeout("20 seconds"),
        Effect.exit
      )
      assert.isTrue(Exit.isFailure(exit), "the job ended")
      if (Exit.isSuccess(exit)) return
      assert.isFalse(Cause.hasDies(exit.cause), `a defect: ${Cause.pretty(exit.cause)}`)
      const error = Cause.findErrorOption(exit.cause)
      assert.isTrue(Option.isSome(error) && error.value instanceof RoomError, Cause.pretty(exit.cause))
      const message = (error as Option.Some<RoomError>).value.message
      assert.match(message, /cannot play the agent's audio into its LiveKit track: AudioSource is closed/)
      assert.include(message, "npm install @livekit/rtc-node")
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(engines, model, closedAgentSource))), 60_000)
})
