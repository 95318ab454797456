/**
 * Transfers on a LiveKit SIP call (issue 35), through livekit-server-sdk's `SipClient` (the
 * `livekit.SIP` Twirp service):
 *
 * - Cold: `TransferSIPParticipant` (a SIP REFER of the caller's participant to `to`, a `tel:` or
 *   `sip:` URI), with the ring timeout and a dial tone for the caller. It returns once the
 *   transfer is done (Answered: the caller has left the room) or fails with a SIP status.
 * - Warm: a second SIP participant, the person, dialed into the caller's room
 *   (`CreateSIPParticipant` with `wait_until_answered`, the ring timeout, a dial tone while it
 *   rings); the briefing goes as its metadata. Answered once the person picks up.
 *
 * A failure's SIP status (`SipCallError.sipStatusCode`, from the Twirp error's
 * `meta.sip_status_code`) is the outcome: 486/600 Busy, 480/408 NoAnswer, 603/607/608 Declined,
 * anything else (or no SIP status: a network or auth error) Failed with the message.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Duration, Effect, Layer, Redacted } from "effect"
import { SipClient } from "livekit-server-sdk"
import * as Transfer from "../../src/Transfer.ts"

/**
 * The LiveKit server's API and the call: the room, the caller's participant identity, and the
 * outbound trunk a warm transfer dials through.
 *
 * @since 0.1.0
 * @category models
 */
export interface SipTransferOptions {
  /** `https://...` (or a fake's `http://127.0.0.1:port`). */
  readonly host: string
  readonly apiKey: string
  readonly apiSecret: Redacted.Redacted<string>
  readonly roomName: string
  /** The caller's SIP participant. */
  readonly participantIdentity: string
  /** The outbound trunk (`ST_...`) the person is dialed through, for warm transfers. */
  readonly outboundTrunkId?: string
  /** Play a dial tone while the person's phone rings (default true). */
  readonly playDialtone?: boolean
}

/**
 * The outcome a SIP status code stands for.
 *
 * @since 0.1.0
 * @category utils
 */
export const outcomeOfSipStatus = (code: number, reason: string): Transfer.TransferOutcome => {
  const text = `sip status ${code}${reason ? `: ${reason}` : ""}`
  if (code >= 200 && code < 300) return Transfer.outcome("Answered", text)
  if (code === 486 || code === 600) return Transfer.outcome("Busy", text)
  if (code === 480 || code === 408) return Transfer.outcome("NoAnswer", text)
  if (code === 603 || code === 607 || code === 608) return Transfer.outcome("Declined", text)
  return Transfer.outcome("Failed", text)
}

const outcomeOfError = (error: unknown): Transfer.TransferOutcome => {
  const e = error as { sipStatusCode?: number; sipStatus?: string; message?: string }
  return typeof e.sipStatusCode === "number" && Number.isFinite(e.sipStatusCode)
    ? outcomeOfSipStatus(e.sipStatusCode, e.sipStatus ?? "")
    : Transfer.outcome("Failed", e.message ?? String(error))
}

/**
 * A `Transferer` for one LiveKit SIP call (see the module's comment).
 *
 * @since 0.1.0
 * @category constructors
 */
export const transferer = (options: SipTransferOptions): Transfer.TransfererService => {
  const client = new SipClient(options.host, options.apiKey, Redacted.value(options.apiSecret))
  const playDialtone = options.playDialtone ?? true
  return {
    transport: "livekit-sip",
    transfer: (request) => {
      const ringingTimeout = Math.max(1, Math.round(Duration.toSeconds(request.ringTimeout)))
      const call: () => Promise<Transfer.TransferOutcome> = request._tag === "Cold"
        ? () =>
          client.transferSipParticipant(options.roomName, options.participantIdentity, request.to, { ringingTimeout, playDialtone })
            .then(() => Transfer.outcome("Answered", `transferred to ${request.to}`))
        : () =>
          options.outboundTrunkId === undefined
            ? Promise.resolve(Transfer.outcome("Failed", "a warm transfer on LiveKit SIP needs an outbound trunk (outboundTrunkId)"))
            : client.createSipParticipant(options.outboundTrunkId, request.to, options.roomName, {
              participantIdentity: `transfer-${request.to.replace(/[^0-9A-Za-z]/g, "")}`,
              participantMetadata: JSON.stringify({ briefing: request.briefing }),
              waitUntilAnswered: true,
              ringingTimeout,
              playDialtone
            }).then((info) => Transfer.outcome("Answered", `${info.participantIdentity} answered`))
      return Effect.tryPromise({ try: call, catch: outcomeOfError }).pipe(
        Effect.catch((outcome) => Effect.succeed(outcome))
      )
    }
  }
}

/**
 * The `Transferer` layer of a LiveKit SIP call.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: SipTransferOptions): Layer.Layer<Transfer.Transferer> =>
  Layer.sync(Transfer.Transferer, () => transferer(options))
