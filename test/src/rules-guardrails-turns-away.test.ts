/**
 * The rules around three features of issue 37, each in a test named after the rule it holds
 * (docs/rules.md, "Calls and contexts"):
 *
 * - guardrails, rule 2: a tripped output guardrail whose policy hands off passes the floor; the
 *   tripped agent says nothing more and asks the model nothing after the handoff;
 * - the turn hook, rule 1: the user's turn goes to the holder only, so only the holder's
 *   `onUserTurnCompleted` sees it, also right after a handoff;
 * - user away, rule 11: an `onUserAway` that ends the call closes the session, and nothing is
 *   left running (the away watcher included), nothing starts after the close.
 *
 * Under TestClock with the scripted model.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"
import { Agent, AgentSession, Guardrail, type SessionEvent, Tool } from "../../src/index.ts"

const settle = Effect.gen(function*() {
  for (let i = 0; i < 5; i++) yield* Effect.yieldNow
})

describe("rules around guardrails, the turn hook and user away", () => {
  it.effect("rule 2: guardrail: the handoff policy passes the floor, and the tripped agent says nothing and asks the model nothing after it", () =>
    Effect.gen(function*() {
      const supervisor = Agent.make({ name: "supervisor", instructions: "Take over." })
      const noPrices = Guardrail.output("no_prices", {
        check: (text) => Effect.succeed(/\$\d/.test(text) ? "quoted a price" : undefined),
        policy: Guardrail.handoff(() => supervisor)
      })
      const sales = Agent.make({ name: "sales", instructions: "Sell.", guardrails: [noPrices] })
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: sales })
      yield* drive(session.run("price"))
      // A second turn: the supervisor answers it, not sales.
      yield* drive(session.run("and now?"))
      const events = yield* session.eventLog
      const handoff = events.find((e): e is Extract<SessionEvent, { type: "agent_handoff" }> => e.type === "agent_handoff" && e.to === "supervisor")
      assert.isDefined(handoff)
      assert.strictEqual(handoff!.from, "sales")
      const tripped = events.find((e) => e.type === "guardrail_tripped")
      assert.isDefined(tripped)
      assert.isBelow(tripped!.seq, handoff!.seq)
      // Nothing new from sales once it passed the floor: no speech, no words, no model call.
      const fromSales = events.filter((e) =>
        e.seq > handoff!.seq &&
        ((e.type === "speech_created" && e.agent === "sales") ||
          (e.type === "conversation_item_added" && e.agent === "sales" && e.item._tag === "Message" && e.item.role === "assistant"))
      )
      assert.deepStrictEqual(fromSales, [])
      assert.strictEqual(model.requestsFor("sales").length, 1)
      assert.strictEqual(model.requestsFor("supervisor").length, 2)
      // What sales said up to the cut stays, marked interrupted; "Thanks" was never said.
      const said = (yield* TextCapture.TextCapture).textOf("sales")
      assert.include(said, "$40")
      assert.notInclude(said, "Thanks")
    }).pipe(Effect.provide(Layer.merge(
      ScriptedModel.layer([
        { when: { agent: "sales" }, reply: { text: ["Our price ", "is $40. ", "Thanks ", "for calling."], chunkDelay: "100 millis" } },
        { when: { agent: "supervisor" }, reply: { text: "I can help with that." } }
      ]),
      TextCapture.layer
    ))))

  it.effect("rule 1: turn hook: only the holder's onUserTurnCompleted sees the user's turn, also right after a handoff", () => {
    const seen: Array<string> = []
    const hook = (name: string) => (turn: { readonly message: { readonly text: string } }) => Effect.sync(() => void seen.push(`${name}: ${turn.message.text}`))
    const weather: Agent.Agent = Agent.make({ name: "weather", instructions: "Weather.", onUserTurnCompleted: hook("weather") })
    const greeter = Agent.make({
      name: "greeter",
      instructions: "Greet.",
      tools: [Tool.handoff("transfer_to_weather", () => weather)],
      onUserTurnCompleted: hook("greeter")
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: greeter })
      yield* session.run("weather please")
      assert.strictEqual((yield* session.currentAgent)?.name, "weather")
      yield* session.run("in Paris?")
      yield* session.run("and tomorrow?")
      assert.deepStrictEqual(seen, ["greeter: weather please", "weather: in Paris?", "weather: and tomorrow?"])
      // The messages went to the same agents, as the history records them.
      const users = (yield* session.eventLog).flatMap((e) =>
        e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user" ? [`${e.agent}: ${e.item.text}`] : []
      )
      assert.deepStrictEqual(users, seen)
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { agent: "greeter", user: "weather please" }, reply: { toolCalls: [{ name: "transfer_to_weather", arguments: {} }] } },
      { when: { agent: "weather" }, reply: { text: "Sunny." } },
      { when: { agent: "greeter" }, reply: { text: "Hello." } }
    ])))
  })

  it.effect("rule 11: user away: an onUserAway that ends the call closes the session and leaves nothing running", () => {
    const desk = Agent.make({
      name: "desk",
      instructions: "Help.",
      onUserAway: (away) =>
        away.times === 1
          ? Agent.say("Are you still there?").pipe(Effect.asVoid)
          : Agent.CurrentAgent.use((agent) => agent.session.close)
    })
    return Effect.gen(function*() {
      const before = Diagnostics.snapshot()
      const events = yield* Effect.scoped(Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: desk, userAwayTimeout: "5 seconds" })
        yield* session.run("hello")
        const open = Diagnostics.snapshot()
        // The session, its actor, and the away watcher among its fibers.
        assert.strictEqual(open.sessions - before.sessions, 1)
        for (let i = 0; i < 2; i++) {
          yield* settle
          yield* TestClock.adjust("5 seconds")
          yield* settle
        }
        yield* session.awaitClosed
        return yield* session.eventLog
      }))
      yield* settle
      // Closed by the hook: the close is the last event; nothing started after it was asked.
      assert.strictEqual(events.at(-1)?.type, "close")
      const away = events.filter((e) => e.type === "user_state_changed" && e.state === "away")
      assert.strictEqual(away.length, 1)
      const afterAway = events.filter((e) => e.seq > away[0]!.seq)
      assert.deepStrictEqual(afterAway.filter((e) => e.type === "speech_created").length, 1, "one speech: the question")
      assert.deepStrictEqual(Diagnostics.snapshot(), before)
    }).pipe(Effect.provide(Layer.merge(ScriptedModel.layer([{ when: { agent: "desk" }, reply: { text: "Sure." } }]), TextCapture.layer)))
  })
})
