/**
 * What a transport can do to the call itself, apart from its audio: hang up, and send keypad
 * tones (DTMF) to the other end (an IVR's menu). The transport that carries a session provides
 * it: `/ws` (hang up: the socket closes with 1000 and the reason), the Twilio bridge (hang up and
 * digits through Twilio's REST API, or closing the stream), a LiveKit room (leave or delete the
 * room; `publishDtmf` on the local participant). A transport that cannot send tones fails with
 * reason `unsupported`, saying which transport it is.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Effect, Schema } from "effect"

/**
 * Why a call-control request failed: `unsupported` (this transport cannot do it), `invalid_digits`
 * (not `0-9`, `*`, `#`, or `w` for a half-second pause), `no_call` (no call to act on: it ended,
 * or none is attached), `failed` (the provider refused or could not be reached).
 *
 * @since 0.1.0
 * @category errors
 */
export class CallControlError extends Schema.TaggedError<CallControlError>()("CallControlError", {
  reason: Schema.Literals(["unsupported", "invalid_digits", "no_call", "failed"]),
  message: Schema.String
}) {}

/**
 * Hang up the call (`reason` is said to the transport where it has a place for one), and send
 * DTMF digits on it.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallControlService {
  /** Which transport this is, for messages ("/ws", "twilio", "livekit"). */
  readonly transport: string
  readonly hangUp: (reason: string) => Effect.Effect<void, CallControlError>
  readonly sendDtmf: (digits: string) => Effect.Effect<void, CallControlError>
}

/**
 * The call a session is on, provided by its transport.
 *
 * @since 0.1.0
 * @category services
 */
export class CallControl extends Context.Service<CallControl, CallControlService>()("baton/CallControl") {}

const DIGITS = /^[0-9*#wW]+$/

/**
 * The digits as given when they are ones a phone can send (`0-9`, `*`, `#`; `w` pauses half a
 * second), else an `invalid_digits` error naming them.
 *
 * @since 0.1.0
 * @category validation
 */
export const validDigits = (digits: string): Effect.Effect<string, CallControlError> =>
  DIGITS.test(digits)
    ? Effect.succeed(digits)
    : Effect.fail(new CallControlError({ reason: "invalid_digits", message: `"${digits.slice(0, 40)}" is not DTMF: use 0-9, * and #, and w for a half-second pause` }))

/**
 * A transport with no keypad: `sendDtmf` fails with `unsupported`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const noDtmf = (transport: string) => (_digits: string): Effect.Effect<void, CallControlError> =>
  Effect.fail(new CallControlError({ reason: "unsupported", message: `${transport} cannot send DTMF tones: only phone transports (Twilio, LiveKit SIP) can` }))
