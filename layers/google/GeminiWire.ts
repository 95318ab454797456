/**
 * Wire format of the Gemini Live API (`BidiGenerateContent` over a WebSocket, docs/protocols.md
 * section 2): a lenient schema of the server message, builders of the client messages (each has
 * exactly one of `setup`, `clientContent`, `realtimeInput`, `toolResponse`), the conversion of
 * baton chat items to `Content` turns, and of JSON Schema tool parameters to the OpenAPI subset
 * Gemini Live accepts in `parameters` (it does not take `parametersJsonSchema`).
 *
 * Pure module: no IO, no services.
 */
import { Option, Predicate, Schema } from "effect"
import type { ChatItem } from "../../src/ChatContext.ts"
import type { RealtimeTool } from "../../services/RealtimeModel.ts"

// =============================================================================
// Server messages
// =============================================================================

const opt = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const Part = Schema.Struct({
  text: opt(Schema.String),
  thought: opt(Schema.Boolean),
  inlineData: opt(Schema.Struct({ mimeType: opt(Schema.String), data: opt(Schema.String) }))
})

const Transcription = Schema.Struct({ text: opt(Schema.String), finished: opt(Schema.Boolean) })

export const ServerMessage = Schema.Struct({
  setupComplete: opt(Schema.Unknown),
  serverContent: opt(Schema.Struct({
    modelTurn: opt(Schema.Struct({ parts: opt(Schema.Array(Part)) })),
    turnComplete: opt(Schema.Boolean),
    interrupted: opt(Schema.Boolean),
    generationComplete: opt(Schema.Boolean),
    inputTranscription: opt(Transcription),
    outputTranscription: opt(Transcription)
  })),
  toolCall: opt(Schema.Struct({
    functionCalls: opt(Schema.Array(Schema.Struct({ id: opt(Schema.String), name: Schema.String, args: opt(Schema.Unknown) })))
  })),
  toolCallCancellation: opt(Schema.Struct({ ids: opt(Schema.Array(Schema.String)) })),
  usageMetadata: opt(Schema.Struct({ promptTokenCount: opt(Schema.Number), responseTokenCount: opt(Schema.Number) })),
  goAway: opt(Schema.Struct({ timeLeft: opt(Schema.String) })),
  sessionResumptionUpdate: opt(Schema.Struct({ newHandle: opt(Schema.String), resumable: opt(Schema.Boolean) }))
})
export type ServerMessage = typeof ServerMessage.Type

const KNOWN = ["setupComplete", "serverContent", "toolCall", "toolCallCancellation", "usageMetadata", "goAway", "sessionResumptionUpdate"]
const IGNORED = ["voiceActivity", "voiceActivityDetectionSignal"]

export type Decoded =
  | { readonly _tag: "Message"; readonly message: ServerMessage }
  | { readonly _tag: "Unknown"; readonly keys: string }
  | { readonly _tag: "Malformed"; readonly detail: string }

const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Unknown))
const decodeMessage = Schema.decodeUnknownOption(ServerMessage)

/** Classifies one frame (text, or binary holding UTF-8 JSON). Never throws. */
export const decodeServerFrame = (text: string): Decoded => {
  const json = decodeJson(text)
  if (Option.isNone(json)) return { _tag: "Malformed", detail: "not JSON" }
  if (!Predicate.isObject(json.value) || Array.isArray(json.value)) return { _tag: "Malformed", detail: "not an object" }
  const keys = Object.keys(json.value)
  if (!keys.some((k) => KNOWN.includes(k))) {
    return keys.every((k) => IGNORED.includes(k)) && keys.length > 0
      ? { _tag: "Message", message: {} }
      : { _tag: "Unknown", keys: keys.join(",") || "{}" }
  }
  const decoded = decodeMessage(json.value)
  return Option.isSome(decoded)
    ? { _tag: "Message", message: decoded.value }
    : { _tag: "Malformed", detail: `${keys.join(",")} with an unexpected shape` }
}

/** Protobuf JSON duration (`"1.5s"`) in milliseconds (0 when unreadable). */
export const durationMs = (value: string | null | undefined): number => {
  const seconds = Number.parseFloat((value ?? "").replace(/s$/, ""))
  return Number.isFinite(seconds) ? Math.max(0, Math.round(seconds * 1000)) : 0
}

/** The sample rate named in a MIME type (`audio/pcm;rate=24000`), else `fallback`. */
export const rateOf = (mimeType: string | null | undefined, fallback: number): number => {
  const rate = Number(/rate=(\d+)/.exec(mimeType ?? "")?.[1])
  return Number.isFinite(rate) && rate > 0 ? rate : fallback
}

// =============================================================================
// Client messages
// =============================================================================

export interface Content {
  readonly role?: "user" | "model"
  readonly parts: ReadonlyArray<Readonly<Record<string, unknown>>>
}

const SCHEMA_KEYS = ["format", "description", "enum", "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "pattern"]

/** JSON Schema to the OpenAPI subset of Gemini's `Schema` (upper-case types, `nullable`). */
export const toGeminiSchema = (schema: unknown): Record<string, unknown> => {
  if (!Predicate.isObject(schema)) return { type: "STRING" }
  const s = schema as Record<string, unknown>
  const out: Record<string, unknown> = {}
  const variants = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined
  if (variants !== undefined) {
    const nonNull = variants.filter((v) => !(Predicate.isObject(v) && (v as Record<string, unknown>).type === "null"))
    if (nonNull.length === 1) return { ...toGeminiSchema(nonNull[0]), nullable: nonNull.length < variants.length || undefined }
    out.anyOf = nonNull.map(toGeminiSchema)
    if (nonNull.length < variants.length) out.nullable = true
  }
  const types = Array.isArray(s.type) ? s.type.filter((t) => t !== "null") : [s.type]
  if (Array.isArray(s.type) && types.length < s.type.length) out.nullable = true
  if (typeof types[0] === "string") out.type = types[0].toUpperCase()
  for (const key of SCHEMA_KEYS) if (s[key] !== undefined) out[key] = s[key]
  if (Array.isArray(s.enum) && !s.enum.every(Predicate.isString)) {
    // Gemini takes only string enums: other values are said in the description instead.
    delete out.enum
    const choices = `One of: ${s.enum.map((v) => JSON.stringify(v)).join(", ")}.`
    out.description = typeof s.description === "string" ? `${s.description} ${choices}` : choices
  }
  if (Predicate.isObject(s.properties)) {
    out.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, toGeminiSchema(v)]))
    if (out.type === undefined) out.type = "OBJECT"
  }
  if (Array.isArray(s.required)) out.required = s.required
  if (s.items !== undefined) out.items = toGeminiSchema(s.items)
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined))
}

/**
 * Gemini refuses an OBJECT schema with no properties ("should be non-empty for OBJECT type"): a
 * function without parameters is declared without `parameters`.
 */
export const toFunctionDeclarations = (tools: ReadonlyArray<RealtimeTool>) =>
  tools.map((tool) => {
    const parameters = toGeminiSchema(tool.parameters)
    const empty = parameters.type === "OBJECT" && Object.keys((parameters.properties ?? {}) as object).length === 0
    return empty ? { name: tool.name, description: tool.description } : { name: tool.name, description: tool.description, parameters }
  })

const parseArgs = (text: string): unknown => {
  if (text.trim() === "") return {}
  return Option.getOrElse(decodeJson(text), () => ({ arguments: text }))
}

/** The `Content` turn of a baton chat item (`undefined` for items Gemini does not hold). */
export const contentOf = (item: ChatItem): Content | undefined => {
  switch (item._tag) {
    case "Message":
      // Gemini has no system role in turns: system notes are sent without a role (docs/protocols.md 2.7)
      return item.role === "assistant"
        ? { role: "model", parts: [{ text: item.text }] }
        : item.role === "user"
        ? { role: "user", parts: [{ text: item.text }] }
        : { parts: [{ text: item.text }] }
    case "FunctionCall":
      return { role: "model", parts: [{ functionCall: { id: item.callId, name: item.name, args: parseArgs(item.arguments) } }] }
    case "FunctionCallOutput":
      return { role: "user", parts: [{ functionResponse: functionResponse(item.callId, item.name, item.output, item.isError) }] }
    case "AgentHandoff":
      return undefined
  }
}

export const functionResponse = (callId: string, name: string, output: string, isError: boolean) => ({
  id: callId,
  name,
  response: isError ? { error: output } : { output }
})

export const ClientMessages = {
  setup: (options: {
    readonly model: string
    readonly instructions: string
    readonly tools: ReadonlyArray<RealtimeTool>
    readonly voice: string | undefined
    readonly handle: string | undefined
    readonly automaticActivityDetection: boolean
    readonly extra: Readonly<Record<string, unknown>>
  }) => ({
    setup: {
      model: options.model,
      generationConfig: {
        responseModalities: ["AUDIO"],
        ...(options.voice === undefined ? {} : { speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: options.voice } } } })
      },
      ...(options.instructions === "" ? {} : { systemInstruction: { parts: [{ text: options.instructions }] } }),
      ...(options.tools.length === 0 ? {} : { tools: [{ functionDeclarations: toFunctionDeclarations(options.tools) }] }),
      realtimeInputConfig: { automaticActivityDetection: { disabled: !options.automaticActivityDetection } },
      inputAudioTranscription: {},
      outputAudioTranscription: {},
      sessionResumption: options.handle === undefined ? {} : { handle: options.handle },
      ...options.extra
    }
  }),
  clientContent: (turns: ReadonlyArray<Content>, turnComplete: boolean) => ({ clientContent: { turns, turnComplete } }),
  audio: (base64: string, rate: number) => ({ realtimeInput: { audio: { data: base64, mimeType: `audio/pcm;rate=${rate}` } } }),
  audioStreamEnd: () => ({ realtimeInput: { audioStreamEnd: true } }),
  activityStart: () => ({ realtimeInput: { activityStart: {} } }),
  activityEnd: () => ({ realtimeInput: { activityEnd: {} } }),
  toolResponse: (responses: ReadonlyArray<ReturnType<typeof functionResponse>>) => ({
    toolResponse: { functionResponses: responses }
  })
} as const
