/**
 * Error events carry structure (reason, status, retryable, one line), not a pretty cause with a
 * stack: unit cases over effect/ai's reasons, and a 401 from a chat-completions server read back
 * from the session's `error` event.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Layer, Redacted } from "effect"
import { AiError } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { OpenAiChat } from "../../layers/openai/OpenAiChat.ts"
import { RealtimeError } from "../../services/RealtimeModel.ts"
import * as ErrorInfo from "../../src/ErrorInfo.ts"
import { Agent, AgentSession } from "../../src/index.ts"
import * as MockChat from "../layers/openai/MockChatServer.ts"

const ai = (reason: AiError.AiErrorReason) => AiError.make({ module: "Test", method: "streamText", reason })
const http = (status: number) => ({ response: { status, headers: {} }, body: "" })

describe("ErrorInfo", () => {
  it("reads effect/ai reasons: reason, status, retryable, one line", () => {
    const key = ErrorInfo.fromError(ai(new AiError.AuthenticationError({ kind: "InvalidKey", description: "Incorrect API key provided", http: http(401) } as any)))
    assert.deepInclude(key, { reason: "InvalidKey", status: 401, retryable: false })
    assert.match(key.message, /^InvalidKey \(401\): Incorrect API key provided; check the API key/)
    const limited = ErrorInfo.fromError(ai(new AiError.RateLimitError({ http: http(429) } as any)))
    assert.deepInclude(limited, { reason: "RateLimited", status: 429, retryable: true })
    const server = ErrorInfo.fromError(ai(new AiError.InternalProviderError({ description: "boom\n  at stack line", http: http(503) } as any)))
    assert.deepInclude(server, { reason: "ServerError", status: 503, retryable: true })
    assert.notInclude(server.message, "\n")
    const network = ErrorInfo.fromError(ai(new AiError.NetworkError({ reason: "TransportError", method: "POST", url: "http://x", description: "ECONNREFUSED" })))
    assert.deepInclude(network, { reason: "Transport", retryable: true })
    assert.deepInclude(ErrorInfo.fromCause(Cause.die(new Error("plain\nmore"))), { reason: "Unknown", message: "plain" })
  })

  it("reads a realtime response the server failed by its code", () => {
    const failed = (code?: string) => ErrorInfo.fromError(new RealtimeError({ reason: "failed", message: "The server had an error.", ...(code ? { code } : {}) }))
    assert.deepInclude(failed("server_error"), { reason: "ServerError", retryable: true, message: "ServerError: The server had an error." })
    assert.deepInclude(failed("inference_rate_limit_exceeded"), { reason: "RateLimited", retryable: true })
    assert.deepInclude(failed("insufficient_quota"), { reason: "QuotaExhausted", retryable: false })
    assert.deepInclude(failed(), { reason: "ServerError", retryable: true })
    // other realtime reasons keep their reading
    assert.deepInclude(ErrorInfo.fromError(new RealtimeError({ reason: "closed", message: "gone" })), { reason: "Transport" })
  })

  it.live("a 401 from the chat server becomes one error event: InvalidKey, 401, not retryable, no stack", () =>
    Effect.gen(function*() {
      const server = yield* MockChat.make
      server.reply(MockChat.errorReply(401, { message: "Incorrect API key provided: sk-te***", type: "invalid_request_error", code: "invalid_api_key" }))
      const agent = Agent.make({ name: "a", instructions: "A" })
      const failed = yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent })
        return yield* session.run("hello").pipe(Effect.flip)
      }).pipe(
        Effect.provide(OpenAiChat.layer({ baseUrl: server.baseUrl, apiKey: Redacted.make("sk-test-wrong"), model: "m" }).pipe(Layer.provide(FetchHttpClient.layer))),
        Effect.scoped
      )
      assert.strictEqual(failed._tag, "TurnFailed")
      if (failed._tag !== "TurnFailed") return
      const [error] = failed.errors
      assert.deepInclude(error, { source: "model", reason: "InvalidKey", status: 401, retryable: false })
      assert.notMatch(error!.message, /\n|\s+at\s|\.ts:\d+/)
      assert.notInclude(error!.message, "sk-test-wrong")
    }).pipe(Effect.scoped))
})
