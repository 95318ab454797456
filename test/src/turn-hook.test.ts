/**
 * `onUserTurnCompleted` (issue 37): an agent's hook sees the user's turn before the reply, may
 * add to what the model sees or stop the reply; the user's message is recorded either way.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, ChatContext, Turn } from "../../src/index.ts"

const promptText = (request: ScriptedModel.RecordedRequest) => JSON.stringify(request.prompt.content)
const userTexts = (history: ChatContext.ChatContext) =>
  history.items.flatMap((item) => (item._tag === "Message" && item.role === "user" ? [item.text] : []))

describe("turn hook", () => {
  it.effect("turn hook: retrieved text reaches this reply's prompt only, and the hook sees the user's message", () => {
    const seen: Array<string> = []
    const support = Agent.make({
      name: "support",
      instructions: "Answer from the manual.",
      onUserTurnCompleted: (turn) =>
        Effect.sync(() => {
          seen.push(`${turn.message.role}: ${turn.message.text} (last in context: ${turn.context.items.at(-1)?.id === turn.message.id})`)
          return turn.message.text.includes("reset") ? Turn.reply({ instructions: "From the manual: hold the button 10 s." }) : undefined
        })
    })
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: support })
      const first = yield* session.run("how do I reset it?")
      first.expect.containsMessage({ role: "assistant", content: "Hold the button for ten seconds." })
      yield* session.run("thanks")
      assert.deepStrictEqual(seen, ["user: how do I reset it? (last in context: true)", "user: thanks (last in context: true)"])
      const [withManual, next] = model.requestsFor("support")
      assert.include(promptText(withManual!), "hold the button 10 s")
      assert.notInclude(promptText(next!), "hold the button 10 s")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: (r) => promptText(r).includes("hold the button 10 s"), reply: { text: "Hold the button for ten seconds." } },
      { when: { agent: "support" }, reply: { text: "You're welcome." } }
    ])))
  })

  it.effect("turn hook: items the hook adds are kept in the agent's context after the user's message", () => {
    const support = Agent.make({
      name: "support",
      instructions: "Answer.",
      onUserTurnCompleted: () => Effect.succeed(Turn.reply({ add: [ChatContext.message("developer", "The caller is a premium customer.")] }))
    })
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: support })
      yield* session.run("hello")
      yield* session.run("again")
      const history = yield* session.history
      const texts = history.items.flatMap((item) => (item._tag === "Message" ? [`${item.role}: ${item.text}`] : []))
      assert.deepStrictEqual(texts.slice(0, 3), ["user: hello", "developer: The caller is a premium customer.", "assistant: Hi."])
      assert.include(promptText(model.requestsFor("support")[1]!), "premium customer")
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { agent: "support" }, reply: { text: "Hi." } }])))
  })

  it.effect("turn hook: a StopResponse means no model call and nothing said, and the user's message is recorded", () => {
    const quiet = Agent.make({
      name: "quiet",
      instructions: "Answer.",
      onUserTurnCompleted: (turn) => Effect.succeed(turn.message.text === "uh-huh" ? Turn.stopResponse("a backchannel") : Turn.reply())
    })
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: quiet })
      const result = yield* session.run("uh-huh")
      assert.strictEqual(model.requestsFor("quiet").length, 0)
      assert.isFalse(result.events.some((e) => e.type === "message" && e.role === "assistant"))
      assert.deepStrictEqual(userTexts(yield* session.history), ["uh-huh"])
      yield* session.run("what time is it?")
      assert.strictEqual(model.requestsFor("quiet").length, 1)
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { agent: "quiet" }, reply: { text: "Noon." } }])))
  })

  it.effect("turn hook: a hook that fails is reported as a hook error and the agent replies anyway", () => {
    const flaky = Agent.make({
      name: "flaky",
      instructions: "Answer.",
      onUserTurnCompleted: () => Effect.fail(new Error("the search index is down"))
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: flaky })
      const result = yield* session.run("hello")
      const error = (yield* session.eventLog).find((e) => e.type === "error")
      assert.strictEqual(error?.type === "error" ? error.source : undefined, "hook")
      assert.include(error?.type === "error" ? error.message : "", "the search index is down")
      result.expect.containsMessage({ role: "assistant", content: "Hi." })
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { agent: "flaky" }, reply: { text: "Hi." } }])))
  })

  it.effect("turn hook: a newer turn cuts a hook still running; only the newer turn is answered", () => {
    const slow = Agent.make({
      name: "slow",
      instructions: "Answer.",
      onUserTurnCompleted: (turn) => (turn.message.text === "first" ? Effect.never : Effect.void)
    })
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: slow })
      yield* session.send("first")
      yield* session.send("second")
      yield* session.idle
      assert.deepStrictEqual(userTexts(yield* session.history), ["first", "second"])
      const requests = model.requestsFor("slow")
      assert.strictEqual(requests.length, 1)
      assert.deepStrictEqual(requests[0]!.last, { kind: "user", text: "second" })
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: { agent: "slow" }, reply: { text: "Answered." } }])))
  })
})
