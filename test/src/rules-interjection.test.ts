/**
 * Words a tool says while its batch runs are heard before what the batch leads to (rules 2 and
 * 6): before an AgentTask's first words, before the floor returns from a task's completing tool,
 * and before a handoff moves the floor. None of them is dropped.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, AgentTask, Handoff, Tool } from "../../src/index.ts"

const order = (capture: TextCapture.TextCaptureService) => capture.writes.map((w) => `${w.agent}: ${w.text}`)

describe("rule 6: words said right before an AgentTask are heard before the task's", () => {
  it.effect("a tool says 'One moment...' then runs the task: those words come first, whole", () =>
    Effect.gen(function*() {
      const verify: AgentTask.AgentTask<string> = AgentTask.make<string>({
        name: "verify",
        instructions: "Verify.",
        onEnter: Agent.say("Verification here. Your date of birth?").pipe(Effect.asVoid),
        tools: [Tool.make("verified", { description: "verified", handler: () => AgentTask.complete(verify, "ok") })]
      })
      const front = Agent.make({
        name: "front",
        instructions: "Front.",
        tools: [Tool.make("verify_caller", {
          description: "verify",
          handler: () => Agent.say("One moment, connecting you to verification.").pipe(Effect.andThen(AgentTask.run(verify)))
        })]
      })
      const session = yield* AgentSession.start({ agent: front })
      yield* session.run("check me")
      const capture = yield* TextCapture.TextCapture
      assert.deepStrictEqual(order(capture), [
        "front: One moment, connecting you to verification.",
        "verify: Verification here. Your date of birth?"
      ])
      yield* session.run("1 May 1990")
      const after = order(capture)
      assert.strictEqual(after.at(-1), "front: Verified, thanks.")
      // the caller's next prompt is one a provider accepts: the words ride with the tool call
      const model = yield* ScriptedModel.ScriptedModel
      const last = model.requestsFor("front").at(-1)!
      assert.strictEqual(last.last.kind, "tool")
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { user: "check me", agent: "front" }, reply: { toolCalls: [{ name: "verify_caller" }] } },
      { when: { agent: "verify", user: /May/ }, reply: { toolCalls: [{ name: "verified" }] } },
      { when: { agent: "front", toolOutput: "ok" }, reply: { text: "Verified, thanks." } }
    ])))))
})

describe("rule 2: a tool's words before the floor moves are spoken, not dropped", () => {
  it.effect("a task's completing tool says 'All set.': it is heard before the caller speaks again", () =>
    Effect.gen(function*() {
      const booking: AgentTask.AgentTask<string> = AgentTask.make<string>({
        name: "booking",
        instructions: "Book.",
        tools: [Tool.make("done", {
          description: "booked",
          handler: () => Agent.say("All set, see you Friday.").pipe(Effect.andThen(AgentTask.complete(booking, "booked")))
        })]
      })
      const front = Agent.make({
        name: "front",
        instructions: "Front.",
        tools: [Tool.make("book", { description: "book", handler: () => AgentTask.run(booking) })]
      })
      const session = yield* AgentSession.start({ agent: front })
      yield* session.run("book me")
      const capture = yield* TextCapture.TextCapture
      assert.deepStrictEqual(order(capture), ["booking: All set, see you Friday.", "front: Anything else?"])
      const events = yield* session.eventLog
      const said = events.find((e) => e.type === "speech_finished" && e.agent === "booking")
      assert.isDefined(said)
      assert.isFalse(said!.type === "speech_finished" && said!.interrupted)
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { user: "book me", agent: "front" }, reply: { toolCalls: [{ name: "book" }] } },
      { when: { agent: "booking" }, reply: { toolCalls: [{ name: "done" }] } },
      { when: { agent: "front", toolOutput: "booked" }, reply: { text: "Anything else?" } }
    ])))))

  it.effect("a handoff tool says 'Transferring you now.': heard before the new agent, and nothing after the handoff", () =>
    Effect.gen(function*() {
      const billing = Agent.make({ name: "billing", instructions: "Billing.", onEnter: Agent.say("Billing here.").pipe(Effect.asVoid) })
      const front = Agent.make({
        name: "front",
        instructions: "Front.",
        tools: [Tool.make("to_billing", {
          description: "transfer",
          handler: () => Agent.say("Transferring you now.").pipe(Effect.as(Handoff.to(billing)))
        })]
      })
      const session = yield* AgentSession.start({ agent: front })
      yield* session.run("billing please")
      const capture = yield* TextCapture.TextCapture
      assert.deepStrictEqual(order(capture), ["front: Transferring you now.", "billing: Billing here."])
      const events = yield* session.eventLog
      const handoff = events.find((e) => e.type === "agent_handoff" && e.to === "billing")!
      assert.isFalse(events.some((e) => e.seq > handoff.seq && e.type === "speech_created" && e.agent === "front"))
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { user: "billing please", agent: "front" }, reply: { toolCalls: [{ name: "to_billing" }] } }
    ])))))
})
