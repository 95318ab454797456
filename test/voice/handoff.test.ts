/**
 * Handoffs on voice (rules 1 and 2): a handoff while the outgoing agent's audio plays stops that
 * audio at once and keeps only its heard words; a handoff while the user is speaking gives their
 * words to the new holder.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as AudioInput from "../../services/AudioInput.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import { Agent } from "../../src/index.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { engines, recorder, silence, speak } from "./harness.ts"
import { until } from "../helpers.ts"

const LONG = "It will be sunny and warm all day. Tomorrow will be sunny and warm. I can book a table for two people tonight."


describe("voice pipeline, handoffs", () => {
  it.live("rule 2 on voice: a handoff while the outgoing agent speaks stops its audio at once; it keeps the words heard", () =>
    Effect.gen(function*() {
      const billing = Agent.make({ name: "billing", instructions: "Billing.", onEnter: Agent.say("Billing here.").pipe(Effect.asVoid) })
      const front = Agent.make({ name: "front", instructions: "Front.", onEnter: Agent.say(LONG).pipe(Effect.asVoid) })
      const out = recorder()
      const { session } = yield* VoicePipeline.start({ agent: front, input: Stream.never }).pipe(
        Effect.provideService(AudioOutput, out.output)
      )
      yield* until("front's audio for 700 ms", () => {
        const first = out.played.find((p) => p.agent === "front")
        return first !== undefined && Date.now() - first.at > 700
      })
      yield* session.handoff(billing)
      yield* until("billing's words played", () => out.played.some((p) => p.agent === "billing"))
      yield* session.idle
      const cut = out.clears.find((c) => c.agent === "front")
      assert.isDefined(cut, "front's audio was cleared")
      assert.isFalse(out.played.some((p) => p.agent === "front" && p.at > cut!.at), "front played after the handoff")
      assert.isTrue(out.played.filter((p) => p.agent === "billing").every((p) => p.at >= cut!.at))
      const history = yield* session.history
      const fronts = history.items.flatMap((i) => (i._tag === "Message" && i.agent === "front" ? [i] : []))
      const kept = fronts[0]
      assert.isTrue(kept?._tag === "Message" && kept.interrupted)
      const text = kept?._tag === "Message" ? kept.text : ""
      assert.isTrue(text.length < LONG.length && LONG.startsWith(text), `"${text}"`)
    }).pipe(Effect.scoped, Effect.provide([engines, ScriptedModel.layer([])])), 60_000)

  it.live("a handoff while the user is speaking: their words go to the new holder", () =>
    Effect.gen(function*() {
      const billing = Agent.make({ name: "billing", instructions: "Billing." })
      const front = Agent.make({ name: "front", instructions: "Front." })
      const question = yield* speak("I can book a table for two people tonight.")
      const line = yield* AudioInput.makeQueue
      const out = recorder()
      const { session } = yield* VoicePipeline.start({ agent: front, input: line.service.frames }).pipe(
        Effect.provideService(AudioOutput, out.output)
      )
      const frames = AudioFrame.split(AudioFrame.concat([silence(200), question, silence(1000)]), 20)
      let sent = 0
      yield* Effect.forkScoped(Effect.gen(function*() {
        for (const frame of frames) {
          yield* line.offer(frame)
          sent++
          yield* Effect.sleep(20)
        }
      }))
      // the user is mid-sentence (the session knows they speak) when the floor passes; waited
      // for, not assumed after so many frames: a loaded machine decodes behind the line
      yield* until("the user speaking", () =>
        Effect.runSync(session.eventLog).some((e) => e.type === "user_state_changed" && e.state === "speaking"))
      assert.isTrue(sent < frames.length - 50, `the handoff comes before the sentence ends (${sent} of ${frames.length} frames sent)`)
      yield* session.handoff(billing)
      yield* until("the user's turn", () => sent === frames.length)
      yield* until("billing's answer", () => out.played.some((p) => p.agent === "billing"))
      yield* session.idle
      const model = yield* ScriptedModel.ScriptedModel
      assert.lengthOf(model.requestsFor("front"), 0)
      const heard = model.requestsFor("billing").flatMap((r) => (r.last.kind === "user" ? [r.last.text] : []))
      assert.lengthOf(heard, 1)
      assert.match(heard[0]!, /table for two/)
    }).pipe(
      Effect.scoped,
      Effect.provide([engines, ScriptedModel.layer([{ when: { agent: "billing" }, reply: { text: "Booked." } }])])
    ), 60_000)
})

