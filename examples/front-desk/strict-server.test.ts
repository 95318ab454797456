/**
 * The front desk end to end through the real chat-completions layer against a local
 * OpenAI-compatible server as strict as OpenAI's: it refuses any request whose tool parameters
 * are not an object schema (400 invalid_function_parameters), as the handoff tools' were.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { OpenAiChat } from "@baton-voice/baton/openai"
import { AgentSession } from "@baton-voice/baton"
import * as MockChat from "../../test/layers/openai/MockChatServer.ts"
import { greeter, makeFrontDesk } from "./agents.ts"

const text = (t: string) => MockChat.sse([MockChat.delta({ role: "assistant", content: t }), MockChat.delta({}, "stop")])
const call = (name: string, args = "{}") =>
  MockChat.sse([MockChat.toolDelta(0, { name, arguments: args }, "call_1"), MockChat.delta({}, "tool_calls")])

describe("front desk against a strict OpenAI-compatible server", () => {
  it.live("greets, hands off to weather through transfer_to_weather (a no-parameter tool), and the weather agent answers", () =>
    Effect.gen(function*() {
      const server = yield* MockChat.make
      server.reply(
        text("Hi, this is Kelly."), // greeter's onEnter
        call("transfer_to_weather"),
        text("Sunny here, which city?") // weather's onEnter
      )
      const layer = OpenAiChat.layer({ baseUrl: server.baseUrl, apiKey: Redacted.make("sk-test"), model: "gpt-4o-mini" }).pipe(
        Layer.provide(FetchHttpClient.layer)
      )
      const { result, log } = yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: greeter, userdata: makeFrontDesk() })
        yield* session.idle
        const result = yield* session.run("What's the weather like?")
        return { result, log: yield* session.eventLog }
      }).pipe(Effect.provide(layer), Effect.scoped)
      result.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
      assert.deepStrictEqual(log.filter((e) => e.type === "error"), [])
      for (const request of server.requests) {
        for (const tool of request.body.tools ?? []) {
          assert.strictEqual(tool.function.parameters.type, "object", tool.function.name)
          assert.isObject(tool.function.parameters.properties, tool.function.name)
        }
      }
      assert.strictEqual(server.requests.length, 3)
    }).pipe(Effect.scoped))
})
