/**
 * A scripted `effect/ai` LanguageModel for tests. Each response is chosen by the last input of
 * the request: the user's text, a tool's output, or the words of per-reply instructions. A
 * response may stream text, make one or several parallel tool calls, wait (`Effect.sleep`, so
 * it runs under `TestClock`) or fail. Every request is recorded (which agent asked, with which
 * instructions, tool choice, tools and items) so tests can assert that no model call was made
 * for an agent; a model that serves (the demo behind `baton serve`) turns recording off.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Array as Arr, Cause, Channel, Context, Duration, Effect, Layer, type Pull, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, type Response } from "effect/ai"
import { ModelCall, type ModelCallInfo } from "../../services/ModelCall.ts"
import * as ModelParts from "../../services/ModelParts.ts"

/**
 * Text to match: equal to a string, or matching a regular expression.
 *
 * @since 0.1.0
 * @category models
 */
export type Text = string | RegExp

/**
 * What the last message of a request was.
 *
 * @since 0.1.0
 * @category models
 */
export type LastInput =
  | { readonly kind: "user"; readonly text: string }
  | { readonly kind: "tool"; readonly outputs: ReadonlyArray<{ readonly name: string; readonly output: string; readonly isError: boolean }> }
  | { readonly kind: "instructions"; readonly text: string }
  | { readonly kind: "assistant"; readonly text: string }
  | { readonly kind: "none" }

/**
 * One request the scripted model received: its index, the agent that made it, the agent's
 * instructions, the tools offered, the tool choice and what its last input was.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordedRequest {
  readonly index: number
  /** The agent that made the call (baton sets it). */
  readonly agent: string | undefined
  /** The agent's instructions (the first system message). */
  readonly instructions: string | undefined
  readonly toolChoice: LanguageModel.ToolChoice<string>
  readonly tools: ReadonlyArray<string>
  readonly prompt: Prompt.Prompt
  readonly last: LastInput
}

/**
 * A tool call a scripted reply makes: the tool's name and its arguments (an object sent as JSON,
 * or a string sent as is).
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedToolCall {
  readonly name: string
  /** An object is sent as JSON; a string is sent as is (to test malformed arguments). */
  readonly arguments?: unknown
  readonly id?: string
}

/**
 * What a scripted rule answers: text (streamed in pieces when an array), tool calls, delays before
 * and between parts, or a failure.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedResponse {
  /** Text to stream; an array streams one delta per element. */
  readonly text?: string | ReadonlyArray<string>
  readonly toolCalls?: ReadonlyArray<ScriptedToolCall>
  /** Waits before the first part. */
  readonly delay?: Duration.Input
  /** Waits between text deltas. */
  readonly chunkDelay?: Duration.Input
  /** Fails the stream after the text with this message. */
  readonly error?: string
  /** The tokens the response reports (default 0 and 0). */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
}

/**
 * When a rule answers: the last input is user text, a tool's output or per-reply instructions
 * matching the given text, the request comes from an agent, or a predicate on the request holds.
 *
 * @since 0.1.0
 * @category models
 */
export type Matcher =
  | { readonly user: Text; readonly agent?: string }
  | { readonly toolOutput: Text; readonly name?: string; readonly agent?: string }
  | { readonly instructions: Text; readonly agent?: string }
  | { readonly agent: string }
  | ((request: RecordedRequest) => boolean)

/**
 * One rule of a scripted model: when it matches, what it replies, and how many times it may.
 *
 * @since 0.1.0
 * @category models
 */
export interface Rule {
  readonly when: Matcher
  readonly reply: ScriptedResponse | ((request: RecordedRequest) => ScriptedResponse)
  /** How many times the rule may answer (default: always). */
  readonly times?: number
}

/**
 * What the `ScriptedModel` service gives a test: every request received, and those of one agent.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedModelService {
  readonly requests: ReadonlyArray<RecordedRequest>
  readonly requestsFor: (agent: string) => ReadonlyArray<RecordedRequest>
}

/**
 * The recorder of a scripted model's requests, provided by `layer` beside the `LanguageModel` it
 * answers as. Use it in a test to assert what an agent asked the model, or that it asked nothing.
 *
 * @since 0.1.0
 * @category services
 */
export class ScriptedModel extends Context.Service<ScriptedModel, ScriptedModelService>()("baton/testing/ScriptedModel") {}

const test = (text: string, expected: Text) =>
  typeof expected === "string" ? text.toLowerCase().includes(expected.toLowerCase()) : expected.test(text)

const textOf = (content: ReadonlyArray<{ readonly type: string }>) => {
  let text = ""
  for (const part of content) if (part.type === "text") text += (part as Prompt.TextPart).text
  return text
}

/**
 * What the last message of `prompt` is: user text, a tool's output, instructions, or none.
 *
 * @since 0.1.0
 * @category utils
 */
export const lastInput = (prompt: Prompt.Prompt): LastInput => {
  const messages = prompt.content
  const last = messages[messages.length - 1]
  if (!last) return { kind: "none" }
  switch (last.role) {
    case "user":
      return { kind: "user", text: textOf(last.content) }
    case "system":
      return messages.length === 1 ? { kind: "none" } : { kind: "instructions", text: last.content }
    case "assistant":
      return { kind: "assistant", text: textOf(last.content) }
    case "tool":
      return {
        kind: "tool",
        outputs: last.content.flatMap((part) =>
          part.type === "tool-result"
            ? [{ name: part.name, output: typeof part.result === "string" ? part.result : JSON.stringify(part.result), isError: part.isFailure }]
            : []
        )
      }
  }
}

/**
 * Whether `matcher` matches `request`.
 *
 * @since 0.1.0
 * @category utils
 */
export const matches = (matcher: Matcher, request: RecordedRequest): boolean => {
  if (typeof matcher === "function") return matcher(request)
  if (matcher.agent !== undefined && request.agent !== matcher.agent) return false
  const last = request.last
  if ("user" in matcher) return last.kind === "user" && test(last.text, matcher.user)
  if ("instructions" in matcher) return last.kind === "instructions" && test(last.text, matcher.instructions)
  if ("toolOutput" in matcher) {
    return last.kind === "tool" &&
      last.outputs.some((o) => (matcher.name === undefined || o.name === matcher.name) && test(o.output, matcher.toolOutput))
  }
  return true
}

const describeLast = (last: LastInput) => {
  switch (last.kind) {
    case "tool":
      return `tool outputs ${JSON.stringify(last.outputs)}`
    case "none":
      return "nothing"
    default:
      return `${last.kind} ${JSON.stringify(last.text)}`
  }
}

type Part = Response.StreamPartEncoded

/** A response's parts: all at once (no delays, no error), or a stream of them. */
type Parts = { readonly _tag: "Chunk"; readonly parts: Arr.NonEmptyReadonlyArray<Part> } | Stream.Stream<Part, AiError.AiError>

/** What a response streams besides its calls, made once per response object: a test double
 * that stands in for a provider with no latency should cost no more than one. */
interface Fixed {
  readonly text: ReadonlyArray<Part>
  readonly finish: Part
  /** The whole answer when it has no calls. */
  readonly all: Arr.NonEmptyReadonlyArray<Part>
}
const fixedParts = new WeakMap<ScriptedResponse, Fixed>()

const fixedOf = (response: ScriptedResponse): Fixed => {
  let fixed = fixedParts.get(response)
  if (fixed === undefined) {
    const chunks = response.text === undefined ? [] : typeof response.text === "string" ? [response.text] : response.text
    const text: Array<Part> = chunks.length === 0 ? [] : [
      { type: "text-start", id: "text_0" },
      ...chunks.map((delta): Part => ({ type: "text-delta", id: "text_0", delta })),
      { type: "text-end", id: "text_0" }
    ]
    const finish: Part = {
      type: "finish",
      reason: (response.toolCalls ?? []).length > 0 ? "tool-calls" : "stop",
      usage: { inputTokens: { total: response.usage?.inputTokens ?? 0 }, outputTokens: { total: response.usage?.outputTokens ?? 0 } }
    }
    fixed = { text, finish, all: [...text, finish] as unknown as Arr.NonEmptyReadonlyArray<Part> }
    fixedParts.set(response, fixed)
  }
  return fixed
}

const responseParts = (response: ScriptedResponse, nextId: () => string): Parts => {
  const { text, finish, all } = fixedOf(response)
  const toolCalls = response.toolCalls ?? []
  // Each call gets an id of its own.
  const calls = toolCalls.length === 0 ? [] : toolCalls.map((call): Part => ({
    type: "tool-call",
    id: call.id ?? nextId(),
    name: call.name,
    params: call.arguments ?? {}
  }))
  // Without delays or errors the parts go out as one chunk (cheap: benchmarks use it).
  if (response.delay === undefined && response.chunkDelay === undefined && response.error === undefined) {
    return { _tag: "Chunk", parts: calls.length === 0 ? all : [...text, ...calls, finish] as unknown as Arr.NonEmptyReadonlyArray<Part> }
  }
  const paced = Stream.fromIterable(text).pipe(
    Stream.mapEffect((part, i) =>
      part.type === "text-delta" && i > 1 && response.chunkDelay !== undefined
        ? Effect.sleep(response.chunkDelay).pipe(Effect.as(part))
        : Effect.succeed(part)
    )
  )
  const failure = response.error === undefined ? Stream.empty : Stream.fail(
    AiError.make({ module: "ScriptedModel", method: "streamText", reason: new AiError.InternalProviderError({ description: response.error }) })
  )
  const body = Stream.concat(Stream.concat(paced, failure), Stream.fromIterable([...calls, finish]))
  return response.delay === undefined ? body : Stream.unwrap(Effect.sleep(response.delay).pipe(Effect.as(body)))
}

/**
 * The stream of an answer decided when the stream starts (the rule match reads the calling
 * agent from the context). An answer given all at once is one chunk, pulled once: the model
 * stands in for a provider with no latency, so it should cost what a provider's own code
 * costs, not a stream nested in a stream (`Stream.unwrap`).
 */
const answerStream = (answer: (call: ModelCallInfo | undefined) => Parts): Stream.Stream<Part, AiError.AiError> =>
  Stream.fromChannel(
    Channel.fromTransform((_upstream, scope) =>
      Effect.withFiber((fiber): Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<Part>, AiError.AiError, void>> => {
        const parts = answer(fiber.getRef(ModelCall))
        return Stream.isStream(parts) ? Channel.toPullScoped(Stream.toChannel(parts), scope) : Effect.succeed(pullOnce(parts.parts))
      })
    )
  )

const pullOnce = <A>(chunk: A): Pull.Pull<A, never, void> => {
  let pulled = false
  return Effect.suspend(() => {
    if (pulled) return Cause.done()
    pulled = true
    return Effect.succeed(chunk)
  })
}

/**
 * Options of `layer`: whether to keep every request with its prompt, and the model name it
 * reports.
 *
 * @since 0.1.0
 * @category models
 */
export interface LayerOptions {
  /**
   * Keep every request with its whole prompt (default true, for tests). A served model, load and
   * long-session benchmarks turn it off: a recorded prompt holds the whole history, so recording
   * grows with the square of a session's length and is never given back. Off, `requests` stays
   * empty.
   */
  readonly record?: boolean
  /** The model name it reports (`model_call` events, metrics; default "scripted"). */
  readonly model?: string
  /**
   * The number of its first call id (`call_<n>`, default 1). A model serving a session resumed
   * in another process starts past the earlier one's ids, as a real model's are unique.
   */
  readonly firstCall?: number
}

/**
 * A LanguageModel answering by `rules` (first match wins) and the `ScriptedModel` recorder.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { it } from "@effect/vitest"
 * import { AgentSession } from "@baton-voice/baton"
 * import { ScriptedModel } from "@baton-voice/baton/testing"
 *
 * it.effect("transfers weather questions", () =>
 *   Effect.gen(function*() {
 *     const session = yield* AgentSession.start({ agent: greeter })
 *     const result = yield* session.run("weather in Paris?")
 *     result.expect.containsAgentHandoff({ from: "greeter", to: "weather" })
 *   }).pipe(Effect.provide(ScriptedModel.layer([
 *     { when: { user: "weather" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } }
 *   ]))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  rules: ReadonlyArray<Rule>,
  options: LayerOptions = {}
): Layer.Layer<LanguageModel.LanguageModel | ScriptedModel> =>
  Layer.effectContext(
    Effect.gen(function*() {
      const requests: Array<RecordedRequest> = []
      const record = options.record ?? true
      let seen = 0
      const used = rules.map(() => 0)
      let calls = (options.firstCall ?? 1) - 1
      const nextId = () => `call_${++calls}`
      const answer = (options: LanguageModel.ProviderOptions) => (info: ModelCallInfo | undefined): Parts => {
        const first = options.prompt.content[0]
        const request: RecordedRequest = {
          index: seen++,
          agent: info?.agent,
          instructions: first?.role === "system" ? first.content : undefined,
          toolChoice: options.toolChoice,
          tools: options.tools.map((tool) => tool.name),
          prompt: options.prompt,
          last: lastInput(options.prompt)
        }
        if (record) requests.push(request)
        let index = -1
        for (let i = 0; i < rules.length && index < 0; i++) {
          const rule = rules[i]!
          if ((rule.times === undefined || used[i]! < rule.times) && matches(rule.when, request)) index = i
        }
        if (index < 0) {
          return Stream.fail(
            AiError.make({
              module: "ScriptedModel",
              method: "streamText",
              reason: new AiError.InvalidRequestError({
                description: `no scripted response for ${request.agent ?? "?"} after ${describeLast(request.last)}`
              })
            })
          )
        }
        used[index]!++
        const rule = rules[index]!
        const response = typeof rule.reply === "function" ? rule.reply(request) : rule.reply
        return responseParts(response, nextId)
      }
      const streamText = (options: LanguageModel.ProviderOptions) => answerStream(answer(options))
      const made = yield* LanguageModel.make({
        streamText,
        generateText: (options) => answerStream(answer(options)).pipe(Stream.runCollect, Effect.map(ModelParts.collectParts))
      })
      // baton reads the parts directly (services/ModelParts.ts); `streamText` serves everyone else.
      const model = ModelParts.withParts(made, streamText, { provider: "scripted", model: options.model ?? "scripted" })
      const recorder: ScriptedModelService = {
        requests,
        requestsFor: (agent) => requests.filter((r) => r.agent === agent)
      }
      return Context.make(LanguageModel.LanguageModel, model).pipe(Context.add(ScriptedModel, recorder))
    })
  )
