/**
 * LiveKit's agent worker protocol (`/agent`, protobuf `WorkerMessage` up, `ServerMessage` down,
 * from `@livekit/protocol`): the messages a worker sends, built in one place, and the server's,
 * decoded without throwing.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import {
  AvailabilityResponse,
  JobStatus,
  JobType,
  ParticipantPermission,
  RegisterWorkerRequest,
  ServerMessage,
  UpdateJobStatus,
  UpdateWorkerStatus,
  WorkerMessage,
  WorkerPing,
  WorkerStatus
} from "@livekit/protocol"
import { AccessToken } from "livekit-server-sdk"
import { Effect, Redacted } from "effect"
import { WorkerError } from "./WorkerError.ts"

/**
 * The protocol's messages and statuses as `@livekit/protocol` defines them (`WorkerMessage` up,
 * `ServerMessage` down).
 *
 * @since 0.1.0
 * @category models
 */
export { JobStatus, ServerMessage, WorkerMessage, WorkerStatus }

/**
 * The version the worker registers with.
 *
 * @since 0.1.0
 * @category constants
 */
export const VERSION = "baton-0.1.0"

/**
 * The worker's own token: the `agent` grant, signed with the API key and secret.
 *
 * @since 0.1.0
 * @category constructors
 */
export const workerToken = (apiKey: string, apiSecret: Redacted.Redacted<string>): Effect.Effect<Redacted.Redacted<string>, WorkerError> =>
  Effect.tryPromise({
    try: async () => {
      const token = new AccessToken(apiKey, Redacted.value(apiSecret), { identity: `baton-worker-${process.pid}`, ttl: "10m" })
      token.addGrant({ agent: true })
      return Redacted.make(await token.toJwt())
    },
    // the message of livekit-server-sdk's error never holds the secret itself
    catch: (e) =>
      new WorkerError({
        reason: "Token",
        message: `cannot sign the worker's token: ${(e as Error).message}; check LIVEKIT_API_KEY and LIVEKIT_API_SECRET (the key and secret of the LiveKit project)`
      })
  })

/**
 * `ws://host/agent` from `ws://host`, `wss://host/`, `http://host` or `https://host`.
 *
 * @since 0.1.0
 * @category utils
 */
export const agentUrl = (url: string): string => {
  const base = url.replace(/^http(s?):\/\//, "ws$1://").replace(/\/+$/, "")
  return `${base}/agent`
}

const message = (value: WorkerMessage["message"]) => new WorkerMessage({ message: value }).toBinary()

/**
 * The message that registers a room worker under `agentName` (empty for automatic dispatch).
 *
 * @since 0.1.0
 * @category constructors
 */
export const register = (agentName: string) =>
  message({
    case: "register",
    value: new RegisterWorkerRequest({
      type: JobType.JT_ROOM,
      agentName,
      version: VERSION,
      allowedPermissions: new ParticipantPermission({ canPublish: true, canSubscribe: true, canPublishData: true, canUpdateMetadata: true })
    })
  })

/**
 * The answer to a job offer: whether the worker takes job `jobId`, and as which participant.
 *
 * @since 0.1.0
 * @category constructors
 */
export const availability = (jobId: string, available: boolean, agentName: string) =>
  message({
    case: "availability",
    value: new AvailabilityResponse({
      jobId,
      available,
      participantIdentity: available ? `agent-${jobId}` : "",
      participantName: available ? agentName || "baton agent" : ""
    })
  })

/**
 * The worker's status update: full or available, its load and its job count.
 *
 * @since 0.1.0
 * @category constructors
 */
export const workerStatus = (full: boolean, load: number, jobCount: number) =>
  message({
    case: "updateWorker",
    value: new UpdateWorkerStatus({ status: full ? WorkerStatus.WS_FULL : WorkerStatus.WS_AVAILABLE, load, jobCount })
  })

/**
 * A job's status update (running, success, failed), with an error text on failure.
 *
 * @since 0.1.0
 * @category constructors
 */
export const jobStatus = (jobId: string, status: JobStatus, error = "") =>
  message({ case: "updateJob", value: new UpdateJobStatus({ jobId, status, error }) })

/**
 * A ping with the time `now`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ping = (now: number) => message({ case: "ping", value: new WorkerPing({ timestamp: BigInt(now) }) })

/**
 * A server frame, or what is wrong with it.
 *
 * @since 0.1.0
 * @category utils
 */
export const decode = (bytes: Uint8Array): ServerMessage | string => {
  try {
    const decoded = ServerMessage.fromBinary(bytes)
    return decoded.message.case === undefined ? "a server message with no known content" : decoded
  } catch (e) {
    return `a malformed server message (${(e as Error).message})`
  }
}
