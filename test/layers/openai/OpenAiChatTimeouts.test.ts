/**
 * A model that stalls does not hold the turn for ever: a server that sends headers and then
 * nothing, or stops mid-answer, ends the reply with a Timeout error (after `idleTimeout`), and the
 * session takes the next turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { OpenAiChat } from "../../../layers/openai/OpenAiChat.ts"
import { Agent, AgentSession } from "../../../src/index.ts"
import * as MockChat from "./MockChatServer.ts"

const agent = Agent.make({ name: "a", instructions: "A" })

describe("OpenAiChat timeouts", () => {
  it.live("headers then silence, and an answer that stops half-way, both end in a Timeout; the next turn is answered", () =>
    Effect.gen(function*() {
      const server = yield* MockChat.make
      server.reply(
        MockChat.sse([], { then: "hang", done: false }),
        MockChat.sse([MockChat.delta({ role: "assistant", content: "Half an ans" })], { then: "hang", done: false }),
        MockChat.sse([MockChat.delta({ role: "assistant", content: "All good." }), MockChat.delta({}, "stop")])
      )
      const model = OpenAiChat.layer({ baseUrl: server.baseUrl, apiKey: Redacted.make("sk-test"), model: "m", idleTimeout: "300 millis" }).pipe(
        Layer.provide(FetchHttpClient.layer)
      )
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent })
        const silent = yield* session.run("hello?").pipe(Effect.flip)
        assert.strictEqual(silent._tag, "TurnFailed")
        if (silent._tag === "TurnFailed") {
          assert.deepInclude(silent.errors[0], { source: "model", reason: "Timeout" })
          assert.match(silent.errors[0]!.message, /silent for 300ms/)
        }
        // the half answer was spoken: the turn answered (what was delivered is kept), with the timeout in its errors
        const half = yield* session.run("and now?")
        assert.strictEqual(half.errors[0]?.reason, "Timeout")
        assert.strictEqual(half.finalOutput, "Half an ans")
        const fine = yield* session.run("again")
        assert.strictEqual(fine.finalOutput, "All good.")
      }).pipe(Effect.provide(model), Effect.scoped)
      assert.strictEqual(server.requests.length, 3) // a stalled body is not retried
    }).pipe(Effect.scoped))

  it.live("bounds: a 5 MB error body is read only up to maxErrorBodyBytes; an answer over maxResponseChars is refused", () =>
    Effect.gen(function*() {
      const server = yield* MockChat.make
      const huge = JSON.stringify({ error: { message: "x".repeat(5 * 1024 * 1024), type: "server_error", code: null } })
      server.reply(
        { _tag: "Error", status: 400, body: huge },
        MockChat.sse([MockChat.delta({ role: "assistant", content: "y".repeat(3000) }), MockChat.delta({}, "stop")])
      )
      const model = OpenAiChat.layer({
        baseUrl: server.baseUrl,
        apiKey: Redacted.make("sk-test"),
        model: "m",
        maxErrorBodyBytes: 4096,
        maxResponseChars: 1000
      }).pipe(Layer.provide(FetchHttpClient.layer))
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent })
        const refused = yield* session.run("hello?").pipe(Effect.flip)
        assert.strictEqual(refused._tag, "TurnFailed")
        if (refused._tag === "TurnFailed") {
          assert.strictEqual(refused.errors[0]!.reason, "InvalidRequest")
          assert.isBelow(refused.errors[0]!.message.length, 8192)
        }
        const long = yield* session.run("talk a lot").pipe(Effect.flip)
        assert.strictEqual(long._tag, "TurnFailed")
        if (long._tag === "TurnFailed") assert.match(long.errors[0]!.message, /exceeded 1000 characters/)
      }).pipe(Effect.provide(model), Effect.scoped)
    }).pipe(Effect.scoped))
})
