/**
 * `RealtimeModel`: a speech-to-speech model reached over one long-lived connection (OpenAI
 * Realtime, Gemini Live). Providers are Layers; baton's core leases their connections to
 * actors (see src/internal/realtime/Pool.ts and Lease.ts) and moves them between actors on a handoff when the
 * capabilities allow it (docs/rules.md, rule 7).
 *
 * Requests are pipelined: every operation returns as soon as its frame is written. Operations
 * the server acknowledges return an `Ack` to await separately (with the provider's timeout); an
 * acknowledgement that arrives after that timeout, or after the connection was closed, is
 * dropped with a debug log, never a crash (rule 8). A provider whose protocol acknowledges
 * nothing (Gemini Live, but for `setup`) resolves an `Ack` once its frame is written.
 *
 * Items the server creates (the model's messages and function calls, transcripts of the user's
 * audio) are reported with their item ids, and baton records them under those ids, so a later
 * `updateChatContext` finds them held. Function call outputs are matched by call id.
 * Per-response instructions come on top of the session's instructions.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, type Duration, type Effect, Schema, type Scope, type Stream } from "effect"
import type { ChatContext } from "../src/ChatContext.ts"

/**
 * What may change on an open connection, and what the model does by itself.
 *
 * @since 0.1.0
 * @category models
 */
export interface RealtimeCapabilities {
  /** Instructions can be replaced mid-session. */
  readonly mutableInstructions: boolean
  /** Tools can be replaced mid-session. */
  readonly mutableTools: boolean
  /** Items of the conversation can be added and removed mid-session. */
  readonly mutableChatContext: boolean
  /** A response can be created with its own instructions and tool choice. */
  readonly perResponseToolChoice: boolean
  /** Tool calls are executed by baton, which sends their outputs (always true here). */
  readonly manualFunctionCalls: boolean
  /** The server answers a tool output by itself, without a response request. */
  readonly autoToolReply: boolean
  readonly audioOutput: boolean
  /** The server transcribes the user's audio. */
  readonly userTranscription: boolean
  /** The server detects the user's turns. */
  readonly serverTurnDetection: boolean
  /** An assistant item can be truncated at the point its audio was played. */
  readonly messageTruncation: boolean
}

/**
 * A tool as a realtime model sees it: name, description and JSON Schema of its parameters.
 *
 * @since 0.1.0
 * @category models
 */
export interface RealtimeTool {
  readonly name: string
  readonly description: string
  /** JSON Schema of the parameters (an object schema). */
  readonly parameters: Record<string, unknown>
}

/**
 * Which tools a realtime response may call: any, none, at least one, or one named.
 *
 * @since 0.1.0
 * @category models
 */
export type RealtimeToolChoice = "auto" | "none" | "required" | { readonly tool: string }

/**
 * What a realtime connection is opened with: instructions, tools, tool choice and the conversation
 * to seed it with.
 *
 * @since 0.1.0
 * @category models
 */
export interface RealtimeSessionConfig {
  readonly instructions: string
  readonly tools: ReadonlyArray<RealtimeTool>
  readonly toolChoice?: RealtimeToolChoice | undefined
  /** The conversation to seed the connection with. */
  readonly chatContext: ChatContext
  /**
   * Return as soon as the configuration is sent, without waiting for the server to accept it
   * (a first response can then follow at once); its acknowledgement is the connection's
   * `configured`. A provider that cannot pipeline its setup ignores this.
   */
  readonly pipelined?: boolean | undefined
}

/**
 * Tokens a realtime response used.
 *
 * @since 0.1.0
 * @category models
 */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
}

/**
 * The events of a realtime connection, in order: responses starting and ending, text, audio and
 * transcript deltas, function calls, the user's speech and transcripts, and errors.
 *
 * @since 0.1.0
 * @category models
 */
export type RealtimeEvent =
  | { readonly _tag: "ResponseStarted"; readonly responseId: string }
  | { readonly _tag: "TextDelta"; readonly responseId: string; readonly itemId: string; readonly delta: string }
  /** PCM16 little-endian mono audio of the model's answer. */
  | { readonly _tag: "AudioDelta"; readonly responseId: string; readonly itemId: string; readonly pcm: Uint8Array; readonly sampleRate: number }
  /** The transcript of the model's own audio. */
  | { readonly _tag: "TranscriptDelta"; readonly responseId: string; readonly itemId: string; readonly delta: string }
  | {
    readonly _tag: "FunctionCall"
    readonly responseId: string
    readonly itemId: string
    readonly callId: string
    readonly name: string
    readonly arguments: string
  }
  | {
    readonly _tag: "ResponseDone"
    readonly responseId: string
    readonly status: "completed" | "cancelled" | "incomplete" | "failed"
    readonly usage?: Usage | undefined
    readonly error?: string | undefined
    /** Why a `failed` response failed, as the provider put it (OpenAI's `server_error`, ...). */
    readonly errorCode?: string | undefined
  }
  /** Server turn detection: the user started or stopped speaking. */
  | { readonly _tag: "SpeechStarted"; readonly audioStartMs?: number | undefined }
  | { readonly _tag: "SpeechStopped"; readonly audioEndMs?: number | undefined }
  /**
   * A transcript of the user's audio (partial or final). A final one with `failed`: the server
   * could not transcribe the turn (OpenAI's `input_audio_transcription.failed`); its words are
   * unknown and `text` is empty.
   */
  | {
    readonly _tag: "InputTranscript"
    readonly itemId: string
    readonly text: string
    readonly final: boolean
    /**
     * The items that follow the user's item in the server's conversation when its final
     * transcript comes, in order: a transcript that comes after the answer to its turn (OpenAI
     * transcribes on its own time) names that answer, and the words are recorded before it.
     */
    readonly followedBy?: ReadonlyArray<string> | undefined
    readonly failed?: { readonly message: string; readonly code?: string | undefined } | undefined
  }
  /** The server cut the model's answer (the user spoke over it). */
  | { readonly _tag: "Interrupted"; readonly responseId?: string | undefined }
  /** The server will close the connection soon. */
  | { readonly _tag: "GoAway"; readonly timeLeftMs: number }
  /** The provider reconnected (session expiry, goAway) and re-seeded the context. */
  | { readonly _tag: "Reconnected"; readonly reason: string }
  /** An error event of the server; `fatal` when the connection is unusable afterwards. */
  | { readonly _tag: "Error"; readonly message: string; readonly code?: string | undefined; readonly fatal: boolean }

/**
 * What went wrong with a realtime model: the connection (`connect`, `closed`), a request the
 * server refused (`rejected`) or never answered (`timeout`), a response the server failed
 * (`failed`: `code` says why, as the provider put it, e.g. OpenAI's `server_error`), what the
 * model cannot do (`unsupported`), a lease that moved on (`revoked`), or a broken exchange
 * (`protocol`).
 *
 * @since 0.1.0
 * @category errors
 */
export class RealtimeError extends Schema.TaggedError<RealtimeError>()("RealtimeError", {
  reason: Schema.Literals(["connect", "closed", "rejected", "timeout", "protocol", "unsupported", "revoked", "failed"]),
  message: Schema.String,
  code: Schema.optional(Schema.String)
}) {}

/**
 * How long a requested response may take to start (`response.created`, or the provider's first
 * sign of it) before the reply fails with a `timeout` (default 10 s). A server that never
 * answers must not hold a turn for ever.
 *
 * @since 0.1.0
 * @category services
 */
export const RealtimeResponseTimeout = Context.Reference<Duration.Input>("baton/RealtimeResponseTimeout", {
  defaultValue: () => "10 seconds"
})

/**
 * A server acknowledgement to wait for, or not (pipelining).
 *
 * @since 0.1.0
 * @category models
 */
export interface Ack {
  /** Succeeds when the server accepted the request; fails on an error answer or the timeout. */
  readonly await: Effect.Effect<void, RealtimeError>
}

/**
 * An open realtime connection: its events, and the operations baton uses on it (update the
 * session, add items, send audio, request, cancel or truncate a response).
 *
 * @since 0.1.0
 * @category models
 */
export interface RealtimeConnection {
  readonly id: string
  readonly provider: string
  readonly model: string
  readonly capabilities: RealtimeCapabilities
  /** The server's events, in order, for one consumer. Ends when the connection closes. */
  readonly events: Stream.Stream<RealtimeEvent, RealtimeError>
  /**
   * The acknowledgement of the configuration `connect` sent, when `connect` did not wait for it
   * (`pipelined`): an error answer means the connection does not hold what was asked.
   */
  readonly configured?: Ack | undefined
  /** Replaces instructions, tools or tool choice (only what is given). */
  readonly updateSession: (changes: {
    readonly instructions?: string
    readonly tools?: ReadonlyArray<RealtimeTool>
    readonly toolChoice?: RealtimeToolChoice
  }) => Effect.Effect<Ack, RealtimeError>
  /**
   * Makes the server's conversation equal to `context` (messages, function calls and outputs):
   * items the server holds that `context` lacks are deleted, missing ones created in order.
   */
  readonly updateChatContext: (context: ChatContext) => Effect.Effect<Ack, RealtimeError>
  /** Sends a tool's output; the model answers only when `createResponse` asks it to. */
  readonly sendToolOutput: (output: {
    readonly callId: string
    readonly name: string
    readonly output: string
    readonly isError: boolean
  }) => Effect.Effect<Ack, RealtimeError>
  readonly createResponse: (options?: {
    readonly instructions?: string
    readonly toolChoice?: RealtimeToolChoice
  }) => Effect.Effect<void, RealtimeError>
  /**
   * Cancels the response `responseId` (when not given: the one in progress, where the provider
   * has no ids). A cancel that reaches the server after that response ended does nothing: it
   * can never cut the next response, such as the answer to the turn that interrupted it.
   */
  readonly cancelResponse: (responseId?: string) => Effect.Effect<void, RealtimeError>
  /** Cuts an assistant item at the audio actually played. */
  readonly truncate: (itemId: string, audioEndMs: number) => Effect.Effect<void, RealtimeError>
  readonly pushAudio: (pcm: Uint8Array) => Effect.Effect<void, RealtimeError>
  readonly commitAudio: Effect.Effect<void, RealtimeError>
  readonly clearAudio: Effect.Effect<void, RealtimeError>
}

/**
 * A speech-to-speech model (OpenAI Realtime, Gemini Live): its provider, model and capabilities,
 * and `connect`, which opens a configured connection in a Scope. Provide one of its layers to run
 * realtime agents.
 *
 * @since 0.1.0
 * @category services
 */
export class RealtimeModel extends Context.Service<RealtimeModel, {
  readonly provider: string
  /** Connections of the same provider and model are candidates for reuse on a handoff. */
  readonly model: string
  readonly capabilities: RealtimeCapabilities
  /** Opens a connection configured with `config`; it closes with the Scope. */
  readonly connect: (config: RealtimeSessionConfig) => Effect.Effect<RealtimeConnection, RealtimeError, Scope.Scope>
}>()("baton/RealtimeModel") {}
