/**
 * Types of the Gemini Live mock (BidiGenerateContent over WebSocket). Wire facts: docs/protocols.md
 * section 2. Client messages carry exactly one of `setup`, `clientContent`, `realtimeInput`,
 * `toolResponse`; server messages one or more of `setupComplete`, `serverContent`, `toolCall`,
 * `toolCallCancellation`, `usageMetadata`, `goAway`, `sessionResumptionUpdate`.
 */
import type { CommonMockOptions } from "../shared/server.ts"

export interface GeminiClientMessage {
  readonly setup?: Readonly<Record<string, unknown>>
  readonly clientContent?: Readonly<Record<string, unknown>>
  readonly realtimeInput?: Readonly<Record<string, unknown>>
  readonly toolResponse?: Readonly<Record<string, unknown>>
  readonly [key: string]: unknown
}

export interface Part {
  readonly text?: string
  readonly thought?: boolean
  readonly inlineData?: { readonly mimeType: string; readonly data: string }
  readonly functionCall?: { readonly id?: string; readonly name: string; readonly args?: unknown }
  readonly functionResponse?: FunctionResponse
  readonly [key: string]: unknown
}

export interface Content {
  readonly role?: "user" | "model"
  readonly parts: ReadonlyArray<Part>
}

export interface FunctionDeclaration {
  readonly name: string
  readonly description?: string
  readonly parameters?: unknown
  readonly behavior?: "BLOCKING" | "NON_BLOCKING"
  readonly [key: string]: unknown
}

export interface FunctionResponse {
  readonly id?: string
  readonly name?: string
  readonly response?: Readonly<Record<string, unknown>>
  readonly scheduling?: "INTERRUPT" | "WHEN_IDLE" | "SILENT"
  readonly willContinue?: boolean
  readonly [key: string]: unknown
}

/** A Gemini error is a close frame (docs/protocols.md 2.9): 1007 invalid argument, 1008 policy, 1011 internal. */
export interface CloseSpec {
  readonly code: number
  readonly reason?: string
}

export interface ToolCallPlan {
  readonly name: string
  /** Omitted from the wire when undefined (edge case 2.10 #12). */
  readonly args?: Readonly<Record<string, unknown>>
  /** Default: a fresh id; `null` omits the id (Vertex style). */
  readonly id?: string | null
}

/** One model turn. */
export interface GeminiTurnPlan {
  /** Spoken transcript (AUDIO modality) or text parts (TEXT modality); strings stream word by word. */
  readonly text?: string | ReadonlyArray<string>
  /** Audio length (default 60 ms per character, at least 200 ms when there is text). */
  readonly audioMs?: number
  /** Audio per `modelTurn` message (default 100 ms). */
  readonly chunkMs?: number
  /** A `thought: true` part first (must not be spoken). */
  readonly thought?: string
  /** A `toolCall` after the spoken part; blocking calls pause the turn until `toolResponse`. */
  readonly toolCalls?: ReadonlyArray<ToolCallPlan>
  /** Send `generationComplete` after a `toolCall` (some models do, docs/protocols.md 2.5). Default false. */
  readonly generationCompleteAfterToolCall?: boolean
  /** Send `generationComplete` at the end (default true). */
  readonly generationComplete?: boolean
  /** Simulated playback between `generationComplete` and `turnComplete`. */
  readonly turnCompleteDelayMs?: number
  /** `usageMetadata` with `turnComplete` (default computed; `false` omits it). */
  readonly usage?: false | Readonly<Record<string, unknown>>
  /** Gemini 3.1 style: audio and output transcription in one message. */
  readonly multiPart?: boolean
  readonly firstAudioMs?: number
  readonly deltaIntervalMs?: number
  /** Close after this many messages of this turn (1-based). */
  readonly closeAfter?: {
    readonly messages: number
    readonly code?: number
    readonly reason?: string
    readonly abrupt?: boolean
  }
}

export type GeminiScriptTrigger = "clientContent" | "realtimeInput" | "toolResponse" | "push"

export interface GeminiScriptContext {
  readonly trigger: GeminiScriptTrigger
  readonly connection: number
  /** Model turns started on this connection before this one. */
  readonly turnNumber: number
  readonly model: string
  /** The raw `setup` message body. */
  readonly setup: Readonly<Record<string, unknown>>
  readonly systemInstruction: string
  readonly tools: ReadonlyArray<FunctionDeclaration>
  readonly responseModalities: ReadonlyArray<string>
  /** The conversation so far (restored from the resumption handle, if any). */
  readonly history: ReadonlyArray<Content>
  readonly lastUserText: string | undefined
  /** The function responses that triggered this turn (trigger `toolResponse`). */
  readonly functionResponses: ReadonlyArray<FunctionResponse>
  readonly resumed: boolean
}

/** `null` keeps the model silent. */
export type GeminiScript =
  | ((ctx: GeminiScriptContext) => GeminiTurnPlan | null | Promise<GeminiTurnPlan | null>)
  | ReadonlyArray<GeminiTurnPlan | null>

export type GeminiAction =
  /** A server-initiated model turn (plan from the script when absent). */
  | { readonly type: "respond"; readonly plan?: GeminiTurnPlan }
  /** `toolCall` now, as a model turn made only of calls. */
  | { readonly type: "toolCall"; readonly calls: ReadonlyArray<ToolCallPlan> }
  /** `toolCallCancellation` for these ids (default: every pending call). */
  | { readonly type: "cancelToolCalls"; readonly ids?: ReadonlyArray<string> }
  /** A barge-in: `interrupted` (+ cancellations) then `turnComplete`, even without a generation. */
  | { readonly type: "interrupt" }
  | { readonly type: "userSpeaks"; readonly durationMs?: number; readonly transcript?: string }
  /** `goAway {timeLeft}`, then a close after `closeAfterMs` (default timeLeftMs; null: no close). */
  | {
    readonly type: "goAway"
    readonly timeLeftMs?: number
    readonly closeAfterMs?: number | null
    readonly code?: number
    readonly reason?: string
  }
  /** A `sessionResumptionUpdate` now (resumable unless generating or calls are pending). */
  | { readonly type: "resumptionUpdate"; readonly resumable?: boolean }
  /** A standalone `usageMetadata` message. */
  | { readonly type: "usage" }
  | { readonly type: "send"; readonly message: object }
  | { readonly type: "raw"; readonly data: string; readonly binary?: boolean }
  | { readonly type: "noise"; readonly kind: "unknown" | "invalid-json" | "not-object" | "missing-type" | "binary-garbage" }
  | { readonly type: "close"; readonly code?: number; readonly reason?: string }
  | { readonly type: "terminate" }

export interface GeminiTranscribeInput {
  readonly connection: number
  readonly audioMs: number
  readonly hint: string | undefined
}

export interface GeminiLiveMockOptions extends CommonMockOptions<GeminiClientMessage, CloseSpec, GeminiAction> {
  /** The scripted model (default: echo "You said: …" / "Tool result: …"). */
  readonly script?: GeminiScript
  /** Delay from the start of a model turn to its first content message. */
  readonly firstAudioMs?: number
  readonly deltaIntervalMs?: number
  /** Simulated playback between generationComplete and turnComplete (default 0). */
  readonly turnCompleteDelayMs?: number
  /** Server frames as text (default) or as binary frames holding JSON. */
  readonly frameEncoding?: "text" | "binary"
  /** Accept `{"config": …}` as the first message (the raw-WebSocket guide's variant). Default false. */
  readonly acceptConfigAlias?: boolean
  /** When set, other models are refused with close 1008. */
  readonly knownModels?: ReadonlyArray<string>
  /** When set, the `key` / `access_token` query parameter (or Bearer header) must match. */
  readonly apiKey?: string
  /** Input transcription text (default: the `userSpeaks` transcript or "[audio Nms]"). */
  readonly transcribe?: (input: GeminiTranscribeInput) => string
  /** Send `goAway` this long after `setupComplete`, then close after `timeLeftMs` (default 1000). */
  readonly lifetime?: { readonly goAwayAfterMs: number; readonly timeLeftMs?: number }
  /** Gemini 3.1 style multi-part messages by default (default: model name contains "3.1"). */
  readonly multiPart?: boolean
}
