import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Stream } from "effect"
import { LanguageModel, Prompt, Tool } from "effect/ai"
import { batonStream, collect, GetTime, GetWeather, KEY, modelLayer, textReply, toolkit } from "./helpers.ts"
import * as Mock from "./MockChatServer.ts"

// The OpenAiChat tests are split by theme: text streaming, request mapping and tool calls (here),
// errors and retries (OpenAiChatErrors.test.ts), connections, cancellation and configuration
// (OpenAiChatConnections.test.ts).

const { chunk, delta, sse, toolDelta, usageChunk } = Mock

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
})
