/**
 * Wire format of the OpenAI-compatible chat-completions API: request body
 * construction from `effect/ai` prompts and tools, and lenient schemas for the
 * streamed `chat.completion.chunk` payloads.
 *
 * Pure module: no IO, no services.
 *
 * @since 0.1.0
 */
import * as ToolSchema from "../../services/ToolSchema.ts"
import { Option, Predicate, Schema } from "effect"
import type { LanguageModel, Prompt, Response } from "effect/ai"
import { Tool } from "effect/ai"

// =============================================================================
// Request
// =============================================================================

/** A chat-completions tool call as it appears in an assistant message. */
export interface WireToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

/** Content parts accepted in user messages. */
export type WireUserContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string } }
  | { readonly type: "file"; readonly file: { readonly file_data: string; readonly filename?: string } }

/** One chat-completions message. */
export type WireMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string | ReadonlyArray<WireUserContentPart> }
  | {
    readonly role: "assistant"
    readonly content: string | null
    readonly tool_calls?: ReadonlyArray<WireToolCall>
  }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

/** A function tool declaration. */
export interface WireTool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description?: string
    readonly parameters: unknown
  }
}

/** The `tool_choice` request field. */
export type WireToolChoice =
  | "auto"
  | "none"
  | "required"
  | { readonly type: "function"; readonly function: { readonly name: string } }

/** The streamed chat-completions request body. */
export interface WireRequestBody {
  readonly model: string
  readonly messages: ReadonlyArray<WireMessage>
  readonly stream: true
  readonly stream_options: { readonly include_usage: true }
  readonly tools?: ReadonlyArray<WireTool>
  readonly tool_choice?: WireToolChoice
  readonly parallel_tool_calls?: boolean
  readonly temperature?: number
  readonly max_tokens?: number
  readonly max_completion_tokens?: number
}

/** Request-level settings that do not come from the prompt. */
export interface RequestSettings {
  readonly model: string
  readonly parallelToolCalls: boolean
  readonly temperature?: number | undefined
  readonly maxTokens?: number | undefined
  readonly maxTokensParameter: "max_tokens" | "max_completion_tokens"
}

const encodeJson = (value: unknown): string => {
  if (Predicate.isString(value)) return value
  const json = JSON.stringify(value)
  return json === undefined ? "null" : json
}

const bytesToBase64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64")

const fileToUrl = (part: Prompt.FilePart): string => {
  if (part.data instanceof URL) return part.data.href
  if (part.data instanceof Uint8Array) return `data:${part.mediaType};base64,${bytesToBase64(part.data)}`
  return part.data.startsWith("data:") || /^https?:\/\//.test(part.data)
    ? part.data
    : `data:${part.mediaType};base64,${part.data}`
}

const userPart = (part: Prompt.UserMessagePart): WireUserContentPart => {
  if (part.type === "text") return { type: "text", text: part.text }
  if (part.mediaType.startsWith("image/")) return { type: "image_url", image_url: { url: fileToUrl(part) } }
  return {
    type: "file",
    file: part.fileName === undefined
      ? { file_data: fileToUrl(part) }
      : { file_data: fileToUrl(part), filename: part.fileName }
  }
}

/**
 * Text sent back to the model for a tool result: the tool's `modelOutput`
 * text when present, else the result itself (strings verbatim, anything else
 * as JSON).
 */
const toolResultContent = (part: Prompt.ToolResultPart): string => {
  if (part.modelOutput !== undefined && part.modelOutput.length > 0) {
    return part.modelOutput.map((p) => (p.type === "text" ? p.text : `[file: ${p.mediaType}]`)).join("\n")
  }
  return encodeJson(part.result)
}

/**
 * Maps an `effect/ai` prompt to chat-completions messages.
 *
 * Tool-call parameters that are already a string (the raw, possibly invalid
 * JSON a model produced) are sent back verbatim; anything else is JSON-encoded.
 * Reasoning parts, provider-executed tool calls and approval parts have no
 * chat-completions equivalent and are dropped.
 */
export const messagesFromPrompt = (prompt: Prompt.Prompt): Array<WireMessage> => {
  const out: Array<WireMessage> = []
  for (const message of prompt.content) {
    switch (message.role) {
      case "system": {
        out.push({ role: "system", content: message.content })
        break
      }
      case "user": {
        const parts = message.content
        if (parts.every((p) => p.type === "text")) {
          out.push({ role: "user", content: parts.map((p) => (p as Prompt.TextPart).text).join("\n") })
        } else {
          out.push({ role: "user", content: parts.map(userPart) })
        }
        break
      }
      case "assistant": {
        const texts: Array<string> = []
        const toolCalls: Array<WireToolCall> = []
        for (const part of message.content) {
          if (part.type === "text") {
            texts.push(part.text)
          } else if (part.type === "tool-call" && part.providerExecuted !== true) {
            toolCalls.push({
              id: part.id,
              type: "function",
              function: { name: part.name, arguments: encodeJson(part.params) }
            })
          }
        }
        if (texts.length === 0 && toolCalls.length === 0) break
        const content = texts.length > 0 ? texts.join("") : null
        out.push(toolCalls.length > 0 ? { role: "assistant", content, tool_calls: toolCalls } : { role: "assistant", content })
        break
      }
      case "tool": {
        for (const part of message.content) {
          if (part.type === "tool-result" && part.providerExecuted !== true) {
            out.push({ role: "tool", tool_call_id: part.id, content: toolResultContent(part) })
          }
        }
        break
      }
    }
  }
  return out
}

/** Maps user-defined tools to chat-completions function tools (provider-defined tools are skipped). */
export const toolsFromOptions = (tools: ReadonlyArray<Tool.Any>): Array<WireTool> => {
  const out: Array<WireTool> = []
  for (const tool of tools) {
    if (Tool.isProviderDefined(tool)) continue
    const description = Tool.getDescription(tool)
    out.push({
      type: "function",
      function: description === undefined
        ? { name: tool.name, parameters: ToolSchema.parametersOf(tool) }
        : { name: tool.name, description, parameters: ToolSchema.parametersOf(tool) }
    })
  }
  return out
}

/**
 * Maps the `effect/ai` tool choice. `{ oneOf }` needs no special value: the
 * tool list was already narrowed to that subset by `LanguageModel`.
 */
export const toolChoiceFromOptions = (choice: LanguageModel.ToolChoice<string>): WireToolChoice => {
  if (choice === "auto" || choice === "none" || choice === "required") return choice
  if ("tool" in choice) return { type: "function", function: { name: choice.tool } }
  return choice.mode === "required" ? "required" : "auto"
}

/** Builds the full streamed request body. */
export const makeRequestBody = (
  options: Pick<LanguageModel.ProviderOptions, "prompt" | "tools" | "toolChoice">,
  settings: RequestSettings
): WireRequestBody => {
  const tools = toolsFromOptions(options.tools)
  return {
    model: settings.model,
    messages: messagesFromPrompt(options.prompt),
    stream: true,
    stream_options: { include_usage: true },
    ...(tools.length > 0
      ? {
        tools,
        tool_choice: toolChoiceFromOptions(options.toolChoice),
        parallel_tool_calls: settings.parallelToolCalls
      }
      : {}),
    ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
    ...(settings.maxTokens !== undefined ? { [settings.maxTokensParameter]: settings.maxTokens } : {})
  }
}

// =============================================================================
// Response chunks
// =============================================================================

const opt = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** The `error` object of an error body or of an in-stream error event. */
export const ErrorObject = Schema.Struct({
  message: opt(Schema.String),
  type: opt(Schema.String),
  code: opt(Schema.Union([Schema.String, Schema.Number])),
  param: opt(Schema.String)
})
export type ErrorObject = typeof ErrorObject.Type

/** `{"error": {...}}`; some gateways send `{"error": "text"}`. */
export const ErrorEnvelope = Schema.Struct({
  error: Schema.Union([ErrorObject, Schema.String])
})

const ToolCallDelta = Schema.Struct({
  index: opt(Schema.Number),
  id: opt(Schema.String),
  type: opt(Schema.String),
  function: opt(Schema.Struct({
    name: opt(Schema.String),
    arguments: opt(Schema.String)
  }))
})
export type ToolCallDelta = typeof ToolCallDelta.Type

const Delta = Schema.Struct({
  role: opt(Schema.String),
  content: opt(Schema.String),
  refusal: opt(Schema.String),
  reasoning_content: opt(Schema.String),
  reasoning: opt(Schema.String),
  tool_calls: opt(Schema.Array(ToolCallDelta))
})

const Choice = Schema.Struct({
  index: opt(Schema.Number),
  delta: opt(Delta),
  finish_reason: opt(Schema.String)
})

export const WireUsage = Schema.Struct({
  prompt_tokens: opt(Schema.Number),
  completion_tokens: opt(Schema.Number),
  total_tokens: opt(Schema.Number),
  prompt_tokens_details: opt(Schema.Struct({ cached_tokens: opt(Schema.Number) })),
  completion_tokens_details: opt(Schema.Struct({ reasoning_tokens: opt(Schema.Number) }))
})
export type WireUsage = typeof WireUsage.Type

/** A `chat.completion.chunk`, or an in-stream `{"error": ...}` payload. Unknown keys are ignored. */
export const Chunk = Schema.Struct({
  id: opt(Schema.String),
  model: opt(Schema.String),
  created: opt(Schema.Number),
  choices: opt(Schema.Array(Choice)),
  usage: opt(WireUsage),
  error: opt(Schema.Union([ErrorObject, Schema.String]))
})
export type Chunk = typeof Chunk.Type

/** Decodes the `data` of one SSE event. */
export const decodeChunk = Schema.decodeUnknownResult(Schema.fromJsonString(Chunk))

const decodeEnvelope = Schema.decodeUnknownOption(Schema.fromJsonString(ErrorEnvelope))

/** Reads `{"error": ...}` from an HTTP error body, if it has that shape. */
export const parseErrorBody = (body: string): Option.Option<ErrorObject> =>
  decodeEnvelope(body).pipe(
    Option.map(({ error }) => (Predicate.isString(error) ? { message: error } : error))
  )

const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Unknown))

/**
 * Tool-call arguments: the parsed JSON value, `{}` for an empty string, or the
 * raw string itself when it is not valid JSON (the caller reports that to the
 * model as bad arguments).
 */
export const parseToolArguments = (raw: string): unknown =>
  raw.trim() === "" ? {} : Option.getOrElse(decodeJson(raw), () => raw)

/** Maps a wire `finish_reason`. A missing reason is inferred from whether tool calls were made. */
export const mapFinishReason = (
  reason: string | null | undefined,
  hadToolCalls: boolean
): Response.FinishReason => {
  switch (reason) {
    case "stop":
      return "stop"
    case "length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    case null:
    case undefined:
      return hadToolCalls ? "tool-calls" : "stop"
    default:
      return "other"
  }
}

const int = (n: number | null | undefined): number | undefined =>
  Predicate.isNumber(n) && Number.isFinite(n) ? Math.trunc(n) : undefined

const defined = <T extends Record<string, number | undefined>>(record: T): { [K in keyof T]?: number } => {
  const out: Record<string, number> = {}
  for (const [key, value] of Object.entries(record)) {
    if (value !== undefined) out[key] = value
  }
  return out as { [K in keyof T]?: number }
}

/** Maps wire usage to `Response.Usage` (encoded). Missing usage gives empty token counts. */
export const mapUsage = (usage: WireUsage | undefined): typeof Response.Usage.Encoded => {
  if (usage === undefined) return { inputTokens: {}, outputTokens: {} }
  const input = int(usage.prompt_tokens)
  const cached = int(usage.prompt_tokens_details?.cached_tokens)
  const output = int(usage.completion_tokens)
  const reasoning = int(usage.completion_tokens_details?.reasoning_tokens)
  return {
    inputTokens: defined({
      total: input,
      cacheRead: cached,
      uncached: input !== undefined && cached !== undefined ? input - cached : undefined
    }),
    outputTokens: defined({
      total: output,
      reasoning,
      text: output !== undefined && reasoning !== undefined ? output - reasoning : undefined
    })
  }
}
