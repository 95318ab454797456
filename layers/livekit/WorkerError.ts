/**
 * The worker's own failures, as a reason and one line a person can act on: its token could not
 * be signed, or its connection to the server's dispatch was lost (the reconnect loop logs these
 * and tries again; they never end the worker).
 */
import { Schema } from "effect"

export const WorkerErrorReason = Schema.Literals([
  /** The worker's token could not be signed (the API key or secret is unusable). */
  "Token",
  /** The connection could not be opened (refused, a bad URL, a token the server refused). */
  "Connect",
  /** An open connection ended: closed by the server, reset, or silent past the liveness timeout. */
  "Lost"
])
export type WorkerErrorReason = typeof WorkerErrorReason.Type

export class WorkerError extends Schema.TaggedError<WorkerError>()("WorkerError", {
  reason: WorkerErrorReason,
  message: Schema.String,
  /** The connection had registered before it was lost: the reconnect backoff starts over. */
  registered: Schema.optional(Schema.Boolean)
}) {}
