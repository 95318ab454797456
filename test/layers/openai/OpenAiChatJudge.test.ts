/**
 * The judge (src/Judge.ts) over the OpenAI chat layer, against the chat-completions mock on
 * 127.0.0.1: the verdict comes back as streamed text and is decoded; a fail verdict fails.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Judge } from "../../../src/index.ts"
import { liveTimeout, modelLayer } from "./helpers.ts"
import * as Mock from "./MockChatServer.ts"

const support = Agent.make({ name: "support", instructions: "Help with orders." })

const answered = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: support })
  return yield* session.run("I want to change my order")
}).pipe(Effect.provide(ScriptedModel.layer([{ when: { user: "order" }, reply: { text: "Sure, what is your order number?" } }])))

const verdictReply = (json: string) =>
  Mock.sse([Mock.delta({ role: "assistant", content: "" }), Mock.delta({ content: json.slice(0, 12) }), Mock.delta({ content: json.slice(12) }), Mock.delta({}, "stop")])

describe("OpenAiChat as a judge", () => {
  it.effect("judge: a verdict streamed by the OpenAI chat layer passes, and the request carries the intent and the message", () =>
    Effect.gen(function*() {
      const server = yield* Mock.make
      server.reply(verdictReply(JSON.stringify({ verdict: "pass", reason: "It asks for the order number." })))
      const result = yield* answered
      const message = yield* liveTimeout(
        result.expect.containsMessage({ role: "assistant" }).judge(modelLayer(server), { intent: "asks for the order number" })
      )
      assert.strictEqual(message.content, "Sure, what is your order number?")
      const body = server.requests[0]!.body
      const user = JSON.stringify(body.messages)
      assert.include(user, "Intent: asks for the order number")
      assert.include(user, "Sure, what is your order number?")
    }))

  it.effect("judge: a fail verdict from the OpenAI chat layer fails with JudgeFailed and its reason", () =>
    Effect.gen(function*() {
      const server = yield* Mock.make
      server.reply(verdictReply(JSON.stringify({ verdict: "fail", reason: "It does not greet." })))
      const result = yield* answered
      const error = yield* liveTimeout(
        result.expect.containsMessage({ role: "assistant" }).judge(modelLayer(server), { intent: "greets the caller" })
      ).pipe(Effect.flip)
      assert.instanceOf(error, Judge.JudgeFailed)
      assert.strictEqual((error as Judge.JudgeFailed).reason, "It does not greet.")
    }))
})
