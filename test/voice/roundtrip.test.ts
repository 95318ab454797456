/**
 * The cascade end to end on real audio, offline: flite speaks the user's words, the WebRTC VAD
 * and pocketsphinx hear them, the session (scripted model) hands off, the new agent's reply is
 * synthesized by flite and played; pocketsphinx transcribes what was played: the words match.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import { Agent, Tool } from "../../src/index.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { wordAccuracy } from "../layers/local/helpers.ts"
import { engines, frames, recorder, silence, speak, transcribe } from "./harness.ts"

const REPLY = "The weather is sunny and warm today."
const weather = Agent.make({
  name: "weather",
  instructions: "You tell the weather.",
  onEnter: Agent.reply({ instructions: "give the forecast" }).pipe(Effect.asVoid)
})
const greeter = Agent.make({
  name: "greeter",
  instructions: "You greet and transfer.",
  tools: [Tool.handoff("transfer_to_weather", () => weather)]
})
const model = ScriptedModel.layer([
  { when: { user: /weather|whether/i, agent: "greeter" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { instructions: "give the forecast" }, reply: { text: REPLY.split(/(?<= )/) } }
])

describe("voice pipeline, round trip on real audio", () => {
  it.live("spoken question → VAD → pocketsphinx → handoff → flite reply → pocketsphinx hears the reply's words", () =>
    Effect.gen(function*() {
      const question = yield* speak("What is the weather in Paris?")
      const out = recorder()
      const { session, inputDone } = yield* VoicePipeline.start({
        agent: greeter,
        input: Stream.fromIterable(frames(silence(300), question, silence(1200)))
      }).pipe(Effect.provideService(AudioOutput, out.output))
      yield* inputDone
      // the turn was handed on; wait for the whole cascade, the reply's playout included
      yield* Effect.promise(async () => {
        for (let i = 0; i < 300; i++) {
          const log = await Effect.runPromise(session.eventLog)
          if (log.some((e) => e.type === "speech_finished" && e.agent === "weather")) return
          await new Promise((r) => setTimeout(r, 20))
        }
      })
      yield* session.idle
      const events = yield* session.eventLog
      const heard = events.flatMap((e) => (e.type === "user_input_transcribed" && e.final ? [e.transcript] : []))
      assert.lengthOf(heard, 1)
      assert.isAtLeast(wordAccuracy("what is the weather in paris", heard[0]!), 0.6, heard[0])
      assert.isTrue(events.some((e) => e.type === "agent_handoff" && e.from === "greeter" && e.to === "weather"))
      // the greeter said nothing; the weather agent's reply was played, and it says the reply's words
      assert.strictEqual(out.played.filter((p) => p.agent === "greeter").length, 0)
      const said = yield* transcribe(out.audioOf("weather"))
      assert.isAtLeast(wordAccuracy(REPLY, said), 0.8, `the reply was heard as "${said}"`)
      const history = yield* session.history
      const last = history.items.filter((i) => i._tag === "Message" && i.role === "assistant").at(-1)
      assert.strictEqual(last?._tag === "Message" ? last.text : undefined, REPLY)
    }).pipe(Effect.scoped, Effect.provide([engines, model])), 60_000)
})
