/**
 * Types of the OpenAI Realtime GA mock: wire shapes (loosely typed where the client controls them),
 * the scripted-model plan, actions and options. Wire facts: docs/protocols.md section 1.
 */
import type { CommonMockOptions } from "../shared/server.ts"

/** A client event as received (after the JSON / `type` checks). */
export interface ClientEvent {
  readonly type: string
  readonly event_id?: string
  readonly [key: string]: unknown
}

/** The `error` object of an `error` event (the server adds `event_id` of the offending event). */
export interface ErrorSpec {
  /** Default `"invalid_request_error"`. */
  readonly type?: string
  readonly code: string | null
  readonly message: string
  readonly param?: string | null
}

export type AudioFormat =
  | { readonly type: "audio/pcm"; readonly rate: 24000 }
  | { readonly type: "audio/pcmu" }
  | { readonly type: "audio/pcma" }

export interface ContentPart {
  readonly type: string
  readonly [key: string]: unknown
}

/** A conversation item as the server shows it (`conversation.item.added`, `response.done`, ...). */
export interface RealtimeItem {
  readonly id: string
  readonly object: "realtime.item"
  readonly type: "message" | "function_call" | "function_call_output"
  readonly status?: "completed" | "in_progress" | "incomplete"
  readonly role?: "user" | "assistant" | "system"
  readonly content?: ReadonlyArray<ContentPart>
  readonly call_id?: string
  readonly name?: string
  readonly arguments?: string
  readonly output?: string
}

export interface FunctionTool {
  readonly type: "function" | "mcp"
  readonly name?: string
  readonly description?: string
  readonly parameters?: unknown
  readonly [key: string]: unknown
}

export type ToolChoice =
  | "none"
  | "auto"
  | "required"
  | { readonly type: "function"; readonly name: string }
  | { readonly type: "mcp"; readonly server_label: string; readonly name?: string }

export interface TurnDetection {
  readonly type: "server_vad" | "semantic_vad"
  readonly threshold?: number
  readonly prefix_padding_ms?: number
  readonly silence_duration_ms?: number
  readonly idle_timeout_ms?: number | null
  readonly eagerness?: "low" | "medium" | "high" | "auto"
  readonly create_response: boolean
  readonly interrupt_response: boolean
}

/** The full effective GA session config (what `session.created` / `session.updated` carry). */
export interface SessionConfig {
  readonly type: "realtime" | "transcription"
  readonly object: "realtime.session"
  readonly id: string
  readonly model: string
  readonly output_modalities: ReadonlyArray<"audio" | "text">
  readonly instructions: string
  readonly tools: ReadonlyArray<FunctionTool>
  readonly tool_choice: ToolChoice
  readonly max_output_tokens: number | "inf"
  readonly tracing: unknown
  readonly truncation: unknown
  readonly prompt: unknown
  readonly include: unknown
  readonly expires_at: number
  readonly audio: {
    readonly input: {
      readonly format: AudioFormat
      readonly transcription: { readonly model: string; readonly [key: string]: unknown } | null
      readonly noise_reduction: { readonly type: string } | null
      readonly turn_detection: TurnDetection | null
    }
    readonly output: {
      readonly format: AudioFormat
      readonly voice: string | { readonly id: string }
      readonly speed: number
    }
  }
}

// --- the scripted model ----------------------------------------------------------------------

export interface MessageOutput {
  readonly type: "message"
  /** Text (text modality) or transcript (audio modality). A string is streamed word by word. */
  readonly text: string | ReadonlyArray<string>
  /** Audio length (audio modality). Default: 60 ms per character, at least 200 ms. */
  readonly audioMs?: number
  /** Audio per `response.output_audio.delta` (default 100 ms). */
  readonly chunkMs?: number
}

export interface FunctionCallOutput {
  readonly type: "function_call"
  readonly name: string
  /** Object arguments are JSON-encoded. */
  readonly arguments: string | Readonly<Record<string, unknown>>
  /** Default: a fresh `call_…` id. */
  readonly callId?: string
  /** Number of `response.function_call_arguments.delta` events (default 3). */
  readonly argumentChunks?: number
}

export type OutputPlan = MessageOutput | FunctionCallOutput

/** What the model does for one response. */
export interface ResponsePlan {
  readonly output?: ReadonlyArray<OutputPlan>
  /** Final status (default `"completed"`). `"incomplete"` marks the last item incomplete. */
  readonly status?: "completed" | "incomplete" | "failed"
  /** `status_details.reason` for `"incomplete"` (default `"max_output_tokens"`). */
  readonly reason?: "max_output_tokens" | "content_filter"
  /** `status_details.error` for `"failed"`, e.g. `{ code: "inference_rate_limit_exceeded" }`. */
  readonly failure?: { readonly type?: string; readonly code: string; readonly message?: string }
  /** Refuse the request with an `error` event instead of a response. */
  readonly error?: ErrorSpec
  /** Overrides of the computed `usage`. */
  readonly usage?: Readonly<Record<string, unknown>>
  readonly firstAudioMs?: number
  readonly deltaIntervalMs?: number
  /** Close the socket after this many events of this response (from `response.created`, 1-based). */
  readonly closeAfter?: {
    readonly events: number
    readonly code?: number
    readonly reason?: string
    readonly abrupt?: boolean
  }
}

export type ScriptTrigger = "response.create" | "server_vad" | "push"

/** What a script sees when the model must answer. */
export interface ScriptContext {
  readonly trigger: ScriptTrigger
  readonly connection: number
  /** Responses started on this connection before this one. */
  readonly responseNumber: number
  readonly session: SessionConfig
  /** The input context of this response: the conversation, or the custom `response.input`. */
  readonly items: ReadonlyArray<RealtimeItem>
  readonly conversation: ReadonlyArray<RealtimeItem>
  /** Effective values (per-response overrides applied). */
  readonly instructions: string
  readonly tools: ReadonlyArray<FunctionTool>
  readonly toolChoice: ToolChoice
  readonly outputModalities: ReadonlyArray<"audio" | "text">
  readonly conversationMode: "auto" | "none"
  readonly metadata: Readonly<Record<string, string>> | null
  /** The raw `response` object of `response.create` (undefined for automatic responses). */
  readonly request: Readonly<Record<string, unknown>> | undefined
  /** Text of the last user message (input_text, or the transcript of input audio). */
  readonly lastUserText: string | undefined
  readonly lastItem: RealtimeItem | undefined
}

/** A function of the server state, or a list of plans consumed in order across the server's life. */
export type Script =
  | ((ctx: ScriptContext) => ResponsePlan | Promise<ResponsePlan>)
  | ReadonlyArray<ResponsePlan>

// --- actions, options ------------------------------------------------------------------------

export type OpenAIAction =
  /** A server-initiated response (as if the server decided to answer); plan from the script if absent. */
  | { readonly type: "respond"; readonly plan?: ResponsePlan; readonly conversation?: "auto" | "none" }
  /**
   * The user says something (a tone of `durationMs` goes into the buffer): speech_started/stopped,
   * committed, the user item, input transcription (if configured, text = `transcript`), and the
   * automatic response when `turn_detection.create_response`. Speech events are sent even with
   * turn_detection null (it simulates detection); no response then.
   */
  | { readonly type: "userSpeaks"; readonly durationMs?: number; readonly transcript?: string }
  /** A standalone `error` event. */
  | { readonly type: "error"; readonly error: ErrorSpec; readonly eventId?: string | null }
  /** Any server event (an `event_id` is added when missing). */
  | { readonly type: "send"; readonly event: object }
  | { readonly type: "raw"; readonly data: string; readonly binary?: boolean }
  | { readonly type: "noise"; readonly kind: "unknown" | "invalid-json" | "not-object" | "missing-type" | "binary-garbage" }
  /** `error` session_expired then close 1000. */
  | { readonly type: "expire" }
  | { readonly type: "close"; readonly code?: number; readonly reason?: string }
  | { readonly type: "terminate" }

export interface TranscribeInput {
  readonly connection: number
  readonly itemId: string
  readonly audioMs: number
  /** The transcript passed to a `userSpeaks` action, if any. */
  readonly hint: string | undefined
}

export interface OpenAIRealtimeMockOptions extends CommonMockOptions<ClientEvent, ErrorSpec, OpenAIAction> {
  /** The scripted model (default: an echo: "You said: …" / "Tool result: …"). */
  readonly script?: Script
  /** Delay from `response.created` to the first content delta (audio, text or arguments). */
  readonly firstAudioMs?: number
  /** Delay between two streamed deltas (default 0: a setImmediate yield). */
  readonly deltaIntervalMs?: number
  /** Model name when the URL has no `model=` (default `gpt-realtime`). */
  readonly model?: string
  readonly defaultInstructions?: string
  /** Require this key (`Authorization: Bearer`, or the `openai-insecure-api-key.` subprotocol). */
  readonly apiKey?: string
  /** A bad key: HTTP 401 at the handshake (default) or an `invalid_api_key` error event then close. */
  readonly authFailure?: "http" | "event"
  /** Send `conversation.created` after `session.created` (unverified in GA; default false). */
  readonly sendConversationCreated?: boolean
  /** Where `rate_limits.updated` goes (default `"afterDone"`). */
  readonly rateLimits?: "none" | "afterCreated" | "afterDone"
  /** The two unverified orderings of docs/protocols.md section 5 (defaults: response.* first). */
  readonly order?: {
    readonly conversationItemAddedFirst?: boolean
    readonly conversationItemDoneFirst?: boolean
  }
  /** Input transcription (when `audio.input.transcription` is set). Default: "[audio Nms]". */
  readonly transcribe?: (input: TranscribeInput) => string | { readonly error: ErrorSpec }
  /** Delay of the input transcription events after the user item (default 0). */
  readonly transcriptionDelayMs?: number
  /**
   * Where the input transcription of a turn that the server answers by itself goes: before the
   * automatic response (default), right after its `response.created`, or after its `response.done`.
   * OpenAI runs transcription asynchronously with the response, so any of them can happen.
   * `transcriptionDelayMs` then counts from that event.
   */
  readonly transcriptOrder?: "beforeResponse" | "afterResponseCreated" | "afterResponseDone"
  /** Send `error` session_expired + close 1000 this long after connect (default: never). */
  readonly sessionExpiresAfterMs?: number
}
