/**
 * Found by the simulation (seeds 245, 257, 270, 424, 6851 ..., shrunk).
 *
 * A tool that ends the call closes the session from inside its actor ("closing may be asked
 * from inside an actor", AgentSession.ts). Closing closes the actor's Scope; the tool's handler
 * runs in its own fiber in that Scope (ToolBatch.ts `execute`, `Effect.forkIn(owner.scope)`),
 * so it is interrupted before the speech fiber that awaits it: the call answers "cancelled",
 * the batch concludes as usual and, since a cancelled output asks for a reply, the agent makes
 * a new model call and speaks (or calls more tools) while the session closes (it still holds
 * the floor until every actor is closed). Closing should end what runs, not start a reply.
 * The application's own `session.close` during a tool call does the same (seed 1666).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import * as ScriptedRealtime from "../../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, Handoff, Tool } from "../../../src/index.ts"

const a: Agent.Agent = Agent.make({
  name: "a",
  instructions: "A",
  tools: [Tool.make("end_call", { description: "hang up", handler: (_, { session }) => session.close.pipe(Effect.as("bye")) })]
})

describe("rule 11: nothing leaks (simulation regression)", () => {
  it.effect("rule 11: a tool that ends the call closes the session without a model call or words after it", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("goodbye"))
      assert.strictEqual(model.requestsFor("a").length, 1)
      assert.strictEqual(text.textOf("a"), "Goodbye.")
      const history = yield* session.history
      assert.isFalse(history.items.some((i) => i._tag === "Message" && i.text === "Anything else?"))
    }).pipe(Effect.provide([
      ScriptedModel.layer([
        { when: { user: "goodbye" }, reply: { text: ["Good", "bye."], chunkDelay: "70 millis", toolCalls: [{ name: "end_call" }] } },
        { when: { agent: "a" }, reply: { text: "Anything else?" } }
      ]),
      TextCapture.layer
    ])))

  it.effect("rule 11: closing while a tool runs makes no model call after it", () => {
    const b: Agent.Agent = Agent.make({ name: "b", instructions: "B" })
    const greeter: Agent.Agent = Agent.make({
      name: "greeter",
      instructions: "Greet, then transfer.",
      tools: [Tool.make("transfer_slowly", { description: "transfer", handler: () => Effect.sleep("550 millis").pipe(Effect.as(Handoff.to(b))) })],
      onEnter: Agent.reply({ instructions: "greet" }).pipe(Effect.asVoid)
    })
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: greeter })
      // While transfer_slowly runs, the user says something and the application closes.
      yield* drive(Effect.sleep("140 millis").pipe(Effect.andThen(session.send("hello")), Effect.andThen(session.close)))
      assert.strictEqual(model.requestsFor("greeter").length, 1)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { instructions: "greet" }, reply: { toolCalls: [{ name: "transfer_slowly" }], delay: "110 millis" } },
      { when: { agent: "greeter" }, reply: { text: "Anything else?" } }
    ])))
  })

  // Seed 314345 (shrunk): the application asks for a reply just after the user's turn; the
  // turn's tool closes the session. `close` runs the shutdown in a fiber of its own, which
  // starts a scheduler turn later: in between the reply request reached the holder, which still
  // held the floor, and a speech started after the close was asked.
  it.effect("rule 11: a reply asked for just before a tool closes the session starts no speech", () => {
    const a2: Agent.Agent = Agent.make({
      name: "a2",
      instructions: "A2",
      tools: [Tool.make("hang_up", { description: "hang up", handler: (_, { session }) => session.close.pipe(Effect.as("bye")) })]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a2 })
      yield* drive(session.idle)
      yield* session.send("bye now")
      // Both reach the holder's mailbox before it takes the first: the reply request waits behind
      // the turn whose tool closes the session.
      const reply = yield* session.generateReply().pipe(Effect.flip, Effect.forkChild({ startImmediately: true }))
      yield* drive(session.awaitClosed)
      const events = yield* session.eventLog
      const closeAsked = events.findIndex((e) => e.type === "conversation_item_added" && e.item._tag === "FunctionCall")
      assert.isTrue(closeAsked >= 0)
      assert.deepStrictEqual(events.slice(closeAsked).filter((e) => e.type === "speech_created"), [])
      const error = yield* drive(Fiber.join(reply))
      // Refused as closed (by the session, or by the actor it had reached), not as "not the holder".
      assert.include(["session_closed", "agent_closed"], error._tag === "FloorError" ? error.reason : error._tag)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "bye now" }, reply: { toolCalls: [{ name: "hang_up" }] } }
    ])))
  })

  // Seed 602931 (shrunk; fails at e1363a9): a realtime reply waited for its connection (the
  // previous holder's cut answer had to end on the server first); the application closed the
  // session the moment the connection came, and the reply, resuming on that turn, still asked
  // the server for a response.
  it.effect("rule 11: a realtime reply whose connection comes as the session closes asks for no response", () => {
    const a0 = Agent.make({ name: "a0", instructions: "You are a0." })
    const a1 = Agent.make({ name: "a1", instructions: "You are a1." })
    return Effect.gen(function*() {
      const rt = yield* ScriptedRealtime.ScriptedRealtime
      const session = yield* AgentSession.start({ agent: a0 })
      yield* drive(session.idle)
      yield* session.send("first")
      yield* session.handoff(a1)
      yield* drive(Effect.sleep("140 millis"))
      yield* session.send("second")
      // Waits for a1's connection, like a1's reply does; the application closes as it comes.
      yield* drive(session.pushAudio(ScriptedRealtime.utterance("hello")).pipe(Effect.andThen(session.close)))
      const asked = rt.connections.flatMap((c) => c.responses.map((r) => r.instructions))
      assert.deepStrictEqual(asked.filter((i) => i === "You are a1."), [])
    }).pipe(Effect.provide(ScriptedRealtime.layer({
      responseDelay: "290 millis",
      rules: [{ when: () => true, reply: { text: "Answer." } }]
    })))
  })
})
