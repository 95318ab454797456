/**
 * The `error` objects the mock sends. Codes and messages marked [doc] or [observed] come from
 * docs/protocols.md 1.7; those marked [mock] are the mock's own choice where docs/protocols.md names none.
 */
import type { ErrorSpec } from "./types.ts"

const invalid = (code: string | null, message: string, param: string | null = null): ErrorSpec => ({
  type: "invalid_request_error",
  code,
  message,
  param
})

export const Errors = {
  /** [doc] */
  missingType: () => invalid("invalid_event", "The 'type' field is missing."),
  /** [mock] */
  invalidJson: () => invalid("invalid_event", "Invalid event: the frame is not valid JSON."),
  /** [mock] */
  notObject: () => invalid("invalid_event", "Invalid event: expected a JSON object."),
  /** [mock] */
  binaryFrame: () => invalid("invalid_event", "Invalid event: binary frames are not supported."),
  /** [mock] */
  unknownEvent: (type: string) => invalid("invalid_event", `Invalid value: '${type}'. Unknown client event type.`, "type"),
  /** [observed] */
  missingParameter: (param: string) => invalid("missing_required_parameter", `Missing required parameter: '${param}'.`, param),
  /** [observed] */
  unknownParameter: (param: string) => invalid("unknown_parameter", `Unknown parameter: '${param}'.`, param),
  /** [observed] shape; the list of supported values is the mock's. */
  invalidValue: (param: string, value: unknown, supported?: ReadonlyArray<string>) =>
    invalid(
      "invalid_value",
      `Invalid value: '${typeof value === "string" ? value : JSON.stringify(value)}'.` +
        (supported ? ` Supported values are: ${supported.map((s) => `'${s}'`).join(", ")}.` : ""),
      param
    ),
  /** [mock] message for a constraint the docs state without an error string. */
  constraint: (param: string, message: string) => invalid("invalid_value", message, param),
  /** [observed] */
  cannotUpdateVoice: () =>
    invalid("cannot_update_voice", "Cannot update a conversation's voice if assistant audio is present.", "session.audio.output.voice"),
  /** [observed] */
  activeResponse: (responseId: string) =>
    invalid(
      "conversation_already_has_active_response",
      `Conversation already has an active response in progress: ${responseId}. Wait until the response is finished before creating a new one.`
    ),
  /** [observed] */
  cancelNotActive: () => invalid("response_cancel_not_active", "Cancellation failed: no active response found"),
  /** [observed] */
  commitEmpty: (ms: number) =>
    invalid(
      "input_audio_buffer_commit_empty",
      `Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has ${ms.toFixed(2)}ms of audio.`
    ),
  /** [observed] message; code [mock] except for truncate ([observed]). */
  itemNotFound: (code: string, itemId: string, param = "item_id") =>
    invalid(code, `Item with item_id not found: ${itemId}`, param),
  /** [observed] */
  audioTooShort: (durationMs: number, endMs: number) =>
    invalid("invalid_value", `Audio content of ${durationMs}ms is already shorter than ${endMs}ms`, "audio_end_ms"),
  /** [observed] */
  sessionExpired: () => invalid("session_expired", "Your session hit the maximum duration of 60 minutes."),
  /** [client] code */
  invalidApiKey: () => invalid("invalid_api_key", "Incorrect API key provided."),
  /** [mock] */
  audioTooLarge: () => invalid("invalid_value", "Audio payload exceeds the 15 MiB limit of input_audio_buffer.append.", "audio")
} as const
