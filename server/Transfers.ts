/**
 * Which `Transferer` each call of the service gets (issue 35): a `/twilio` call transfers through
 * Twilio's REST API (TwilioTransfer.ts) with the service's Twilio settings, a `/ws` call to an
 * operator on the desk (OperatorTransfer.ts), or to the app's own transferer when it gives one.
 * What cannot transfer says so: the outcome is `Failed` with the setting to configure, never a
 * hang or a defect.
 *
 * Twilio's callbacks come to `POST /twilio/transfer/{id}/{kind}` (Server.ts), checked against
 * the auth token's signature over the public URL Twilio was given: `BATON_PUBLIC_URL`, or the
 * origin of `BATON_TWILIO_STREAM_URL` (`wss://host/twilio` gives `https://host`). With a durable
 * store every node answers them: a transfer is recorded there (TransferRecords.ts), so its
 * outcome reaches the node holding it wherever the load balancer sent Twilio's post.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Clock, Deferred, Effect, Option, type Redacted } from "effect"
import type { SessionStoreService } from "../services/SessionStore.ts"
import * as Transfer from "../src/Transfer.ts"
import type { ServerOptions } from "./Config.ts"
import * as OperatorTransfer from "./OperatorTransfer.ts"
import * as Token from "./Token.ts"
import * as TransferRecords from "./TransferRecords.ts"
import * as TwilioTransfer from "./TwilioTransfer.ts"
import type { TwilioApi } from "./TwilioCallControl.ts"

/**
 * What a `/twilio` call needs to transfer: the REST API, where the caller's stream comes back,
 * this service's public base URL for the callbacks, and the caller ID of a warm transfer's leg.
 *
 * @since 0.1.0
 * @category models
 */
export interface TwilioTransfers {
  readonly api: TwilioApi
  readonly callbackUrl: string
  /** `BATON_TWILIO_FROM`: warm transfers call the person from it. */
  readonly from: Option.Option<string>
  readonly callbacks: TwilioTransfer.Callbacks
}

/**
 * The service's transfers: the operator desk's line, the `/ws` calls' transferer, and Twilio's
 * settings (or the sentence saying which are missing).
 *
 * @since 0.1.0
 * @category models
 */
export interface ServiceTransfers {
  readonly operators: OperatorTransfer.OperatorLine
  /** A `/ws` call's transferer: the app's (`ServeOptions.transferer`), else the operator desk. */
  readonly ws: Transfer.TransfererService
  readonly twilio: TwilioTransfers | string
}

/**
 * A transferer that cannot transfer, and says why (the outcome's reason names what to configure).
 *
 * @since 0.1.0
 * @category constructors
 */
export const unavailable = (transport: string, reason: string): Transfer.TransfererService => ({
  transport,
  transfer: () => Effect.succeed(Transfer.outcome("Failed", reason))
})

/** `BATON_PUBLIC_URL`, else the `https://` origin of the stream's `wss://` URL. */
const publicBase = (options: Pick<ServerOptions, "publicUrl">, streamUrl: string): string => {
  const given = Option.flatten(Option.fromNullishOr(options.publicUrl))
  if (Option.isSome(given)) return given.value.replace(/\/+$/, "")
  const url = new URL(streamUrl)
  return `${url.protocol === "ws:" ? "http:" : "https:"}//${url.host}`
}

/**
 * A fleet's shared state for transfers: the durable store, this node's name in it, and the secret
 * that signs the resume tokens (`BATON_TOKEN`, the same on every node).
 *
 * @since 0.1.0
 * @category models
 */
export interface SharedStore {
  readonly store: SessionStoreService
  readonly owner: string
  readonly secret: Redacted.Redacted<string>
}

const escapeXml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/**
 * Twilio's transfer settings from the service's options, or what is missing; with `shared`, the
 * callbacks are answered from the store's records on any node.
 *
 * @since 0.1.0
 * @category constructors
 */
export const twilioFrom = (options: ServerOptions, shared?: SharedStore | undefined): TwilioTransfers | string => {
  const api = Option.flatten(Option.fromNullishOr(options.twilioApi))
  if (Option.isNone(api)) return "transfers on /twilio use Twilio's REST API: set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN"
  // Without a stream to come back on, a transfer that is not answered would hang the caller up.
  const streamUrl = api.value.streamUrl
  if (Option.isNone(streamUrl)) {
    return "transfers on /twilio give the caller back to the agent on a new stream: set BATON_TWILIO_STREAM_URL (this service's wss://.../twilio)"
  }
  const stream = streamUrl.value
  // The caller's way back to its agent, from any node: a new stream carrying a fresh resume token.
  const backTo = (sessionId: string) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      const token = Token.mintResume(shared!.secret, sessionId, options.resumeSeconds * 2, now).token
      return `<Response><Connect><Stream url="${escapeXml(stream)}"><Parameter name="resumeToken" value="${escapeXml(token)}"/></Stream></Connect></Response>`
    })
  return {
    api: api.value,
    callbackUrl: publicBase(options, stream),
    from: Option.flatten(Option.fromNullishOr(options.twilioFrom)),
    callbacks: TwilioTransfer.makeCallbacks(
      api.value.authToken,
      shared === undefined ? undefined : { records: TransferRecords.make(shared.store, shared.owner), api: api.value, backTo }
    )
  }
}

/**
 * The service's transfers: `line` is the operator desk's; `transferer` the app's for `/ws` calls;
 * `shared` a durable store's (Twilio's callbacks answered on any node).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: ServerOptions,
  line: OperatorTransfer.OperatorLine,
  transferer?: Transfer.TransfererService | undefined,
  shared?: SharedStore | undefined
): ServiceTransfers => ({
  operators: line,
  ws: transferer ?? OperatorTransfer.transferer(line),
  twilio: twilioFrom(options, shared)
})

/**
 * The transferer of a call whose attached client has none of its own (a `/ws` call, or a phone
 * call between two streams).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fallback = (transfers: ServiceTransfers | undefined, transport: "/ws" | "twilio"): Transfer.TransfererService =>
  transfers === undefined
    ? unavailable(transport, "this service was started without transfers (Server.layer provides them)")
    : transport === "/ws"
    ? transfers.ws
    : unavailable(transport, "the phone call's stream is reconnecting: try the transfer again")

/**
 * One transfer of a `/twilio` call: `moved` runs once the caller's TwiML was replaced (its stream
 * is ending), `back` is waited on before an outcome that sends the caller back to the agent.
 *
 * @since 0.1.0
 * @category constructors
 */
export const twilioCall = (
  twilio: TwilioTransfers,
  call: {
    readonly callSid: string
    readonly sessionId: string
    readonly resumeToken: Effect.Effect<string>
    readonly moved: Effect.Effect<void>
    readonly back: Effect.Effect<void>
  }
): Transfer.TransfererService => {
  const rest = TwilioTransfer.transferer({
    api: twilio.api,
    callbacks: twilio.callbacks,
    callbackUrl: twilio.callbackUrl,
    from: Option.getOrElse(twilio.from, () => ""),
    callSid: call.callSid,
    sessionId: call.sessionId,
    resumeToken: Effect.map(call.resumeToken, Option.some),
    onCallerMoved: call.moved,
    callerBack: call.back
  })
  return {
    transport: "twilio",
    transfer: (request) =>
      request._tag === "Warm" && Option.isNone(twilio.from)
        ? Effect.succeed(Transfer.outcome("Failed", "a warm transfer on /twilio calls the person from one of the account's numbers: set BATON_TWILIO_FROM"))
        : rest.transfer(request),
    // A session resumed with its transfer in flight reads the outcome from the transfer's record.
    restore: rest.restore
  }
}

/**
 * A `/twilio` call's `TransfererService.restore`, before any stream is attached to the resumed
 * session (its transfer's onRestore runs as the session resumes): the record's outcome.
 *
 * @since 0.1.0
 * @category constructors
 */
export const twilioRestore = (transfers: ServiceTransfers | undefined) =>
(_request: Transfer.TransferRequest, sessionId: string): Effect.Effect<Transfer.TransferOutcome> => {
  const twilio = transfers?.twilio ?? "this service was started without transfers"
  return typeof twilio === "string" ? Effect.succeed(Transfer.outcome("Failed", twilio)) : TwilioTransfer.restored(twilio.callbacks, sessionId)
}

/**
 * Answers one of Twilio's posts to `.../twilio/transfer/{id}/{kind}` (`path` as it reached this
 * service, after any proxy's prefix): 404 when Twilio transfers are not configured, else
 * `TwilioTransfer.handle` (403 unless signed for the public URL).
 *
 * @since 0.1.0
 * @category handlers
 */
export const twilioCallback = (
  transfers: ServiceTransfers,
  request: { readonly path: string; readonly signature: string | undefined; readonly body: string }
): Effect.Effect<{ readonly status: number; readonly body: string }> => {
  const twilio = transfers.twilio
  if (typeof twilio === "string") return Effect.succeed({ status: 404, body: twilio })
  const at = request.path.indexOf("/twilio/transfer/")
  return TwilioTransfer.handle(twilio.callbacks, {
    fullUrl: twilio.callbackUrl + (at < 0 ? request.path : request.path.slice(at)),
    signature: request.signature,
    body: request.body
  })
}

/**
 * Waits for a call's next stream: each registered waiter is completed when a stream attaches to
 * the call again (a phone call sent back to the agent after a transfer).
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamWaiters {
  readonly waiting: Set<Deferred.Deferred<void>>
}

/**
 * No one waiting yet.
 *
 * @since 0.1.0
 * @category constructors
 */
export const streamWaiters = (): StreamWaiters => ({ waiting: new Set() })

/**
 * A waiter registered now (before the caller is moved, so an early stream is not missed); its
 * effect completes when the next stream attaches, or after `bound` in any case.
 *
 * @since 0.1.0
 * @category operators
 */
export const awaitStream = (waiters: StreamWaiters, bound: number): Effect.Effect<Effect.Effect<void>> =>
  Effect.map(Deferred.make<void>(), (attached) => {
    waiters.waiting.add(attached)
    return Deferred.await(attached).pipe(
      Effect.timeoutOption(bound),
      Effect.ensuring(Effect.sync(() => waiters.waiting.delete(attached))),
      Effect.asVoid
    )
  })

/**
 * A stream attached: every waiter is done.
 *
 * @since 0.1.0
 * @category operators
 */
export const streamAttached = (waiters: StreamWaiters): Effect.Effect<void> =>
  Effect.suspend(() => {
    const all = [...waiters.waiting]
    waiters.waiting.clear()
    return Effect.forEach(all, (d) => Deferred.succeed(d, undefined), { discard: true })
  })
