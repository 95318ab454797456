/**
 * OpenAI transcribes the user's audio on its own time: the transcript of a spoken turn may come
 * after the server's whole answer to it (issue 40 item 2). The user's words still take their
 * place before that answer, as in the server's conversation: in the agent's context (what its
 * next request, or a connection seeded from it, sees), in the session's history, and in the
 * events that say where they went.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Layer } from "effect"
import { drive } from "../../layers/testing/Drive.ts"
import type * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as ScriptedRealtime from "../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import type { ChatItem } from "../../src/ChatContext.ts"
import { Agent, AgentSession, RunResult } from "../../src/index.ts"

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "what is the weather" }, reply: { text: "It is sunny today." } },
  { when: { user: "and tomorrow" }, reply: { text: "Rain tomorrow." } }
]

const said = (items: Iterable<ChatItem>) =>
  [...items].flatMap((i) => (i._tag === "Message" ? [`${i.role}: ${i.text}`] : []))

/** One spoken turn whose transcript comes `transcriptDelay` after its end, then a typed one. */
const twoTurns = Effect.gen(function*() {
  const rt = yield* ScriptedRealtime.ScriptedRealtime
  const text = yield* TextCapture.TextCapture
  const session = yield* AgentSession.start({ agent: Agent.make({ name: "voice", instructions: "You answer by voice." }) })
  yield* drive(session.idle)
  yield* session.pushAudio(ScriptedRealtime.utterance("what is the weather"))
  yield* drive(Effect.sleep("2 seconds").pipe(Effect.andThen(session.idle)))
  assert.isTrue(text.textOf("voice").includes("It is sunny today."), text.textOf("voice"))
  const spoken = yield* session.history
  yield* drive(session.run("and tomorrow"))
  return { rt, session, spoken }
})

const layer = (transcriptDelay: Duration.Input) =>
  Layer.mergeAll(ScriptedRealtime.layer({ rules, speechDuration: "50 millis", transcriptDelay }), TextCapture.layer)

describe("rule 1: a spoken turn's words keep their place in the conversation", () => {
  it.effect("rule 1: a spoken turn transcribed after its answer is recorded before the answer", () =>
    Effect.gen(function*() {
      const { rt, session, spoken } = yield* twoTurns
      // The answer had ended before the words came.
      assert.deepStrictEqual(said(spoken), ["user: what is the weather", "assistant: It is sunny today."])
      const history = yield* session.history
      assert.deepStrictEqual(said(history), [
        "user: what is the weather",
        "assistant: It is sunny today.",
        "user: and tomorrow",
        "assistant: Rain tomorrow."
      ])
      // The agent's own context, as its next request synced it to the server: the same order.
      assert.deepStrictEqual(said(rt.connections[0]!.items), said(history))
      // The event says where the words went: before the answer, which was recorded first.
      const events = yield* session.eventLog
      const added = events.flatMap((e) => (e.type === "conversation_item_added" ? [e] : []))
      const user = added.find((e) => e.item._tag === "Message" && e.item.role === "user")!
      const answer = added.find((e) => e.item._tag === "Message" && e.item.role === "assistant")!
      assert.isTrue(answer.seq < user.seq)
      assert.strictEqual(user.before, answer.item.id)
      // A run's result over those events lists them in the history's order.
      const run = new RunResult.RunResult(events)
      run.expect.nextEvent().isAgentHandoff({ to: "voice" })
      run.expect.nextEvent().isMessage({ role: "user", content: "what is the weather" })
      run.expect.nextEvent().isMessage({ role: "assistant", content: "It is sunny today." })
      assert.strictEqual(rt.connections.length, 1)
    }).pipe(Effect.provide(layer("1 second"))))

  it.effect("rule 1: a spoken turn transcribed before its answer is appended as it comes", () =>
    Effect.gen(function*() {
      const { session, spoken } = yield* twoTurns
      assert.deepStrictEqual(said(spoken), ["user: what is the weather", "assistant: It is sunny today."])
      const events = yield* session.eventLog
      const added = events.flatMap((e) => (e.type === "conversation_item_added" ? [e] : []))
      assert.isTrue(added.every((e) => e.before === undefined))
      assert.deepStrictEqual(said(added.map((e) => e.item)), said(yield* session.history))
    }).pipe(Effect.provide(layer("0 millis"))))
})
