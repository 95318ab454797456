/**
 * A phone caller's keypad on /twilio: Twilio's `dtmf` messages, gathered into one turn that the
 * agent holding the floor answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent } from "../../src/index.ts"
import { connect, start, wait } from "./harness.ts"

const agent = Agent.make({ name: "ivr", instructions: "Ask for the account number." })

describe("Server /twilio keypad", () => {
  it.live("digits pressed up to # are one user turn, answered by the holder; a key that is not one is skipped", () =>
    Effect.gen(function*() {
      const heard: Array<string> = []
      const model = ScriptedModel.layer([{
        when: { agent: "ivr" },
        reply: (request) => {
          if (request.last.kind === "user") heard.push(request.last.text)
          return { text: "Thank you." }
        }
      }])
      const server = yield* start(agent, model)
      const caller = yield* connect(`${server.ws}/twilio`)
      const streamSid = "MZ00000000000000000000000000000003"
      caller.sendJson({ event: "connected", protocol: "Call", version: "1.0.0" })
      caller.sendJson({ event: "start", streamSid, start: { streamSid, mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 } } })
      for (const [i, digit] of [..."42x7#"].entries()) {
        caller.sendJson({ event: "dtmf", streamSid, sequenceNumber: String(i + 3), dtmf: { track: "inbound_track", digit } })
      }
      yield* wait(async () => {
        for (let i = 0; i < 300 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 10))
      })
      assert.deepStrictEqual(heard, ["DTMF: 427"])
    }).pipe(Effect.scoped), 30_000)
})
