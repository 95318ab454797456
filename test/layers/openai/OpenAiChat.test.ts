import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Deferred, Duration, Effect, Exit, Fiber, Layer, Stream } from "effect"
import { AiError, LanguageModel, Prompt, Tool } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import { OpenAiChat } from "../../../layers/openai/OpenAiChat.ts"
import {
  awaitLog,
  batonStream,
  collect,
  failureOf,
  GetTime,
  GetWeather,
  httpSpanStartMillis,
  KEY,
  makeCapture,
  modelLayer,
  spanText,
  toolkit,
  type Transport
} from "./helpers.ts"
import * as Mock from "./MockChatServer.ts"

const { chunk, delta, errorReply, sse, toolDelta, usageChunk } = Mock

const chatInfo = OpenAiChat.use(Effect.succeed)

const textFrames = (texts: ReadonlyArray<string>) => [
  delta({ role: "assistant", content: "" }),
  ...texts.map((t) => delta({ content: t })),
  delta({}, "stop"),
  usageChunk(9, texts.length)
]

const textReply = (...texts: ReadonlyArray<string>) => sse(textFrames(texts))

const reasonOf = (error: unknown): AiError.AiErrorReason => {
  assert.isTrue(AiError.isAiError(error), `expected an AiError, got ${String(error)}`)
  return (error as AiError.AiError).reason
}

const liveTimeout = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  TestClock.withLive(Effect.timeout(effect, "5 seconds"))

describe("OpenAiChat", () => {
  describe("text streaming", () => {
    it.effect("streams text deltas in order, then finish with usage", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(sse([
          delta({ role: "assistant", content: "" }),
          delta({ content: "Hel" }),
          delta({ content: "lo" }),
          delta({ content: " world" }),
          delta({}, "stop"),
          chunk([], {
            usage: {
              prompt_tokens: 12,
              completion_tokens: 3,
              total_tokens: 15,
              prompt_tokens_details: { cached_tokens: 2 }
            }
          })
        ]))
        const { exit, parts } = yield* collect(batonStream("Say hello")).pipe(Effect.provide(modelLayer(server)))
        assert.isTrue(Exit.isSuccess(exit))
        assert.deepStrictEqual(parts, [
          { type: "response-metadata", id: "chatcmpl-test1", modelId: "gpt-test-2024" },
          { type: "text-start", id: "text_0" },
          { type: "text-delta", id: "text_0", delta: "Hel" },
          { type: "text-delta", id: "text_0", delta: "lo" },
          { type: "text-delta", id: "text_0", delta: " world" },
          { type: "text-end", id: "text_0" },
          {
            type: "finish",
            reason: "stop",
            input: { total: 12, cacheRead: 2, uncached: 10 },
            output: { total: 3 }
          }
        ])
      }))

    it.effect("sends the request faithfully: URL, headers, messages, tools, tool_choice, stream_options", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(textReply("ok"))
        const prompt = Prompt.make([
          { role: "system", content: "You are terse." },
          { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Checking." },
              { type: "tool-call", id: "call_1", name: "get_weather", params: { city: "Paris" } },
              { type: "tool-call", id: "call_2", name: "get_weather", params: "{\"city\": Paris" }
            ]
          },
          {
            role: "tool",
            content: [
              { type: "tool-result", id: "call_1", name: "get_weather", isFailure: false, result: { tempC: 21 } },
              { type: "tool-result", id: "call_2", name: "get_weather", isFailure: true, result: "bad arguments" }
            ]
          },
          { role: "user", content: "thanks" }
        ])
        yield* batonStream(prompt).pipe(Stream.runDrain, Effect.provide(modelLayer(server)))

        assert.strictEqual(server.requests.length, 1)
        const request = server.requests[0]!
        assert.strictEqual(request.method, "POST")
        assert.strictEqual(request.path, "/v1/chat/completions")
        assert.strictEqual(request.headers["authorization"], `Bearer ${KEY}`)
        assert.match(String(request.headers["content-type"]), /^application\/json/)
        assert.strictEqual(request.headers["accept"], "text/event-stream")
        const body = request.body
        assert.strictEqual(body.model, "gpt-test")
        assert.strictEqual(body.stream, true)
        assert.deepStrictEqual(body.stream_options, { include_usage: true })
        assert.deepStrictEqual(body.messages, [
          { role: "system", content: "You are terse." },
          { role: "user", content: "Weather in Paris?" },
          {
            role: "assistant",
            content: "Checking.",
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } },
              { id: "call_2", type: "function", function: { name: "get_weather", arguments: "{\"city\": Paris" } }
            ]
          },
          { role: "tool", tool_call_id: "call_1", content: "{\"tempC\":21}" },
          { role: "tool", tool_call_id: "call_2", content: "bad arguments" },
          { role: "user", content: "thanks" }
        ])
        assert.deepStrictEqual(body.tools, [
          {
            type: "function",
            function: {
              name: "get_weather",
              description: "Current weather for a city",
              parameters: Tool.getJsonSchema(GetWeather)
            }
          },
          {
            type: "function",
            function: {
              name: "get_time",
              description: "Current time in a time zone",
              parameters: Tool.getJsonSchema(GetTime)
            }
          }
        ])
        assert.deepStrictEqual(body.tools[0].function.parameters.properties, { city: { type: "string" } })
        assert.deepStrictEqual(body.tools[0].function.parameters.required, ["city"])
        assert.strictEqual(body.tool_choice, "auto")
        assert.strictEqual(body.parallel_tool_calls, true)
        assert.isFalse("temperature" in body)
        assert.isFalse("max_completion_tokens" in body)
      }))

    it.effect("maps tool_choice, the oneOf subset, parallel_tool_calls and sampling options", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        const run = (choice: Parameters<typeof batonStream>[1]) =>
          Effect.gen(function*() {
            server.reply(textReply("ok"))
            yield* batonStream("hi", choice).pipe(
              Stream.runDrain,
              Effect.provide(modelLayer(server, { parallelToolCalls: false, temperature: 0.2, maxTokens: 64 }))
            )
            return server.requests[server.requests.length - 1]!.body
          })
        const names = (body: any) => body.tools.map((t: any) => t.function.name)

        const forced = yield* run({ tool: "get_time" })
        assert.deepStrictEqual(forced.tool_choice, { type: "function", function: { name: "get_time" } })
        assert.deepStrictEqual(names(forced), ["get_weather", "get_time"])
        assert.strictEqual(forced.parallel_tool_calls, false)
        assert.strictEqual(forced.temperature, 0.2)
        assert.strictEqual(forced.max_completion_tokens, 64)

        assert.strictEqual((yield* run("required")).tool_choice, "required")
        assert.strictEqual((yield* run("none")).tool_choice, "none")

        const subset = yield* run({ oneOf: ["get_weather"], mode: "required" })
        assert.deepStrictEqual(names(subset), ["get_weather"])
        assert.strictEqual(subset.tool_choice, "required")
        const subsetAuto = yield* run({ oneOf: ["get_time"] })
        assert.deepStrictEqual(names(subsetAuto), ["get_time"])
        assert.strictEqual(subsetAuto.tool_choice, "auto")

        // max_tokens for servers that do not know max_completion_tokens
        server.reply(textReply("ok"))
        yield* batonStream("hi").pipe(
          Stream.runDrain,
          Effect.provide(modelLayer(server, { maxTokens: 32, maxTokensParameter: "max_tokens" }))
        )
        assert.strictEqual(server.requests[server.requests.length - 1]!.body.max_tokens, 32)
      }))

    it.effect("omits tools, tool_choice and parallel_tool_calls when there are no tools", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(textReply("plain"))
        const text = yield* LanguageModel.streamText({ prompt: "hi" }).pipe(
          Stream.filter((part) => part.type === "text-delta"),
          Stream.map((part) => part.delta),
          Stream.mkString,
          Effect.provide(modelLayer(server))
        )
        assert.strictEqual(text, "plain")
        const body = server.requests[0]!.body
        assert.isFalse("tools" in body)
        assert.isFalse("tool_choice" in body)
        assert.isFalse("parallel_tool_calls" in body)
      }))

    it.effect("generateText collects text, tool calls, finish and usage", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(sse([
          delta({ role: "assistant", content: "" }),
          delta({ content: "Let me " }),
          delta({ content: "check." }),
          toolDelta(0, { name: "get_weather", arguments: "" }, "call_w"),
          toolDelta(0, { arguments: "{\"city\":\"Oslo\"}" }),
          delta({}, "tool_calls"),
          usageChunk(20, 7)
        ]))
        const response = yield* LanguageModel.generateText({
          prompt: "weather?",
          toolkit,
          disableToolCallResolution: true,
          toolCallValidation: "deferred"
        }).pipe(Effect.provide(modelLayer(server)))
        assert.strictEqual(response.text, "Let me check.")
        assert.deepStrictEqual(
          response.toolCalls.map((c) => ({ id: c.id, name: c.name, params: c.params })),
          [{ id: "call_w", name: "get_weather", params: { city: "Oslo" } }]
        )
        assert.strictEqual(response.finishReason, "tool-calls")
        assert.strictEqual(response.usage.inputTokens.total, 20)
        assert.strictEqual(response.usage.outputTokens.total, 7)
      }))

    it.effect("tolerates CRLF line endings, keep-alive comments and events split across writes", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        const first = JSON.stringify(delta({ content: "split " }))
        server.reply({
          _tag: "Sse",
          frames: [
            ": ping\r\n\r\n",
            `data: ${first.slice(0, 17)}`,
            `${first.slice(17)}\r\n\r\n`,
            `data: ${JSON.stringify(delta({ content: "ok" }))}\r\n\r\n`,
            ": keep-alive\n\n",
            `data: ${JSON.stringify(delta({}, "stop"))}\r`,
            "\n\r\n",
            "data: [DONE]\r\n\r\n"
          ],
          then: "end"
        })
        const { exit, parts } = yield* collect(batonStream("hi")).pipe(Effect.provide(modelLayer(server)))
        assert.isTrue(Exit.isSuccess(exit))
        assert.deepStrictEqual(
          parts.filter((p) => p.type === "text-delta").map((p) => p.delta),
          ["split ", "ok"]
        )
        assert.deepStrictEqual(parts[parts.length - 1], {
          type: "finish",
          reason: "stop",
          input: {},
          output: {}
        })
      }))
  })

  describe("tool calls", () => {
    it.effect("accumulates one call whose arguments are split across chunks (mid-token, mid-escape)", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        const pieces = ["{\"ci", "ty\": \"Paris \\", "\"Nord\\", "\"\"}"]
        server.reply(sse([
          toolDelta(0, { name: "get_weather", arguments: "" }, "call_abc"),
          ...pieces.map((p) => toolDelta(0, { arguments: p })),
          delta({}, "tool_calls"),
          usageChunk(30, 12)
        ]))
        const { exit, parts } = yield* collect(batonStream("weather")).pipe(Effect.provide(modelLayer(server)))
        assert.isTrue(Exit.isSuccess(exit))
        assert.deepStrictEqual(parts.slice(1), [
          { type: "tool-params-start", id: "call_abc", name: "get_weather" },
          ...pieces.map((p) => ({ type: "tool-params-delta", id: "call_abc", delta: p })),
          { type: "tool-params-end", id: "call_abc" },
          { type: "tool-call", id: "call_abc", name: "get_weather", params: { city: "Paris \"Nord\"" } },
          { type: "finish", reason: "tool-calls", input: { total: 30 }, output: { total: 12 } }
        ])
      }))

    it.effect("accumulates two parallel calls by index when their deltas interleave, after text", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(sse([
          delta({ role: "assistant", content: "Checking both." }),
          toolDelta(0, { name: "get_weather", arguments: "" }, "call_a"),
          toolDelta(0, { arguments: "{\"city\":" }),
          toolDelta(1, { name: "get_time", arguments: "" }, "call_b"),
          toolDelta(0, { arguments: "\"Paris\"}" }),
          toolDelta(1, { arguments: "{\"zone\":" }),
          toolDelta(1, { arguments: "\"CET\"}" }),
          delta({}, "tool_calls"),
          usageChunk(50, 20)
        ]))
        const { exit, parts } = yield* collect(batonStream("both")).pipe(Effect.provide(modelLayer(server)))
        assert.isTrue(Exit.isSuccess(exit))
        const deltasOf = (id: string) =>
          parts.filter((p) => p.type === "tool-params-delta" && p.id === id).map((p) => p.delta)
        assert.deepStrictEqual(deltasOf("call_a"), ["{\"city\":", "\"Paris\"}"])
        assert.deepStrictEqual(deltasOf("call_b"), ["{\"zone\":", "\"CET\"}"])
        assert.deepStrictEqual(parts.filter((p) => p.type === "tool-call"), [
          { type: "tool-call", id: "call_a", name: "get_weather", params: { city: "Paris" } },
          { type: "tool-call", id: "call_b", name: "get_time", params: { zone: "CET" } }
        ])
        // every call: start before its deltas, end before its tool-call
        for (const id of ["call_a", "call_b"]) {
          const positions = (type: string) =>
            parts.flatMap((p, i) => (p.type === type && p.id === id ? [i] : []))
          const [start] = positions("tool-params-start")
          const [end] = positions("tool-params-end")
          const [call] = positions("tool-call")
          assert.isTrue(positions("tool-params-delta").every((i) => i > start! && i < end!))
          assert.isTrue(end! < call!)
        }
        const textEnd = parts.findIndex((p) => p.type === "text-end")
        assert.isTrue(textEnd > 0)
        assert.strictEqual(parts[parts.length - 1]!.reason, "tool-calls")
      }))

    it.effect("passes unknown tool names and non-JSON arguments through as tool-call parts", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(sse([
          toolDelta(0, { name: "launch_rockets", arguments: "{\"count\": 3}" }, "call_x"),
          toolDelta(1, { name: "get_weather", arguments: "{\"city\": Par" }, "call_y"),
          toolDelta(1, { arguments: "is" }),
          delta({}, "tool_calls"),
          usageChunk(5, 5)
        ]))
        const { exit, parts } = yield* collect(batonStream("go")).pipe(Effect.provide(modelLayer(server)))
        assert.isTrue(Exit.isSuccess(exit), Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "")
        assert.deepStrictEqual(parts.filter((p) => p.type === "tool-call"), [
          { type: "tool-call", id: "call_x", name: "launch_rockets", params: { count: 3 } },
          { type: "tool-call", id: "call_y", name: "get_weather", params: "{\"city\": Paris" }
        ])
      }))
  })

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

  describe("connections", () => {
    it.effect.each(["fetch", "undici"] as const)(
      "the body is read to its end after [DONE], keeping the connection alive (%s)",
      (via: Transport) =>
        Effect.gen(function*() {
          const server = yield* Mock.make
          const releaseEnd = yield* Deferred.make<void>()
          server.reply(sse(textFrames(["one"]), { holdEnd: releaseEnd }), textReply("two"))
          yield* Effect.gen(function*() {
            const sawFinish = yield* Deferred.make<void>()
            const first = yield* batonStream("a").pipe(
              Stream.runForEach((part) => part.type === "finish" ? Deferred.succeed(sawFinish, undefined) : Effect.void),
              Effect.forkChild
            )
            // [DONE] is sent and handled (finish delivered) while the server still holds the end of the body
            yield* liveTimeout(Deferred.await(sawFinish))
            yield* Deferred.succeed(releaseEnd, undefined)
            yield* liveTimeout(Fiber.join(first))
            const { exit } = yield* collect(batonStream("b"))
            assert.isTrue(Exit.isSuccess(exit))
          }).pipe(Effect.provide(modelLayer(server, {}, via)))
          assert.strictEqual(server.requests.length, 2)
          assert.isFalse(yield* liveTimeout(Deferred.await(server.requests[0]!.responseClosed)), "response completed")
          // not aborted at [DONE]: a turn later, the first connection is still open
          // (that the body is read to its end rather than cut is asserted deterministically in ChatStream.test.ts)
          assert.isFalse(yield* Deferred.isDone(server.requests[0]!.socketClosed))
        })
    )
  })

  describe("cancellation", () => {
    it.effect.each(["fetch", "undici"] as const)(
      "interrupting the consumer aborts the HTTP request (%s)",
      (via: Transport) =>
        Effect.gen(function*() {
          const server = yield* Mock.make
          server.reply(
            sse([delta({ role: "assistant", content: "" }), delta({ content: "Hel" })], { done: false, then: "hang" }),
            textReply("next turn")
          )
          // The layer (and its HTTP client / connection pool) outlives the
          // interrupted stream, so only the request abort can close the socket.
          yield* Effect.gen(function*() {
            const gotDelta = yield* Deferred.make<void>()
            const fiber = yield* batonStream("talk").pipe(
              Stream.runForEach((part) =>
                part.type === "text-delta" ? Deferred.succeed(gotDelta, undefined) : Effect.void
              ),
              Effect.forkChild
            )
            yield* liveTimeout(Deferred.await(gotDelta))
            const request = server.requests[0]!
            assert.isFalse(yield* Deferred.isDone(request.socketClosed))
            yield* Fiber.interrupt(fiber)
            yield* liveTimeout(Deferred.await(request.socketClosed))
            assert.isTrue(yield* liveTimeout(Deferred.await(request.responseClosed)), "closed before the response ended")
            assert.strictEqual(server.requests.length, 1)
            // the model still works afterwards
            const { exit } = yield* collect(batonStream("again"))
            assert.isTrue(Exit.isSuccess(exit))
          }).pipe(Effect.provide(modelLayer(server, {}, via)))
        })
    )
  })

  describe("configuration", () => {
    const configLayer = (env: Record<string, string>) =>
      OpenAiChat.layerConfig.pipe(
        Layer.provide(FetchHttpClient.layer),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
      )

    it.effect("a keyless base URL needs no OPENAI_API_KEY and sends no Authorization header", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(textReply("from llama"))
        const layer = configLayer({ OPENAI_BASE_URL: server.baseUrl, OPENAI_MODEL: "llama3.2" })
        const info = yield* chatInfo.pipe(Effect.provide(layer))
        assert.deepStrictEqual(info, { model: "llama3.2", baseUrl: server.baseUrl, hasApiKey: false })
        const { exit } = yield* collect(batonStream("hi")).pipe(Effect.provide(layer))
        assert.isTrue(Exit.isSuccess(exit))
        const request = server.requests[0]!
        assert.isUndefined(request.headers["authorization"])
        assert.strictEqual(request.body.model, "llama3.2")
      }))

    it.effect("reads OPENAI_API_KEY as a bearer token and defaults OPENAI_MODEL to gpt-4o-mini", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(textReply("ok"))
        yield* batonStream("hi").pipe(
          Stream.runDrain,
          Effect.provide(configLayer({ OPENAI_BASE_URL: `${server.baseUrl}/`, OPENAI_API_KEY: KEY }))
        )
        const request = server.requests[0]!
        assert.strictEqual(request.path, "/v1/chat/completions")
        assert.strictEqual(request.headers["authorization"], `Bearer ${KEY}`)
        assert.strictEqual(request.body.model, "gpt-4o-mini")
      }))

    it.effect("layerConfigNode brings its own HttpClient (undici)", () =>
      Effect.gen(function*() {
        const server = yield* Mock.make
        server.reply(textReply("via undici"))
        const { exit, parts } = yield* collect(batonStream("hi")).pipe(
          Effect.provide(OpenAiChat.layerConfigNode.pipe(
            Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { OPENAI_BASE_URL: server.baseUrl } })))
          ))
        )
        assert.isTrue(Exit.isSuccess(exit))
        assert.deepStrictEqual(parts.filter((p) => p.type === "text-delta").map((p) => p.delta), ["via undici"])
        assert.strictEqual(server.requests.length, 1)
      }))

    it.effect("the OpenAI base URL without OPENAI_API_KEY is a config error", () =>
      Effect.gen(function*() {
        const exit = yield* chatInfo.pipe(Effect.provide(configLayer({})), Effect.exit)
        const error = failureOf(exit)
        assert.strictEqual((error as { _tag?: string })._tag, "ConfigError")
        assert.include(String(error), "OPENAI_API_KEY")
      }))
  })
})
