/**
 * The worker's own failures, as a reason and one line a person can act on: its token could not
 * be signed, or its connection to the server's dispatch was lost (the reconnect loop logs these
 * and tries again; they never end the worker).
 */
import { Schema } from "effect"

/**
 * Why the LiveKit worker failed: its token could not be signed, the connection could not be
 * opened, or an open one was lost.
 *
 * @since 0.1.0
 * @category models
 */
/**
 * Why the worker failed: its token (`Token`), opening a connection (`Connect`), or an open
 * connection ending (`Lost`).
 *
 * @since 0.1.0
 * @category errors
 */
export const WorkerErrorReason = Schema.Literals([
  /** The worker's token could not be signed (the API key or secret is unusable). */
  "Token",
  /** The connection could not be opened (refused, a bad URL, a token the server refused). */
  "Connect",
  /** An open connection ended: closed by the server, reset, or silent past the liveness timeout. */
  "Lost"
])
export type WorkerErrorReason = typeof WorkerErrorReason.Type

/**
 * A failure of the LiveKit worker itself (its token or its connection to the dispatch), with a
 * reason and one line a person can act on. The reconnect loop logs these and tries again; they
 * never end the worker.
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkerError extends Schema.TaggedError<WorkerError>()("WorkerError", {
  reason: WorkerErrorReason,
  message: Schema.String,
  /** The connection had registered before it was lost: the reconnect backoff starts over. */
  registered: Schema.optional(Schema.Boolean)
}) {}
