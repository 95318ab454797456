import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Exit, Fiber, Layer, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { OpenAiChat } from "../../../layers/openai/OpenAiChat.ts"
import {
  batonStream,
  collect,
  failureOf,
  KEY,
  liveTimeout,
  modelLayer,
  textFrames,
  textReply,
  type Transport
} from "./helpers.ts"
import * as Mock from "./MockChatServer.ts"

const { delta, sse } = Mock

const chatInfo = OpenAiChat.use(Effect.succeed)

describe("OpenAiChat", () => {
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
