/**
 * Found by the simulation (seed 736, shrunk).
 *
 * On a handoff A -> B the session sends A a `Deactivate` whose `then` activates B once A's
 * `onExit` has run (hooks in order). If the floor moves on from B before that (a second handoff
 * B -> C while A's onExit still runs), B's `Deactivate` reaches B's mailbox first and its
 * `Activate` comes later: B runs `onExit` before `onEnter`, and the late `Activate` marks B
 * active (and, for an agent without hooks, queues the reply that continues the user's turn)
 * although C holds the floor. See Floor.ts `handoff` (the deferred `then`) and Actor.ts
 * `Activate`/`Deactivate`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession } from "../../../src/index.ts"
import { eventsOfAgentAfter, handoffSeq } from "../../helpers.ts"

describe("rule 5: hooks exactly once (simulation regression)", () => {
  it.effect("rule 5: an agent handed the floor and at once handed away runs onEnter before onExit", () => {
    const log: Array<string> = []
    const note = (line: string) => Effect.sync(() => void log.push(line))
    const a: Agent.Agent = Agent.make({ name: "a", instructions: "A", onExit: Effect.sleep("1 second") })
    const b: Agent.Agent = Agent.make({ name: "b", instructions: "B", onEnter: note("b.enter"), onExit: note("b.exit") })
    const c: Agent.Agent = Agent.make({ name: "c", instructions: "C", onEnter: note("c.enter") })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      assert.strictEqual((yield* session.handoff(b))._tag, "Applied")
      // A's onExit still runs: B holds the floor but is not activated yet.
      assert.strictEqual((yield* session.handoff(c))._tag, "Applied")
      yield* drive(session.idle)
      assert.deepStrictEqual(log.filter((l) => l.startsWith("b.")), ["b.enter", "b.exit"])
      assert.deepStrictEqual(log, ["b.enter", "b.exit", "c.enter"])
    }).pipe(Effect.provide(ScriptedModel.layer([])))
  })

  it.effect("rule 5: an agent without hooks handed the floor away before its activation queues no reply", () => {
    const a: Agent.Agent = Agent.make({ name: "a", instructions: "A", onExit: Effect.sleep("1 second") })
    const b: Agent.Agent = Agent.make({ name: "b", instructions: "B" })
    const c: Agent.Agent = Agent.make({ name: "c", instructions: "C" })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* session.handoff(b)
      yield* session.handoff(c)
      yield* drive(session.idle)
      const events = yield* session.eventLog
      assert.strictEqual((yield* session.currentAgent)?.name, "c")
      assert.deepStrictEqual(eventsOfAgentAfter(events, "b", handoffSeq(events, "c")), [])
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { agent: "c" }, reply: { text: "C here." } }])))
  })
})
