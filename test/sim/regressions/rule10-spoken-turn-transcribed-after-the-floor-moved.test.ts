/**
 * OpenAI transcribes the user's audio on its own time: the transcript may come after the
 * server has started answering the turn. The user spoke while the holder ran a tool that hands
 * off; the server's answer came first and was held (a tool step), and the handoff passed the
 * turn on before its words had come: it was dropped with an error ("never transcribed"), and
 * the new holder never answered what the user said. The turn now waits for its words, and
 * whoever holds the floor when they come answers it. (Found by reading the code after seed
 * 420778; the simulation now draws such late transcripts too.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, Handoff, Tool } from "../../../src/index.ts"

describe("rule 10: quiescent runs (a spoken turn transcribed late)", () => {
  it.effect("rule 10: a spoken turn passed on before its transcript came is answered by the new holder once it comes", () => {
    const billing = Agent.make({ name: "billing", instructions: "You are billing." })
    const desk = Agent.make({
      name: "desk",
      instructions: "You are desk.",
      tools: [
        Tool.make("transfer", {
          description: "transfer to billing",
          handler: () => Effect.sleep("300 millis").pipe(Effect.as(Handoff.to(billing)))
        })
      ]
    })
    return Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: desk })
      yield* drive(session.idle)
      yield* session.send("my bill")
      // The desk's transfer runs for 300 ms; the user asks a question meanwhile (50 ms of
      // speech); the server answers it at once, its transcript comes 400 ms later.
      yield* drive(Effect.sleep("100 millis"))
      yield* session.pushAudio(ScriptedRealtime.utterance("what about tuesday"))
      yield* drive(Effect.sleep("2 seconds").pipe(Effect.andThen(session.idle)))
      assert.strictEqual((yield* session.currentAgent)?.name, "billing")
      const events = yield* session.eventLog
      assert.deepStrictEqual(events.filter((e) => e.type === "error"), [])
      assert.isTrue(text.textOf("billing").includes("Tuesday works."), text.textOf("billing"))
      // Nothing of the desk's was heard after the turn it could not take.
      assert.isFalse(text.textOf("desk").includes("Tuesday works."))
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({
        speechDuration: "50 millis",
        transcriptDelay: "400 millis",
        rules: [
          { when: { user: "my bill" }, reply: { toolCalls: [{ name: "transfer" }] } },
          { when: { user: "what about tuesday" }, reply: { text: "Tuesday works." } },
          { when: (r) => r.instructions === "You are billing.", reply: { text: "Billing here." } },
          { when: (r) => r.instructions === "You are desk.", reply: { text: "Desk here." } }
        ]
      }),
      TextCapture.layer
    )))
  })
})
