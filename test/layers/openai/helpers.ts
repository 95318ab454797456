/**
 * Shared fixtures for the OpenAiChat tests: tools, the baton-style
 * `streamText` call, part projection, log and span capture.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Cause, Effect, Exit, Layer, Logger, Queue, Redacted, References, Schema, Stream, Tracer } from "effect"
import { LanguageModel, type Prompt, Tool, Toolkit } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import { type Options, OpenAiChat } from "../../../layers/openai/OpenAiChat.ts"
import { delta, type MockChatServer, sse, usageChunk } from "./MockChatServer.ts"

export const KEY = "sk-test-SECRET-4f9c2a7d1e8b6035"

export const GetWeather = Tool.make("get_weather", {
  description: "Current weather for a city",
  parameters: Schema.Struct({ city: Schema.String })
})

export const GetTime = Tool.make("get_time", {
  description: "Current time in a time zone",
  parameters: Schema.Struct({ zone: Schema.optionalKey(Schema.String) })
})

const tools = Toolkit.make(GetWeather, GetTime)

/** `Toolkit.WithHandler`-shaped, as baton builds it; `handle` must never be called. */
export const toolkit: Toolkit.WithHandler<typeof tools.tools> = {
  tools: tools.tools,
  handle: () => Effect.die("toolkit.handle must not be called")
}

export type ToolChoice = LanguageModel.ToolChoice<"get_weather" | "get_time">

/** Exactly how baton calls the model. */
export const batonStream = (prompt: Prompt.RawInput, toolChoice: ToolChoice = "auto") =>
  LanguageModel.streamText({
    prompt,
    toolkit,
    toolChoice,
    disableToolCallResolution: true,
    toolCallValidation: "deferred"
  })

/** A comparable projection of a decoded stream part. */
export const view = (part: { readonly type: string }): Record<string, unknown> => {
  const p = part as any
  switch (p.type) {
    case "text-start":
    case "text-end":
    case "reasoning-start":
    case "reasoning-end":
    case "tool-params-end":
      return { type: p.type, id: p.id }
    case "text-delta":
    case "reasoning-delta":
    case "tool-params-delta":
      return { type: p.type, id: p.id, delta: p.delta }
    case "tool-params-start":
      return { type: p.type, id: p.id, name: p.name }
    case "tool-call":
      return { type: p.type, id: p.id, name: p.name, params: p.params }
    case "response-metadata":
      return { type: p.type, id: p.id, modelId: p.modelId }
    case "finish":
      return { type: p.type, reason: p.reason, input: p.usage.inputTokens, output: p.usage.outputTokens }
    default:
      return { type: p.type }
  }
}

/** Runs a stream, keeping the parts received before a failure. */
export const collect = <A extends { readonly type: string }, E, R>(stream: Stream.Stream<A, E, R>) =>
  Effect.gen(function*() {
    const parts: Array<Record<string, unknown>> = []
    const exit = yield* stream.pipe(
      Stream.runForEach((part) => Effect.sync(() => void parts.push(view(part)))),
      Effect.exit
    )
    return { parts, exit }
  })

export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got success`)
  const error = Cause.findErrorOption(exit.cause)
  if (error._tag === "None") throw new Error(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return error.value
}

export type Transport = "fetch" | "undici"

export const transport = (name: Transport) =>
  name === "fetch" ? FetchHttpClient.layer : NodeHttpClient.layerUndici

/** The model layer against the mock server, with the test key. */
export const modelLayer = (server: MockChatServer, options: Partial<Options> = {}, via: Transport = "fetch") =>
  OpenAiChat.layer({
    model: "gpt-test",
    apiKey: Redacted.make(KEY),
    baseUrl: server.baseUrl,
    ...options
  }).pipe(Layer.provide(transport(via)))

// ----------------------------------------------------------------------------
// Log and span capture
// ----------------------------------------------------------------------------

export interface Captured {
  /** Every log line rendered as text (message, annotations, cause). */
  readonly logs: Array<string>
  /** Log lines as they arrive, to synchronise with the code under test. */
  readonly logQueue: Queue.Queue<string>
  readonly spans: Array<Tracer.Span>
  readonly layer: Layer.Layer<never>
}

export const makeCapture = Effect.gen(function*() {
  const logs: Array<string> = []
  const logQueue = yield* Queue.unbounded<string>()
  const spans: Array<Tracer.Span> = []
  const logger = Logger.make((options) => {
    const annotations = options.fiber.getRef(References.CurrentLogAnnotations)
    const text = JSON.stringify({ message: options.message, annotations }) +
      (options.cause.reasons.length === 0 ? "" : `\n${Cause.pretty(options.cause)}`)
    logs.push(text)
    Queue.offerUnsafe(logQueue, text)
  })
  const tracer = Tracer.make({
    span(options) {
      const span = Tracer.nativeTracer.span(options)
      spans.push(span)
      return span
    }
  })
  const layer = Layer.mergeAll(
    Logger.layer([logger]),
    Layer.succeed(References.MinimumLogLevel, "Debug"),
    Layer.succeed(Tracer.Tracer, tracer)
  )
  return { logs, logQueue, spans, layer } satisfies Captured
})

/** Waits until a log line containing `text` is emitted. */
export const awaitLog = (capture: Captured, text: string) =>
  Queue.take(capture.logQueue).pipe(
    Effect.repeat({ until: (line) => line.includes(text) }),
    Effect.andThen(Effect.yieldNow),
    Effect.andThen(Effect.yieldNow)
  )

/** Start times (ms, on the fiber's clock) of the HTTP client spans, in order. */
export const httpSpanStartMillis = (capture: Captured): Array<number> =>
  capture.spans
    .filter((span) => span.name === "POST" && span.attributes.get("http.request.method") === "POST")
    .map((span) => Number(span.status.startTime / 1_000_000n))

/** Everything a span exporter would see: names, attributes, events, failure causes. */
export const spanText = (capture: Captured): string =>
  capture.spans.map((span) => {
    const exit = span.status._tag === "Ended" && Exit.isFailure(span.status.exit)
      ? Cause.pretty(span.status.exit.cause)
      : ""
    return JSON.stringify({ name: span.name, attributes: Object.fromEntries(span.attributes) }) + exit
  }).join("\n")

/** The frames of a plain text reply: role, one delta per text, stop, usage. */
export const textFrames = (texts: ReadonlyArray<string>) => [
  delta({ role: "assistant", content: "" }),
  ...texts.map((t) => delta({ content: t })),
  delta({}, "stop"),
  usageChunk(9, texts.length)
]

export const textReply = (...texts: ReadonlyArray<string>) => sse(textFrames(texts))

/** Waits on the live clock (the server answers in real time while the TestClock stands still). */
export const liveTimeout = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  TestClock.withLive(Effect.timeout(effect, "5 seconds"))
