import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Layer } from "effect"
import { AiError } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import { OpenAiChat } from "../../../layers/openai/OpenAiChat.ts"
import {
  awaitLog,
  batonStream,
  collect,
  failureOf,
  httpSpanStartMillis,
  KEY,
  liveTimeout,
  makeCapture,
  modelLayer,
  spanText,
  textReply
} from "./helpers.ts"
import * as Mock from "./MockChatServer.ts"

const { delta, errorReply, sse } = Mock

const reasonOf = (error: unknown): AiError.AiErrorReason => {
  assert.isTrue(AiError.isAiError(error), `expected an AiError, got ${String(error)}`)
  return (error as AiError.AiError).reason
}

describe("OpenAiChat", () => {
  describe("errors and retries", () => {
    it.effect.each([
      { header: { "retry-after": "3" }, waitMs: 3_000 },
      { header: { "retry-after-ms": "1500" }, waitMs: 1_500 }
    ])("429 with $header: waits exactly the retry-after, then succeeds (2 requests)", ({ header, waitMs }) =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        const capture = yield* makeCapture
        server.reply(
          errorReply(429, { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" }, header),
          textReply("after", " wait")
        )
        const fiber = yield* collect(batonStream("hi")).pipe(
          Effect.provide(modelLayer(server, { retryBaseDelay: "100 millis" })),
          Effect.provide(capture.layer),
          Effect.forkChild
        )
        yield* liveTimeout(awaitLog(capture, "OpenAiChat request failed"))
        yield* liveTimeout(awaitLog(capture, "retrying in"))
        // the retry is visible: reason, status and the wait, in one warning line
        assert.isTrue(
          capture.logs.some((line) => line.includes(`model request failed (RateLimited 429); retrying in ${Duration.format(Duration.millis(waitMs))}`)),
          capture.logs.join("\n")
        )
        assert.strictEqual(server.requests.length, 1)
        yield* TestClock.adjust(Duration.millis(waitMs))
        const { exit, parts } = yield* liveTimeout(Fiber.join(fiber))
        assert.isTrue(Exit.isSuccess(exit))
        assert.strictEqual(server.requests.length, 2)
        assert.deepStrictEqual(httpSpanStartMillis(capture), [0, waitMs])
        assert.deepStrictEqual(
          parts.filter((p) => p.type === "text-delta").map((p) => p.delta),
          ["after", " wait"]
        )
      }))

    it.effect("5xx is retried with exponential backoff, at most maxRetries times", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        const capture = yield* makeCapture
        const overloaded = errorReply(503, { message: "The engine is overloaded", type: "server_error", code: null })
        server.reply(overloaded, overloaded, overloaded, textReply("never sent"))
        const fiber = yield* collect(batonStream("hi")).pipe(
          Effect.provide(modelLayer(server, { retryBaseDelay: "500 millis", maxRetries: 2 })),
          Effect.provide(capture.layer),
          Effect.forkChild
        )
        yield* liveTimeout(awaitLog(capture, "OpenAiChat request failed"))
        yield* TestClock.adjust("500 millis")
        yield* liveTimeout(awaitLog(capture, "OpenAiChat request failed"))
        yield* TestClock.adjust("1 second")
        const { exit } = yield* liveTimeout(Fiber.join(fiber))
        const reason = reasonOf(failureOf(exit))
        assert.strictEqual(reason._tag, "InternalProviderError")
        assert.include(reason.message, "The engine is overloaded")
        assert.strictEqual(server.requests.length, 3)
        assert.deepStrictEqual(httpSpanStartMillis(capture), [0, 500, 1500])
      }))

    it.effect("401: authentication reason, no retry, and the key appears in no error, log or span", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        const capture = yield* makeCapture
        server.reply(
          errorReply(401, {
            message: `Incorrect API key provided: ${KEY}. You can find your API key at https://platform.openai.com.`,
            type: "invalid_request_error",
            code: "invalid_api_key"
          }),
          textReply("a retry must not happen")
        )
        const { exit } = yield* collect(batonStream("hi")).pipe(
          Effect.provide(modelLayer(server)),
          Effect.provide(capture.layer)
        )
        const error = failureOf(exit)
        const reason = reasonOf(error)
        assert.strictEqual(reason._tag, "AuthenticationError")
        assert.strictEqual((reason as AiError.AuthenticationError).kind, "InvalidKey")
        assert.strictEqual(server.requests.length, 1)
        // the key was really sent...
        assert.strictEqual(server.requests[0]!.headers["authorization"], `Bearer ${KEY}`)
        // ...and the server's message survives, scrubbed
        assert.include(error.message, "Incorrect API key provided: <redacted>")
        if (Exit.isFailure(exit)) assert.notInclude(Cause.pretty(exit.cause), KEY)
        assert.notInclude(error.message, KEY)
        assert.notInclude(String(error), KEY)
        assert.notInclude(JSON.stringify(error), KEY)
        assert.isAbove(capture.logs.length, 0)
        assert.notInclude(capture.logs.join("\n"), KEY)
        assert.isAbove(capture.spans.length, 0)
        assert.notInclude(spanText(capture), KEY)
      }))

    it.effect.each([
      { status: 400, param: "messages", code: "invalid_value" },
      { status: 404, param: null, code: "model_not_found" },
      { status: 422, param: null, code: null }
    ])("$status: invalid-request reason with the server's message, no retry", ({ status, param, code }) =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(
          {
            _tag: "Error",
            status,
            body: JSON.stringify({
              error: { message: `server says ${status}`, type: "invalid_request_error", param, code }
            })
          },
          textReply("a retry must not happen")
        )
        const { exit } = yield* collect(batonStream("hi")).pipe(Effect.provide(modelLayer(server)))
        const reason = reasonOf(failureOf(exit))
        assert.strictEqual(reason._tag, "InvalidRequestError")
        assert.include(reason.message, `server says ${status}`)
        if (param !== null) assert.strictEqual((reason as AiError.InvalidRequestError).parameter, param)
        assert.strictEqual(server.requests.length, 1)
      }))

    it.effect("403 and insufficient_quota 429 are not retried", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(errorReply(403, { message: "forbidden", type: "invalid_request_error", code: null }))
        const forbidden = yield* collect(batonStream("hi")).pipe(Effect.provide(modelLayer(server)))
        const reason = reasonOf(failureOf(forbidden.exit)) as AiError.AuthenticationError
        assert.strictEqual(reason.kind, "InsufficientPermissions")

        server.reply(errorReply(429, { message: "quota", type: "insufficient_quota", code: "insufficient_quota" }))
        const quota = yield* collect(batonStream("hi")).pipe(Effect.provide(modelLayer(server)))
        assert.strictEqual(reasonOf(failureOf(quota.exit))._tag, "QuotaExhaustedError")
        assert.strictEqual(server.requests.length, 2)
      }))

    it.effect("429 whose retry-after exceeds maxRetryAfter fails at once with the retry-after", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(
          errorReply(429, { message: "slow down", type: "requests", code: "rate_limit_exceeded" }, {
            "retry-after": "120"
          }),
          textReply("never")
        )
        const { exit } = yield* collect(batonStream("hi")).pipe(
          Effect.provide(modelLayer(server, { maxRetryAfter: "30 seconds" }))
        )
        const error = failureOf(exit) as AiError.AiError
        assert.strictEqual(error.reason._tag, "RateLimitError")
        assert.deepStrictEqual(error.retryAfter, Duration.seconds(120))
        assert.strictEqual(server.requests.length, 1)
      }))

    it.effect("a malformed SSE chunk fails the stream with InvalidResponseError (and the layer keeps working)", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(
          sse([delta({ content: "Hi" }), "data: {\"id\":\"chatcmpl-x\",\"choices\":[{\"delta\":\n\n"], {
            done: false,
            then: "hang"
          }),
          textReply("still works")
        )
        const layer = modelLayer(server)
        const { exit, parts } = yield* collect(batonStream("hi")).pipe(Effect.provide(layer))
        const reason = reasonOf(failureOf(exit))
        assert.strictEqual(reason._tag, "InvalidResponseError")
        assert.include(reason.message, "malformed chat.completion.chunk")
        assert.deepStrictEqual(parts.filter((p) => p.type === "text-delta").map((p) => p.delta), ["Hi"])
        assert.strictEqual(server.requests.length, 1)
        // the failed stream released its connection
        yield* liveTimeout(Deferred.await(server.requests[0]!.responseClosed))

        const again = yield* collect(batonStream("again")).pipe(Effect.provide(layer))
        assert.isTrue(Exit.isSuccess(again.exit))
      }))

    it.effect("an in-stream error event fails with its mapped reason, without retry", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(
          sse([
            delta({ content: "Hi" }),
            { error: { message: "The server had an error while processing", type: "server_error", code: null } }
          ], { done: false, then: "end" }),
          textReply("never")
        )
        const { exit } = yield* collect(batonStream("hi")).pipe(Effect.provide(modelLayer(server)))
        const reason = reasonOf(failureOf(exit))
        assert.strictEqual(reason._tag, "InternalProviderError")
        assert.include(reason.message, "The server had an error while processing")
        assert.strictEqual(server.requests.length, 1)
      }))

    it.effect("a 200 JSON error body (instead of an event stream) fails with its mapped reason", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(
          {
            _tag: "Error",
            status: 200,
            body: JSON.stringify({ error: { message: "model is loading", type: "invalid_request_error", code: null } })
          },
          { _tag: "Error", status: 200, body: JSON.stringify({ id: "chatcmpl-1", object: "chat.completion" }) }
        )
        const errorBody = yield* collect(batonStream("hi")).pipe(Effect.provide(modelLayer(server)))
        const reason = reasonOf(failureOf(errorBody.exit))
        assert.strictEqual(reason._tag, "InvalidRequestError")
        assert.include(reason.message, "model is loading")
        const notStreamed = yield* collect(batonStream("hi")).pipe(Effect.provide(modelLayer(server)))
        assert.strictEqual(reasonOf(failureOf(notStreamed.exit))._tag, "InvalidResponseError")
        assert.strictEqual(server.requests.length, 2)
      }))

    it.effect.each(["destroy", "end"] as const)(
      "a mid-stream disconnect (%s) is a network error, not retried after content",
      (then) =>
        Effect.gen(function*() {
          const server = yield* Mock.make
          server.reply(
            sse([delta({ role: "assistant", content: "" }), delta({ content: "Hel" }), delta({ content: "lo" })], {
              done: false,
              then
            }),
            textReply("a retry must not happen")
          )
          const { exit, parts } = yield* collect(batonStream("hi")).pipe(Effect.provide(modelLayer(server)))
          const reason = reasonOf(failureOf(exit))
          assert.strictEqual(reason._tag, "NetworkError")
          assert.deepStrictEqual(parts.filter((p) => p.type === "text-delta").map((p) => p.delta), ["Hel", "lo"])
          assert.isFalse(parts.some((p) => p.type === "finish"))
          assert.strictEqual(server.requests.length, 1)
        })
    )

    it.live("a connection reset before the response is retried as a network error", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply({ _tag: "Reset" }, textReply("second try"))
        const { exit, parts } = yield* collect(batonStream("hi")).pipe(
          Effect.provide(modelLayer(server, { retryBaseDelay: "1 millis" }))
        )
        assert.isTrue(Exit.isSuccess(exit))
        assert.deepStrictEqual(parts.filter((p) => p.type === "text-delta").map((p) => p.delta), ["second try"])
        assert.strictEqual(server.requests.length, 2)
      }))

    it.live("an unreachable server fails with a network error after the retries", () =>
      Effect.gen(function*() {
        const capture = yield* makeCapture
        const closed = yield* Effect.scoped(Effect.map(Mock.make, (s) => s.baseUrl))
        const { exit } = yield* collect(batonStream("hi")).pipe(
          Effect.provide(
            OpenAiChat.layer({ model: "m", baseUrl: closed, retryBaseDelay: "1 millis", maxRetries: 1 }).pipe(
              Layer.provide(FetchHttpClient.layer)
            )
          ),
          Effect.provide(capture.layer)
        )
        const reason = reasonOf(failureOf(exit)) as AiError.NetworkError
        assert.strictEqual(reason._tag, "NetworkError")
        assert.strictEqual(reason.reason, "TransportError")
        assert.strictEqual(capture.logs.filter((l) => l.includes("OpenAiChat request failed")).length, 2)
      }))
  })
})
