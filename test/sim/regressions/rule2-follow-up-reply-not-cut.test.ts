/**
 * Found by the simulation (seed 376, shrunk; also 573, 715, 865, 1569 ...).
 *
 * After a tool step, the reply that answers the tool outputs (the follow-up) is generated while
 * the speech's phase still says "tools": ToolBatch.run sets `speech.phase = "tools"` and
 * Reply.run never sets it back when it asks the model again. `interruptCurrent` then treats the
 * follow-up as a batch whose calls must not be cut, so:
 * - a forced handoff (`session.handoff`) moves the floor while the old holder's follow-up is
 *   still being generated: that speech ends (and what it said is recorded) after the handoff;
 * - `session.interrupt` does not stop the follow-up reply.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive, until } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, Tool } from "../../../src/index.ts"
import { eventsOfAgentAfter, handoffSeq } from "../../helpers.ts"

const b: Agent.Agent = Agent.make({ name: "b", instructions: "You are B." })
const a: Agent.Agent = Agent.make({
  name: "a",
  instructions: "You are A.",
  tools: [Tool.make("lookup", { description: "look something up", handler: () => Effect.succeed("found it") })]
})

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "look it up" }, reply: { toolCalls: [{ name: "lookup" }] } },
  // The follow-up: it starts speaking after 1 s and goes on for 2 s more.
  {
    when: { toolOutput: "found it" },
    reply: { text: ["Here ", "is ", "what ", "I ", "found."], delay: "1 second", chunkDelay: "500 millis" }
  }
]

describe("rule 2: silence after handoff (simulation regression)", () => {
  it.effect("rule 2: a forced handoff cuts the follow-up reply the holder generates after a tool step", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: a })
      yield* session.send("look it up")
      // The tool has answered and A asks the model for its follow-up reply.
      yield* until(() => model.requestsFor("a").length === 2)
      const outcome = yield* session.handoff(b)
      assert.strictEqual(outcome._tag, "Applied")
      yield* drive(session.idle)
      const events = yield* session.eventLog
      // What A was saying ended before the floor moved: nothing from A after the handoff.
      assert.deepStrictEqual(eventsOfAgentAfter(events, "a", handoffSeq(events, "b")), [])
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("rule 2: session.interrupt stops the follow-up reply after a tool step", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: a })
      yield* session.send("look it up")
      // The follow-up has started speaking.
      yield* until(() => text.textOf("a").length > 0)
      yield* session.interrupt
      yield* drive(session.idle)
      assert.notStrictEqual(text.textOf("a"), "Here is what I found.")
    }).pipe(Effect.provide([ScriptedModel.layer(rules), TextCapture.layer])))
})
