/**
 * A batch that hands the floor on (or completes its task) has the session handle it on the
 * batch's own turn of the event loop (`SessionCore.handleNow`). An Effect queue wakes its taker
 * on the next turn (a `setImmediate` in Node), so without it every handoff waited one turn. The
 * probe is a `setImmediate` the tool schedules: it runs on the next turn, and by then the floor
 * must have moved and the new agent must have answered.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Handoff, Tool } from "../../src/index.ts"
import type { SessionEvent } from "../../src/Events.ts"

/** A turn of the event loop: the probes scheduled before it have run. */
const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** What the session's event log holds on the next turn of the event loop. */
const onNextTurn = (session: AgentSession.AgentSession) => {
  const seen: { events?: ReadonlyArray<SessionEvent> } = {}
  setImmediate(() => {
    seen.events = Effect.runSync(session.eventLog)
  })
  return seen
}

describe("a handoff applies on the batch's turn", () => {
  it.live("the tool's handoff has applied, and the new agent's onEnter reply finished, one event-loop turn later", () => {
    let probe: { events?: ReadonlyArray<SessionEvent> } = {}
    let current: AgentSession.AgentSession | undefined
    const b = Agent.make({ name: "b", instructions: "You are B.", onEnter: Agent.reply({ instructions: "greet" }).pipe(Effect.asVoid) })
    const a = Agent.make({
      name: "a",
      instructions: "You are A.",
      tools: [
        Tool.make("transfer", {
          description: "transfer to B",
          handler: () =>
            Effect.sync(() => {
              probe = onNextTurn(current!)
              return Handoff.to(b)
            })
        })
      ]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      current = session
      yield* session.run("go")
      yield* nextTurn
      assert.isDefined(probe.events, "the probe did not run")
      const events = probe.events ?? []
      assert.isTrue(events.some((e) => e.type === "agent_handoff" && e.from === "a" && e.to === "b"), "the floor had not moved")
      assert.isTrue(events.some((e) => e.type === "speech_finished" && e.agent === "b"), "B had not answered")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "go", agent: "a" }, reply: { toolCalls: [{ name: "transfer" }] } },
      { when: { instructions: "greet", agent: "b" }, reply: { text: "Hello from B" } }
    ])))
  })

  it.live("a task's completion has returned the floor to its caller one event-loop turn later", () => {
    let probe: { events?: ReadonlyArray<SessionEvent> } = {}
    let current: AgentSession.AgentSession | undefined
    const confirm: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "confirm",
      instructions: "Confirm.",
      tools: [
        Tool.make("done", {
          description: "confirmed",
          handler: () =>
            Effect.suspend(() => {
              probe = onNextTurn(current!)
              return AgentTask.complete(confirm, "yes")
            })
        })
      ]
    })
    const a = Agent.make({
      name: "a",
      instructions: "You are A.",
      tools: [Tool.make("ask", { description: "ask to confirm", handler: () => AgentTask.run(confirm) })]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      current = session
      yield* session.run("book")
      yield* nextTurn
      assert.isDefined(probe.events, "the probe did not run")
      const events = probe.events ?? []
      assert.isTrue(events.some((e) => e.type === "agent_handoff" && e.from === "confirm" && e.to === "a" && e.kind === "return"))
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "book", agent: "a" }, reply: { toolCalls: [{ name: "ask" }] } },
      { when: { agent: "confirm" }, reply: { toolCalls: [{ name: "done" }] } },
      { when: { toolOutput: "yes", agent: "a" }, reply: { text: "Booked." } }
    ])))
  })
})
