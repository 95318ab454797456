import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Option, Redacted, Stream } from "effect"
import { TestClock } from "effect/testing"
import { AiError, IdGenerator, Prompt, type Response } from "effect/ai"
import { makeScrub, parseRetryAfter } from "../../../layers/openai/ChatErrors.ts"
import { decodeChatStream } from "../../../layers/openai/ChatStream.ts"
import { messagesFromPrompt, parseToolArguments } from "../../../layers/openai/ChatWire.ts"
import { chunk, data, delta, DONE, toolDelta, usageChunk } from "./MockChatServer.ts"

const decode = (pieces: ReadonlyArray<Uint8Array>) =>
  decodeChatStream(Stream.fromIterable(pieces).pipe(Stream.decodeText()), {
    method: "POST",
    url: "http://test/v1/chat/completions",
    scrub: (s) => s
  }).pipe(
    Stream.runCollect,
    Effect.exit,
    Effect.provideService(IdGenerator.IdGenerator, IdGenerator.defaultIdGenerator)
  )

const encoder = new TextEncoder()

/** Splits the bytes of `text` every `size` bytes (cutting through UTF-8 sequences and CRLF pairs). */
const splitBytes = (text: string, size: number): Array<Uint8Array> => {
  const bytes = encoder.encode(text)
  const out: Array<Uint8Array> = []
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.slice(i, i + size))
  return out
}

const partsOf = (exit: Exit.Exit<Array<Response.StreamPartEncoded>, unknown>) => {
  assert.isTrue(Exit.isSuccess(exit), Exit.isFailure(exit) ? String(exit.cause) : "")
  return Exit.isSuccess(exit) ? exit.value : []
}

const conversation = [
  ": ping\r\n\r\n",
  data(delta({ role: "assistant", content: "" })).replace(/\n/g, "\r\n"),
  data(delta({ reasoning_content: "thinking…" })),
  data(delta({ content: "héllo 👋 " })),
  data(delta({ content: "wörld" })),
  data(toolDelta(0, { name: "get_weather", arguments: "{\"city\":\"Zürich\"" }, "call_1")),
  data(chunk([{ index: 1, delta: { content: "ignored second choice" }, finish_reason: null }])),
  data(chunk([])),
  data(toolDelta(0, { arguments: "}" })),
  data(delta({}, "tool_calls")),
  data(usageChunk(3, 4)),
  DONE
].join("")

describe("decodeChatStream", () => {
  it.effect("yields the same parts however the bytes are split (UTF-8, CRLF, comments)", () =>
    Effect.gen(function*() {
      const whole = partsOf(yield* decode([encoder.encode(conversation)]))
      assert.deepStrictEqual(whole.map((p) => p.type), [
        "response-metadata",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-delta",
        "tool-params-start",
        "tool-params-delta",
        "tool-params-delta",
        "text-end",
        "tool-params-end",
        "tool-call",
        "finish"
      ])
      const text = whole.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")
      assert.strictEqual(text, "héllo 👋 wörld")
      const call = whole.find((p) => p.type === "tool-call")
      assert.deepStrictEqual(call, { type: "tool-call", id: "call_1", name: "get_weather", params: { city: "Zürich" } })
      for (const size of [1, 2, 3, 7, 64]) {
        assert.deepStrictEqual(partsOf(yield* decode(splitBytes(conversation, size))), whole, `split every ${size}`)
      }
    }))

  it.effect("stops at [DONE] and ignores anything after it", () =>
    Effect.gen(function*() {
      const parts = partsOf(
        yield* decode([encoder.encode(data(delta({ content: "a" }, "stop")) + DONE + "data: {broken\n\n")])
      )
      assert.deepStrictEqual(parts.map((p) => p.type), [
        "response-metadata",
        "text-start",
        "text-delta",
        "text-end",
        "finish"
      ])
    }))

  it.effect("after [DONE], the body is read to its end (not cut), so the connection can be reused", () =>
    Effect.gen(function*() {
      const releaseEnd = yield* Deferred.make<void>()
      const sawFinish = yield* Deferred.make<void>()
      let bodyExit: Exit.Exit<unknown, unknown> | undefined
      let endRead = false
      const body = Stream.concat(
        Stream.make(data(delta({ content: "a" }, "stop")) + DONE),
        Stream.fromEffect(Deferred.await(releaseEnd)).pipe(
          Stream.map(() => {
            endRead = true
            return ": trailing comment\n\n"
          })
        )
      ).pipe(Stream.onExit((exit) => Effect.sync(() => void (bodyExit = exit))))
      const fiber = yield* decodeChatStream(body, { method: "POST", url: "http://test", scrub: (s) => s }).pipe(
        Stream.tap((part) => part.type === "finish" ? Deferred.succeed(sawFinish, undefined) : Effect.void),
        Stream.runCollect,
        Effect.provideService(IdGenerator.IdGenerator, IdGenerator.defaultIdGenerator),
        Effect.forkChild
      )
      yield* Deferred.await(sawFinish)
      yield* Deferred.succeed(releaseEnd, undefined)
      const parts = yield* Fiber.join(fiber)
      assert.strictEqual(parts.filter((p) => p.type === "finish").length, 1)
      assert.isTrue(endRead, "the rest of the body was read")
      assert.isDefined(bodyExit)
      assert.isTrue(Exit.isSuccess(bodyExit!), `body exit: ${String(bodyExit)}`)
    }))

  it.effect("after [DONE], a body that never ends is read for at most the grace period", () =>
    Effect.gen(function*() {
      const sawFinish = yield* Deferred.make<void>()
      const fiber = yield* decodeChatStream(
        Stream.concat(Stream.make(data(delta({ content: "a" }, "stop")) + DONE), Stream.never),
        { method: "POST", url: "http://test", scrub: (s) => s }
      ).pipe(
        Stream.tap((part) => part.type === "finish" ? Deferred.succeed(sawFinish, undefined) : Effect.void),
        Stream.runCollect,
        Effect.provideService(IdGenerator.IdGenerator, IdGenerator.defaultIdGenerator),
        Effect.forkChild
      )
      yield* Deferred.await(sawFinish)
      yield* Effect.yieldNow
      assert.isUndefined(fiber.pollUnsafe(), "still draining the body")
      for (let i = 0; i < 5 && fiber.pollUnsafe() === undefined; i++) {
        yield* TestClock.adjust("1 second")
        yield* Effect.yieldNow
      }
      assert.isDefined(fiber.pollUnsafe(), "stopped reading after the grace period")
      const parts = yield* Fiber.join(fiber)
      assert.strictEqual(parts[parts.length - 1]!.type, "finish")
    }))

  it.effect("a missing finish_reason is inferred at [DONE]; calls without index are keyed by id", () =>
    Effect.gen(function*() {
      const noIndex = (id: string | undefined, fn: Record<string, string>) =>
        data(delta({ tool_calls: [id === undefined ? { function: fn } : { id, type: "function", function: fn }] }))
      const parts = partsOf(yield* decode([encoder.encode(
        noIndex("call_a", { name: "get_time", arguments: "{" }) +
          noIndex(undefined, { arguments: "}" }) +
          noIndex("call_b", { name: "get_weather", arguments: "{\"city\":\"Rome\"}" }) +
          data(toolDelta(5, { name: "get_time", arguments: "{}" })) +
          DONE
      )]))
      const calls = parts.filter((p) => p.type === "tool-call")
      assert.deepStrictEqual(calls.slice(0, 2), [
        { type: "tool-call", id: "call_a", name: "get_time", params: {} },
        { type: "tool-call", id: "call_b", name: "get_weather", params: { city: "Rome" } }
      ])
      // a call without an id gets a generated one
      assert.strictEqual(calls.length, 3)
      assert.match(calls[2]!.id, /^call_.+/)
      assert.strictEqual(calls[2]!.name, "get_time")
      const finish = parts[parts.length - 1]
      assert.deepStrictEqual(finish, { type: "finish", reason: "tool-calls", usage: { inputTokens: {}, outputTokens: {} } })
    }))

  it.effect("maps finish reasons", () =>
    Effect.gen(function*() {
      const reasonFor = (wire: string) =>
        decode([encoder.encode(data(delta({ content: "x" }, wire)) + DONE)]).pipe(
          Effect.map((exit) => partsOf(exit).find((p) => p.type === "finish")),
          Effect.map((p) => (p as Response.FinishPartEncoded).reason)
        )
      assert.strictEqual(yield* reasonFor("stop"), "stop")
      assert.strictEqual(yield* reasonFor("length"), "length")
      assert.strictEqual(yield* reasonFor("tool_calls"), "tool-calls")
      assert.strictEqual(yield* reasonFor("content_filter"), "content-filter")
      assert.strictEqual(yield* reasonFor("something_new"), "other")
    }))

  it.effect("an `event: error` frame and a body without [DONE] or finish are failures", () =>
    Effect.gen(function*() {
      const eventError = yield* decode([encoder.encode(
        "event: error\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n"
      )])
      assert.isTrue(Exit.isFailure(eventError))
      if (Exit.isFailure(eventError)) {
        const error = eventError.cause.reasons[0]
        assert.isTrue(error?._tag === "Fail" && AiError.isAiError(error.error))
        if (error?._tag === "Fail") assert.strictEqual((error.error as AiError.AiError).reason._tag, "InternalProviderError")
      }
      const truncated = yield* decode([encoder.encode(data(delta({ content: "half" })))])
      assert.isTrue(Exit.isFailure(truncated))
      if (Exit.isFailure(truncated)) {
        const error = truncated.cause.reasons[0]
        if (error?._tag === "Fail") assert.strictEqual((error.error as AiError.AiError).reason._tag, "NetworkError")
      }
    }))
})

describe("ChatWire", () => {
  it("parses tool arguments: JSON, empty, or the raw string", () => {
    assert.deepStrictEqual(parseToolArguments("{\"a\":1}"), { a: 1 })
    assert.deepStrictEqual(parseToolArguments(""), {})
    assert.strictEqual(parseToolArguments("{\"a\":"), "{\"a\":")
  })

  it("maps user files, tool modelOutput and empty assistant messages", () => {
    const messages = messagesFromPrompt(Prompt.make([
      {
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "file", mediaType: "image/png", data: "iVBORw0KGgo=" },
          { type: "file", mediaType: "image/jpeg", data: new URL("https://example.com/cat.jpg") }
        ]
      },
      { role: "assistant", content: [] },
      { role: "assistant", content: [{ type: "tool-call", id: "c1", name: "look", params: {} }] },
      {
        role: "tool",
        content: [{
          type: "tool-result",
          id: "c1",
          name: "look",
          isFailure: false,
          result: { raw: true },
          modelOutput: [{ type: "text", text: "a cat" }]
        }]
      }
    ]))
    assert.deepStrictEqual(messages, [
      {
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } }
        ]
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "look", arguments: "{}" } }]
      },
      { role: "tool", tool_call_id: "c1", content: "a cat" }
    ])
  })
})

describe("ChatErrors", () => {
  it("parses retry-after in seconds, retry-after-ms, and HTTP dates", () => {
    const now = Date.parse("2025-01-01T00:00:00Z")
    assert.deepStrictEqual(parseRetryAfter({ "retry-after": "2" }, now), Duration.seconds(2))
    assert.deepStrictEqual(parseRetryAfter({ "retry-after-ms": "250", "retry-after": "1" }, now), Duration.millis(250))
    assert.deepStrictEqual(
      parseRetryAfter({ "retry-after": "Wed, 01 Jan 2025 00:00:07 GMT" }, now),
      Duration.millis(7000)
    )
    assert.isUndefined(parseRetryAfter({ "retry-after": "soon" }, now))
    assert.isUndefined(parseRetryAfter({}, now))
  })

  it("scrubs the key from any text", () => {
    const scrub = makeScrub(Option.some(Redacted.make("sk-abc")))
    assert.strictEqual(scrub("key sk-abc and sk-abc again"), "key <redacted> and <redacted> again")
    assert.strictEqual(makeScrub(Option.none())("sk-abc"), "sk-abc")
  })
})
