/**
 * Found by the simulation once scenarios got realtime agents (seed 537, shrunk; also 560, 648,
 * 841, 1028, 1145 ...).
 *
 * "An error answer falls back to a fresh connection" (rule 7). When the error answer to a
 * pipelined update arrives while a response is already being generated on the connection, the
 * lease is revoked ("fallback") under that reply: it fails with "the connection left <agent>
 * (fallback)" and the user's turn gets no answer. realtime/Reply.ts's `request` asks once more on a
 * fresh connection only when the fallback comes before the response started.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, Tool } from "../../../src/index.ts"

const agent: Agent.Agent = Agent.make({
  name: "agent",
  instructions: "Help.",
  tools: [Tool.make("lookup", { description: "look up", handler: () => Effect.succeed("found") })]
})

describe("rule 7: reuse when possible, never by accident (simulation regression)", () => {
  it.effect("rule 7: a reply being generated when an update's error answer arrives is answered on the fresh connection", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent })
      yield* drive(session.run("first question"))
      // The second update (the context of the next turn) is refused 250 ms later, while the
      // answer (290 ms) is being generated.
      yield* drive(session.run("second question"))
      const errors = (yield* session.eventLog).flatMap((e) => (e.type === "error" && e.source === "model" ? [e.message.split("\n")[0]] : []))
      assert.deepStrictEqual(errors, [])
      assert.isTrue(text.textOf("agent").endsWith("Second answer."), text.textOf("agent"))
    }).pipe(Effect.provide(Layer.mergeAll(
      ScriptedRealtime.layer({
        ackDelay: "250 millis",
        rejectUpdate: (n) => n % 2 === 0,
        rules: [
          { when: { user: "first question" }, reply: { toolCalls: [{ name: "lookup" }] } },
          { when: { toolOutput: "found" }, reply: {} },
          { when: { user: "second question" }, reply: { text: "Second answer.", delay: "290 millis" } }
        ]
      }),
      TextCapture.layer
    ))))
})
