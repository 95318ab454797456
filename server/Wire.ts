/**
 * The WebSocket protocol of `/ws`, one session per connection.
 *
 * Client → server: JSON text frames `{"type":"user_text","text":...}`, `{"type":"interrupt"}`,
 * `{"type":"audio_format","sampleRate":16000}`, `{"type":"timeline"}` (answered with the session's
 * handoff timeline as SVG), and binary frames of PCM16 mono audio at the
 * declared rate (16 kHz until declared). `{"type":"audio_end"}` says the audio stopped (the page
 * sends it when push-to-talk is released): what follows counts as silence, so the user's speech
 * in progress ends and their turn is answered. A line that sends no audio for the endpointing
 * delay during speech (half a second with a realtime model) counts as silence too.
 * `{"type":"approve","callId":...}` and `{"type":"reject","callId":...,"reason":...}` answer a
 * tool call waiting for approval (the `tool_approval_requested` event); an id that waits for
 * nothing is an input error.
 *
 * Server → client: every session event as one JSON frame with its `type` (`agent_handoff`,
 * `conversation_item_added`, `speech_created`, `error`, `close`, ...), plus `ready` (first),
 * `agent_text` (a reply's words as they stream), `audio_format` (before audio at a new rate),
 * binary PCM16 frames of the agent's audio, and `clear` when that audio is cut (barge-in): the
 * client drops what it has buffered.
 *
 * Resume: `ready` carries the `sessionId` and a `resumeToken`; `resume_token` frames bring a fresh
 * one while the client is connected (each good for twice `BATON_RESUME_S`). A client that lost
 * its socket reconnects to `/ws?resume=<token>` within `BATON_RESUME_S` and gets `ready` with
 * `resumed: true` and the same `sessionId`, then `history` (the conversation so far, what the
 * agents said meanwhile included; items have ids, so a client merges). A refused token closes the
 * socket at once: 4400 malformed, 4401 not signed here or expired, 4404 the session is gone;
 * a client whose session another connection resumed is closed with 4409. On a deploy with a
 * durable store the server sends `reconnect` (with a token) and closes with 1012: the client
 * resumes the same way, on another node. A client that is done closes with 1000: its session
 * ends at once.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Schema } from "effect"
import type { ChatItem } from "../src/ChatContext.ts"

/**
 * The messages a client sends as JSON text frames: user text, an interrupt, its audio format, a
 * request for the timeline, and the end of its audio.
 *
 * @since 0.1.0
 * @category models
 */
export const ClientMessage = Schema.Union([
  Schema.Struct({ type: Schema.Literal("user_text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("interrupt") }),
  Schema.Struct({ type: Schema.Literal("audio_format"), sampleRate: Schema.Int }),
  Schema.Struct({ type: Schema.Literal("timeline") }),
  Schema.Struct({ type: Schema.Literal("audio_end") }),
  // The operator answers a tool call waiting for approval (`tool_approval_requested`).
  Schema.Struct({ type: Schema.Literal("approve"), callId: Schema.String }),
  Schema.Struct({ type: Schema.Literal("reject"), callId: Schema.String, reason: Schema.optional(Schema.String) })
])
export type ClientMessage = typeof ClientMessage.Type

const decodeMessage = Schema.decodeUnknownResult(ClientMessage)
const KNOWN: ReadonlySet<string> = new Set(["user_text", "interrupt", "audio_format", "audio_end", "timeline", "approve", "reject"])

/**
 * A text frame as a client message, or a one-line reason it is not one.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseClientFrame = (text: string): ClientMessage | string => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return "not JSON"
  }
  const type = typeof json === "object" && json !== null && "type" in json ? (json as { type: unknown }).type : undefined
  if (typeof type !== "string") return "a message needs a string \"type\""
  if (!KNOWN.has(type)) return `unknown message type "${type}" (expected user_text, interrupt, audio_format, audio_end, timeline, approve or reject)`
  const result = decodeMessage(json)
  if (result._tag === "Failure") return `bad ${type} message: ${String(result.failure).split("\n")[0]}`
  return result.success
}

/**
 * Frames the server sends besides the session's own events.
 *
 * @since 0.1.0
 * @category models
 */
export type ServerFrame =
  | {
    readonly type: "ready"
    readonly sessionId: string
    readonly resumeToken: string
    /** When `resumeToken` expires (seconds since the epoch). */
    readonly resumeExpiresAt: number
    /** Present on a resume: the session went on while the client was away. */
    readonly resumed?: true
    readonly agent: string | undefined
    readonly audio: "realtime" | "pipeline" | "none"
    readonly inputSampleRate: number
  }
  /** After a resumed `ready`: the whole conversation so far, in order. */
  | { readonly type: "history"; readonly items: ReadonlyArray<ChatItem> }
  /** A fresh resume token (the last one received is the one to resume with). */
  | { readonly type: "resume_token"; readonly resumeToken: string; readonly expiresAt: number }
  /** The service is restarting: resume with this token (on another node); the socket closes with 1012. */
  | { readonly type: "reconnect"; readonly resumeToken: string; readonly expiresAt: number }
  | { readonly type: "agent_text"; readonly agent: string; readonly speechId: string; readonly delta: string }
  | { readonly type: "audio_format"; readonly sampleRate: number }
  | { readonly type: "clear"; readonly speechId: string; readonly agent: string }
  | { readonly type: "error"; readonly source: "input" | "transport"; readonly message: string; readonly recoverable: boolean }
  | { readonly type: "close"; readonly reason: string }
  /** The session so far as a handoff timeline picture (SVG), asked for with `{"type":"timeline"}`. */
  | { readonly type: "timeline"; readonly svg: string }

/**
 * Events carry chat items and errors: plain data, except what JSON cannot say (bigints, cycles).
 *
 * @since 0.1.0
 * @category utils
 */
export const encode = (frame: unknown): string =>
  JSON.stringify(frame, (_key, value) => (typeof value === "bigint" ? value.toString() : value))
