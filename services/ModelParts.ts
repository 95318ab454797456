/**
 * A fast path a `LanguageModel` may carry: its provider's stream of parts, as the provider
 * encodes them, without `effect/ai`'s per-request pass. `LanguageModel.streamText` scans the
 * prompt for tool approvals, resolves the toolkit, builds a response schema for it and
 * Schema-decodes every part. baton needs none of that: it resolves, decodes and validates tool
 * calls itself (unknown tools and bad arguments become error outputs, see ToolBatch). So when
 * the model carries this capability (baton's own layers do: `OpenAiChat`, `ScriptedModel`) a
 * reply step reads the provider's parts directly; any other `LanguageModel` goes through
 * `streamText` with deferred validation, which yields the same parts.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Effect, type Fiber, Option, Stream, Tracer } from "effect"
import type { AiError, LanguageModel, Response, Tool } from "effect/ai"
import { isVoid, tracingOff, withAttached } from "../src/internal/EffectFastPaths.ts"

const TypeId = Symbol.for("baton/ModelParts")

/**
 * The provider's part stream for one request (what `LanguageModel.make`'s `streamText` gets).
 *
 * @since 0.1.0
 * @category models
 */
export type StreamParts = (
  options: LanguageModel.ProviderOptions
) => Stream.Stream<Response.StreamPartEncoded, AiError.AiError>

const InfoId = Symbol.for("baton/ModelParts/info")

/**
 * Who serves a model (for usage, metrics and traces).
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelInfo {
  readonly provider: string
  readonly model: string
}

/**
 * `model` with its provider's part stream attached (the same function it was made with).
 *
 * @since 0.1.0
 * @category combinators
 */
export const withParts = (model: LanguageModel.LanguageModel, parts: StreamParts, info?: ModelInfo): LanguageModel.LanguageModel =>
  withAttached(model, { [TypeId]: parts, [InfoId]: info })

/**
 * The provider and model `model` names, if it was made with them.
 *
 * @since 0.1.0
 * @category getters
 */
export const infoOf = (model: LanguageModel.LanguageModel): ModelInfo | undefined =>
  // A read of the one key (not a shared `value[key]` helper, whose one load site would see both
  // keys and every kind of model and go megamorphic): read on every model call.
  (model as { readonly [InfoId]?: ModelInfo | undefined })[InfoId]

/**
 * The part stream `model` carries, if any.
 *
 * @since 0.1.0
 * @category getters
 */
export const partsOf = (model: LanguageModel.LanguageModel): StreamParts | undefined =>
  (model as { readonly [TypeId]?: StreamParts | undefined })[TypeId]

/**
 * One text request to a provider: the prompt, the tools offered and the tool choice.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly prompt: LanguageModel.ProviderOptions["prompt"]
  readonly tools: ReadonlyArray<Tool.Any>
  readonly toolChoice: LanguageModel.ToolChoice<string>
}

/**
 * Runs one text request through `parts`, handing each part to `onPart`, under a
 * `LanguageModel.streamText` client span, with the provider options `streamText` would have
 * built (text output, no incremental prompt, deferred tool-call validation, tools narrowed by a
 * `oneOf` tool choice, and tool choice `"none"` when there are no tools at all). With no
 * tracing backend installed (Effect's `nativeTracer`), no span is built: nothing could see it
 * (Effect's own HTTP server skips its spans the same way), and it cost about 5 µs of a handoff.
 *
 * @since 0.1.0
 * @category utils
 */
export const run = <E, R>(
  parts: StreamParts,
  request: Request,
  onPart: (part: Response.StreamPartEncoded) => Effect.Effect<void, E, R>
): Effect.Effect<void, E | AiError.AiError, R> => Effect.withFiber((fiber) => runOn(fiber, parts, request, onPart))

/**
 * `run`, called on a step of `fiber` (a caller that already has its fiber saves a step).
 *
 * @since 0.1.0
 * @category utils
 */
export const runOn = <E, R>(
  fiber: Fiber.Fiber<unknown, unknown>,
  parts: StreamParts,
  request: Request,
  onPart: (part: Response.StreamPartEncoded) => Effect.Effect<void, E, R>
): Effect.Effect<void, E | AiError.AiError, R> =>
  tracingOff(fiber)
    ? runIn(untraced, parts, request, onPart)
    : Effect.useSpan("LanguageModel.streamText", { kind: "client" }, (span) => runIn(span, parts, request, onPart))

/** The span providers get when none is built: it keeps nothing. */
const untraced: Tracer.Span = {
  _tag: "Span",
  name: "LanguageModel.streamText",
  spanId: "untraced",
  traceId: "untraced",
  parent: Option.none(),
  annotations: Context.empty(),
  status: { _tag: "Started", startTime: 0n },
  attributes: new Map(),
  links: [],
  sampled: false,
  kind: "client",
  end: () => {},
  attribute: () => {},
  event: () => {},
  addLinks: () => {}
}

/** Called on the step that runs the request. */
const runIn = <E, R>(
  span: Tracer.Span,
  parts: StreamParts,
  request: Request,
  onPart: (part: Response.StreamPartEncoded) => Effect.Effect<void, E, R>
): Effect.Effect<void, E | AiError.AiError, R> => {
  const none = request.tools.length === 0
  const choice = none ? "none" : request.toolChoice
  const tools = typeof choice === "object" && "oneOf" in choice
    ? request.tools.filter((tool) => choice.oneOf.includes(tool.name))
    : request.tools
  span.attribute("gen_ai.output.type", "text")
  span.attribute("effect.ai.tool_choice", typeof choice === "string" ? choice : JSON.stringify(choice))
  const stream = parts({
    prompt: request.prompt,
    tools,
    toolChoice: choice,
    responseFormat: { type: "text" },
    span,
    previousResponseId: undefined,
    incrementalPrompt: undefined,
    toolCallValidation: "deferred"
  })
  return forEachPart(stream, onPart)
}

/**
 * `Stream.runForEach`, a chunk at a time: parts whose handler has nothing to run (the
 * handler returns `Effect.void`: metadata, usage, a collected tool call) cost no interpreter
 * step, where `runForEach` takes a loop iteration per part. The next part's handler is still
 * called only once the previous part's effect has ended, so a handler sees the state that
 * effect left (the floor, what was said).
 *
 * @since 0.1.0
 * @category utils
 */
export const forEachPart = <A, E, R, E2, R2>(
  stream: Stream.Stream<A, E, R>,
  onPart: (part: A) => Effect.Effect<void, E2, R2>
): Effect.Effect<void, E | E2, R | R2> =>
  Stream.runForEachArray(stream, (parts) => {
    const from = (start: number): Effect.Effect<void, E2, R2> => {
      for (let i = start; i < parts.length; i++) {
        const effect = onPart(parts[i]!)
        if (isVoid(effect)) continue
        return i + 1 === parts.length ? effect : Effect.flatMap(effect, () => from(i + 1))
      }
      return Effect.void
    }
    return from(0)
  })

/**
 * Folds stream parts into the non-streaming part list a provider's `generateText` returns.
 *
 * @since 0.1.0
 * @category utils
 */
export const collectParts = (parts: ReadonlyArray<Response.StreamPartEncoded>): Array<Response.PartEncoded> => {
  const out: Array<Response.PartEncoded> = []
  const open = new Map<string, { type: "text" | "reasoning"; text: string }>()
  for (const part of parts) {
    switch (part.type) {
      case "text-start":
      case "reasoning-start": {
        const block = { type: part.type === "text-start" ? "text" as const : "reasoning" as const, text: "" }
        open.set(`${block.type}:${part.id}`, block)
        out.push(block)
        break
      }
      case "text-delta":
      case "reasoning-delta": {
        const block = open.get(`${part.type === "text-delta" ? "text" : "reasoning"}:${part.id}`)
        if (block !== undefined) block.text += part.delta
        break
      }
      case "tool-call":
      case "response-metadata":
      case "finish":
        out.push(part)
        break
      default:
        break
    }
  }
  return out
}
