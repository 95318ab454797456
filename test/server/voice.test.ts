/**
 * The service with the offline voice pipeline (no realtime model): a browser-like client streams
 * a spoken question as 16 kHz PCM16 over /ws; the server hears it (WebRTC VAD, pocketsphinx), the
 * floor passes, and the agents' answers come back as audio (flite) and as text.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, Tool } from "../../src/index.ts"
import { engines, speak } from "../voice/harness.ts"
import { connect, start, wait } from "./harness.ts"

const weather = Agent.make({ name: "weather", instructions: "Weather.", onEnter: Agent.say("It will be sunny and warm all day.").pipe(Effect.asVoid) })
const greeter = Agent.make({ name: "greeter", instructions: "Greet.", tools: [Tool.handoff("transfer_to_weather", () => weather)] })
const model = ScriptedModel.layer([{ when: { user: /weather|whether/i }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } }])

describe("Server voice (cascaded pipeline)", () => {
  it.live("/ws: a spoken question is heard, the floor passes, the answer comes back spoken and written", () =>
    Effect.gen(function*() {
      const question = yield* speak("What is the weather in Paris?").pipe(Effect.provide(engines))
      const server = yield* start(greeter, Layer.mergeAll(model, engines))
      const client = yield* connect(`${server.ws}/ws`)
      const ready = yield* wait(() => client.waitFor((f) => f.type === "ready"))
      assert.strictEqual(ready.audio, "pipeline")
      client.sendJson({ type: "audio_format", sampleRate: 16000 })
      const audio = AudioFrame.concat([AudioFrame.silence(300, 16000), question, AudioFrame.silence(1200, 16000)])
      for (const frame of AudioFrame.split(audio, 20)) client.socket.send(AudioFrame.toPcm16(frame))
      const heard = yield* wait(() => client.waitFor((f) => f.type === "user_input_transcribed" && f.final, "the final transcript", 15_000))
      assert.match(heard.transcript, /weather/)
      yield* wait(() => client.waitFor((f) => f.type === "agent_handoff" && f.to === "weather", "the handoff"))
      yield* wait(() => client.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "the spoken answer", 15_000))
      const format = client.frames.find((f) => f.type === "audio_format")
      assert.strictEqual(format?.sampleRate, 16000)
      // about 2.5 s of flite's speech came back as PCM16
      const bytes = client.binary.reduce((n, b) => n + b.byteLength, 0)
      assert.isAbove(bytes / 2 / 16000, 1.5)
      assert.include(client.frames.filter((f) => f.type === "agent_text").map((f) => f.delta).join(""), "It will be sunny and warm all day.")
    }).pipe(Effect.scoped), 60_000)
})
