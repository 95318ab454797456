/**
 * Turns the SSE body of a streamed chat-completions response into
 * `effect/ai` `Response.StreamPartEncoded` values.
 *
 * - SSE framing is parsed with `effect/encoding` `Sse.makeParser` (CRLF / CR /
 *   LF line endings, comment and keep-alive lines, events split across
 *   network reads, multi-line `data`).
 * - `data: [DONE]` emits the `finish` part at once; the rest of the body is
 *   then drained (for at most {@link DONE_GRACE}) rather than aborted, so the
 *   keep-alive connection can be reused by the next request. A body that ends
 *   without `[DONE]` and without a `finish_reason` is treated as a dropped
 *   connection.
 * - Tool-call fragments are accumulated **by index**, so fragments of
 *   parallel calls may interleave; each call yields `tool-params-start`,
 *   `tool-params-delta`*, `tool-params-end` and one `tool-call` whose `params`
 *   are the parsed JSON arguments, or the raw string when they are not JSON.
 * - Only choice index 0 is read (`n` is never set above 1).
 *
 * @since 0.1.0
 */
import { Deferred, Effect, Exit, Predicate, Result, Stream } from "effect"
import { AiError, IdGenerator, type Response } from "effect/ai"
import { Sse } from "effect/encoding"
import { aiError, reasonFromStreamError, type Scrub } from "./ChatErrors.ts"
import { type Chunk, decodeChunk, mapFinishReason, mapUsage, parseToolArguments, type WireUsage } from "./ChatWire.ts"

type Part = Response.StreamPartEncoded

/** What the stream reports once it ends, for telemetry. */
export interface StreamSummary {
  readonly id: string | undefined
  readonly model: string | undefined
  readonly finishReason: Response.FinishReason
  readonly usage: typeof Response.Usage.Encoded
}

export interface DecodeOptions {
  /** `AiError.method` of raised errors. Default `"streamText"`. */
  readonly operation?: string | undefined
  /** HTTP method and URL, for network errors. */
  readonly method: string
  readonly url: string
  readonly scrub: Scrub
  readonly onFinish?: ((summary: StreamSummary) => void) | undefined
}

interface ToolCallState {
  readonly index: number
  readonly id: string
  name: string
  args: string
  started: boolean
}

const MAX_EVENT_SIZE = 8 * 1024 * 1024

/** How long the body may keep going after `[DONE]` before the stream stops reading it. */
export const DONE_GRACE = "1 second"

/**
 * Decodes a text stream (the response body, already UTF-8 decoded) into
 * stream parts. Failures are `AiError`s: `InvalidResponseError` for malformed
 * chunks, the mapped reason for in-stream `error` payloads, `NetworkError` for
 * a body that ends before the stream completed.
 */
export const decodeChatStream = <E, R>(
  text: Stream.Stream<string, E, R>,
  options: DecodeOptions
): Stream.Stream<Part, E | AiError.AiError, R | IdGenerator.IdGenerator> =>
  Stream.suspend(() => {
    const method = options.operation ?? "streamText"
    let metadataSent = false
    let responseId: string | undefined
    let responseModel: string | undefined
    let textId: string | undefined
    let reasoningId: string | undefined
    let partCounter = 0
    const toolCalls = new Map<number, ToolCallState>()
    const indexById = new Map<string, number>()
    let lastToolIndex: number | undefined
    let toolCallsEmitted = 0
    let finishReason: string | null | undefined
    let sawFinish = false
    let usage: WireUsage | undefined
    let sawDone = false
    let finished = false
    const doneSignal = Deferred.makeUnsafe<void>()

    const invalid = (description: string) =>
      aiError(method, new AiError.InvalidResponseError({ description: options.scrub(description) }))

    // ---------------------------------------------------------------- SSE
    const events: Array<Sse.Event> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") events.push(event)
    }, { maxEventSize: MAX_EVENT_SIZE })

    const feed = (chunk: string): Effect.Effect<ReadonlyArray<Sse.Event>, AiError.AiError> => {
      const error = parser.feed(chunk)
      if (error !== undefined) return Effect.fail(invalid(`SSE event too large (${error.message})`))
      return Effect.succeed(events.splice(0))
    }

    // ---------------------------------------------------------------- parts
    const closeReasoning = (out: Array<Part>) => {
      if (reasoningId !== undefined) {
        out.push({ type: "reasoning-end", id: reasoningId })
        reasoningId = undefined
      }
    }
    const closeText = (out: Array<Part>) => {
      if (textId !== undefined) {
        out.push({ type: "text-end", id: textId })
        textId = undefined
      }
    }
    const flushToolCalls = (out: Array<Part>) => {
      const calls = [...toolCalls.values()].sort((a, b) => a.index - b.index)
      for (const call of calls) {
        if (!call.started) {
          out.push({ type: "tool-params-start", id: call.id, name: call.name })
          if (call.args.length > 0) out.push({ type: "tool-params-delta", id: call.id, delta: call.args })
        }
        out.push({ type: "tool-params-end", id: call.id })
        out.push({ type: "tool-call", id: call.id, name: call.name, params: parseToolArguments(call.args) })
      }
      toolCallsEmitted += calls.length
      toolCalls.clear()
      indexById.clear()
      lastToolIndex = undefined
    }

    const resolveIndex = (index: number | null | undefined, id: string | null | undefined): number => {
      if (Predicate.isNumber(index)) return index
      // Non-conforming servers omit `index`: key by id, else continue the last call.
      if (Predicate.isString(id) && id.length > 0) {
        const known = indexById.get(id)
        if (known !== undefined) return known
        const next = Math.max(-1, ...toolCalls.keys()) + 1
        indexById.set(id, next)
        return next
      }
      return lastToolIndex ?? 0
    }

    const onChunk = Effect.fnUntraced(function*(chunk: Chunk) {
      const out: Array<Part> = []
      if (chunk.error !== undefined && chunk.error !== null) {
        const error = Predicate.isString(chunk.error) ? { message: chunk.error } : chunk.error
        return yield* Effect.fail(aiError(method, reasonFromStreamError(error, options.scrub)))
      }
      if (!metadataSent && (Predicate.isString(chunk.id) || Predicate.isString(chunk.model))) {
        metadataSent = true
        responseId = chunk.id ?? undefined
        responseModel = chunk.model ?? undefined
        out.push({
          type: "response-metadata",
          ...(responseId !== undefined ? { id: responseId } : {}),
          ...(responseModel !== undefined ? { modelId: responseModel } : {}),
          ...(Predicate.isNumber(chunk.created) && Number.isFinite(chunk.created)
            ? { timestamp: new Date(chunk.created * 1000).toISOString() }
            : {})
        })
      }
      for (const choice of chunk.choices ?? []) {
        if ((choice.index ?? 0) !== 0) continue
        const delta = choice.delta
        if (delta !== undefined && delta !== null) {
          const reasoning = delta.reasoning_content ?? delta.reasoning
          if (Predicate.isString(reasoning) && reasoning.length > 0) {
            if (reasoningId === undefined) {
              reasoningId = `reasoning_${partCounter++}`
              out.push({ type: "reasoning-start", id: reasoningId })
            }
            out.push({ type: "reasoning-delta", id: reasoningId, delta: reasoning })
          }
          for (const content of [delta.content, delta.refusal]) {
            if (Predicate.isString(content) && content.length > 0) {
              closeReasoning(out)
              if (textId === undefined) {
                textId = `text_${partCounter++}`
                out.push({ type: "text-start", id: textId })
              }
              out.push({ type: "text-delta", id: textId, delta: content })
            }
          }
          for (const fragment of delta.tool_calls ?? []) {
            closeReasoning(out)
            const index = resolveIndex(fragment.index, fragment.id)
            lastToolIndex = index
            let call = toolCalls.get(index)
            if (call === undefined) {
              const id = Predicate.isString(fragment.id) && fragment.id.length > 0
                ? fragment.id
                : `call_${yield* (yield* IdGenerator.IdGenerator).generateId()}`
              call = { index, id, name: "", args: "", started: false }
              toolCalls.set(index, call)
            }
            const name = fragment.function?.name
            if (Predicate.isString(name) && name.length > 0 && !call.started) call.name += name
            const args = fragment.function?.arguments
            if (!call.started && call.name.length > 0) {
              call.started = true
              out.push({ type: "tool-params-start", id: call.id, name: call.name })
              if (call.args.length > 0) out.push({ type: "tool-params-delta", id: call.id, delta: call.args })
            }
            if (Predicate.isString(args) && args.length > 0) {
              call.args += args
              if (call.started) out.push({ type: "tool-params-delta", id: call.id, delta: args })
            }
          }
        }
        if (Predicate.isString(choice.finish_reason)) {
          finishReason = choice.finish_reason
          sawFinish = true
          closeReasoning(out)
          closeText(out)
          flushToolCalls(out)
        }
      }
      if (chunk.usage !== undefined && chunk.usage !== null) usage = chunk.usage
      return out
    })

    const onEvent = (event: Sse.Event): Effect.Effect<ReadonlyArray<Part>, AiError.AiError, IdGenerator.IdGenerator> => {
      if (sawDone) return Effect.succeed([])
      const data = event.data.trim()
      if (data === "[DONE]") {
        sawDone = true
        Deferred.doneUnsafe(doneSignal, Exit.void)
        return Effect.succeed(finish())
      }
      if (event.event === "error") {
        const decoded = decodeChunk(data)
        const error = Result.isSuccess(decoded) && decoded.success.error !== undefined && decoded.success.error !== null
          ? (Predicate.isString(decoded.success.error) ? { message: decoded.success.error } : decoded.success.error)
          : { message: data }
        return Effect.fail(aiError(method, reasonFromStreamError(error, options.scrub)))
      }
      if (data.length === 0) return Effect.succeed([])
      const decoded = decodeChunk(data)
      if (Result.isFailure(decoded)) {
        const preview = data.length > 200 ? data.slice(0, 200) + "..." : data
        return Effect.fail(invalid(`malformed chat.completion.chunk: ${decoded.failure.message} (data: ${preview})`))
      }
      return onChunk(decoded.success)
    }

    const finish = (): ReadonlyArray<Part> => {
      if (finished) return []
      finished = true
      const out: Array<Part> = []
      closeReasoning(out)
      closeText(out)
      flushToolCalls(out)
      const reason = mapFinishReason(finishReason, toolCallsEmitted > 0)
      const mappedUsage = mapUsage(usage)
      options.onFinish?.({ id: responseId, model: responseModel, finishReason: reason, usage: mappedUsage })
      out.push({ type: "finish", reason, usage: mappedUsage })
      return out
    }

    const onEnd = Effect.suspend((): Effect.Effect<ReadonlyArray<Part>, AiError.AiError> => {
      if (!sawDone && !sawFinish) {
        return Effect.fail(aiError(
          method,
          new AiError.NetworkError({
            reason: "TransportError",
            method: options.method,
            url: options.url,
            description: "connection closed before the stream completed (no finish_reason, no [DONE])"
          })
        ))
      }
      return Effect.succeed(finish())
    })

    return text.pipe(
      Stream.mapEffect(feed),
      Stream.flattenIterable,
      Stream.mapEffect(onEvent),
      // after [DONE]: ignore whatever the body still does, but stop reading it after a grace period
      Stream.catchIf(() => sawDone, () => Stream.empty),
      Stream.interruptWhen(Deferred.await(doneSignal).pipe(Effect.andThen(Effect.sleep(DONE_GRACE)))),
      Stream.concat(Stream.fromEffect(onEnd)),
      Stream.flattenIterable
    )
  })
