/**
 * Transfers on a Twilio call (issue 35), through Twilio's REST API. The Media Stream cannot
 * transfer, so the call's TwiML is replaced (`POST .../Calls/{CallSid}.json` with `Twiml`), which
 * ends the stream; Twilio then tells this service how it went by posting to its callback URLs,
 * each signed with `X-Twilio-Signature` (checked here: a forged or unsigned post is refused).
 *
 * - Cold: `<Dial action=".../dial" timeout="N"><Number>to</Number></Dial>` (`<Sip>` for a
 *   `sip:` URI). The action's `DialCallStatus` is the outcome: `completed`/`answered` Answered,
 *   `busy`, `no-answer`, `failed`, `canceled` (Failed). The action's answer is the call's next
 *   TwiML: `<Hangup/>` after an answered transfer, else the stream back to the agent
 *   (`<Connect><Stream>` with the call's resume token), so the agent gets the caller back.
 * - Warm: the caller goes into a conference that has not started (`startConferenceOnEnter=
 *   "false"`), hearing the hold audio (`waitUrl`). The person is called (`POST .../Calls.json`,
 *   `Timeout`, `StatusCallback`, async answering machine detection) with TwiML that says the
 *   briefing and gathers one key: 1 joins the conference, which starts it and connects the caller
 *   (the agent has already left: its stream ended), Answered; any other key, or hanging up,
 *   Declined; the status callback's `busy`/`no-answer`/`failed` are the other outcomes and
 *   `AnsweredBy=machine_*` is Voicemail (that leg is then hung up). On any outcome but Answered,
 *   the caller's call goes back to the stream and the agent.
 *
 * Callback URLs are `{callbackUrl}/twilio/transfer/{id}/{dial|gather|status|amd}`; the service
 * routes them to `Callbacks.handle`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto"
import { Deferred, Duration, Effect, Option, Redacted, Schedule } from "effect"
import * as Transfer from "../src/Transfer.ts"
import type { TwilioApi } from "./TwilioCallControl.ts"
import type * as TransferRecords from "./TransferRecords.ts"
import { conference, escapeXml, HANGUP, react, type Reaction, type Standing } from "./TwilioReactions.ts"

/** How often the node holding a transfer reads its record for an outcome another node settled. */
const RECORD_POLL_MS = 200

/**
 * `X-Twilio-Signature` for a POST to `url` with form `params`: HMAC-SHA1 keyed with the auth token
 * over the URL followed by each parameter's name and value, sorted by name; base64.
 *
 * @since 0.1.0
 * @category utils
 */
export const signature = (authToken: Redacted.Redacted<string>, url: string, params: Record<string, string>): string =>
  createHmac("sha1", Redacted.value(authToken))
    .update(url + Object.keys(params).sort().map((key) => key + params[key]).join(""))
    .digest("base64")

/**
 * Whether `header` is Twilio's signature of this request (compared in constant time).
 *
 * @since 0.1.0
 * @category utils
 */
export const isSigned = (authToken: Redacted.Redacted<string>, url: string, params: Record<string, string>, header: string | undefined): boolean => {
  if (header === undefined) return false
  const expected = Buffer.from(signature(authToken, url, params))
  const given = Buffer.from(header)
  return expected.length === given.length && timingSafeEqual(expected, given)
}

/** A transfer waiting in this process: how it stands and where its outcome goes. */
interface Pending {
  readonly kind: "Cold" | "Warm"
  readonly api: TwilioApi
  readonly callSid: string
  readonly back: string
  standing: Standing
  readonly done: Deferred.Deferred<Transfer.TransferOutcome>
}

/**
 * With a durable store: the transfers' records (TransferRecords.ts), so that a callback posted to
 * any node of the fleet is answered there and its outcome reaches the node holding the transfer.
 *
 * @since 0.1.0
 * @category models
 */
export interface SharedCallbacks {
  readonly records: TransferRecords.TransferRecords
  readonly api: TwilioApi
  /** The TwiML that sends a session's caller back to its agent: a new stream with a fresh resume token. */
  readonly backTo: (sessionId: string) => Effect.Effect<string>
}

/**
 * The transfers waiting for Twilio's callbacks, shared by the service's route and the calls'
 * `Transferer`s.
 *
 * @since 0.1.0
 * @category models
 */
export interface Callbacks {
  readonly authToken: Redacted.Redacted<string>
  readonly pending: Map<string, Pending>
  readonly shared?: SharedCallbacks | undefined
}

/**
 * Twilio's transfer callbacks, checked with `authToken`, with no transfer waiting yet; `shared`
 * with a durable store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeCallbacks = (authToken: Redacted.Redacted<string>, shared?: SharedCallbacks): Callbacks => ({ authToken, pending: new Map(), shared })

/** After answering: the REST calls a reaction needs, then its outcome given by `deliver`. */
const afterwards = (api: TwilioApi, callSid: string, back: string, reaction: Reaction, deliver: Effect.Effect<void>) => {
  const hangUp = reaction.hangUp === undefined
    ? Effect.void
    : Effect.ignore(apiRequest(api, `Calls/${encodeURIComponent(reaction.hangUp)}.json`, new URLSearchParams({ Status: "completed" })))
  const returnCaller = reaction.returnCaller
    ? Effect.ignore(apiRequest(api, `Calls/${encodeURIComponent(callSid)}.json`, new URLSearchParams({ Twiml: back })))
    : Effect.void
  return Effect.andThen(Effect.andThen(hangUp, returnCaller), deliver)
}

/** Answers with `reaction` and gives its outcome: at once, or after the REST calls it needs. */
const respond = (api: TwilioApi, callSid: string, back: string, reaction: Reaction, deliver: Effect.Effect<void>) =>
  Effect.as(
    reaction.returnCaller || reaction.hangUp !== undefined ? Effect.forkDetach(afterwards(api, callSid, back, reaction, deliver)) : deliver,
    { status: 200, body: reaction.twiml }
  )

/** A callback for a transfer in the store: answered from its record, on whichever node Twilio posted to. */
const fromRecord = (callbacks: Callbacks, shared: SharedCallbacks, id: string, callback: string, params: Record<string, string>) =>
  Effect.gen(function*() {
    const found = yield* shared.records.read(id)
    if (Option.isNone(found)) return { status: 404, body: "no such transfer" }
    const { info } = found.value
    const back = yield* shared.backTo(info.sessionId)
    const standing = { settled: Option.isSome(found.value.outcome), accepted: found.value.accepted }
    const reaction = react(id, info.kind, standing, back, callback, params)
    const local = callbacks.pending.get(id)
    if (reaction.outcome === undefined) return yield* respond(shared.api, info.callSid, back, reaction, Effect.void)
    // The first outcome appended is the transfer's (another node may have settled it meanwhile);
    // the node holding the transfer reads it from the record, or gets it here when it is this one.
    const settled = yield* shared.records.settle(id, reaction.outcome, reaction.accepted ?? false)
    const outcome = Option.getOrElse(settled.outcome, () => reaction.outcome!)
    if (local !== undefined) local.standing = { settled: true, accepted: settled.accepted }
    return yield* respond(shared.api, info.callSid, back, reaction, local === undefined ? Effect.void : Effect.asVoid(Deferred.succeed(local.done, outcome)))
  }).pipe(
    Effect.catchTag("StoreError", (e) =>
      Effect.as(Effect.logWarning(`twilio: a transfer's callback was not answered: the session store failed: ${e.message}`), {
        status: 503,
        body: "the session store failed"
      }))
  )

/**
 * Answers one of Twilio's posts to `/twilio/transfer/{id}/{kind}`: 403 unless signed for
 * `fullUrl` (the public URL Twilio posted to), 404 for a transfer not pending (in this process,
 * or with a durable store in the store), 503 when the store failed, else 200 with TwiML.
 *
 * @since 0.1.0
 * @category handlers
 */
export const handle = (
  callbacks: Callbacks,
  request: { readonly fullUrl: string; readonly signature: string | undefined; readonly body: string }
): Effect.Effect<{ readonly status: number; readonly body: string }> =>
  Effect.gen(function*() {
    const params = Object.fromEntries(new URLSearchParams(request.body))
    if (!isSigned(callbacks.authToken, request.fullUrl, params, request.signature)) {
      return { status: 403, body: "X-Twilio-Signature does not match this request" }
    }
    const match = /\/twilio\/transfer\/([^/]+)\/([a-z]+)$/.exec(new URL(request.fullUrl).pathname)
    if (match === null) return { status: 404, body: "no such transfer" }
    const id = match[1]!
    const callback = match[2]!
    if (callbacks.shared !== undefined) return yield* fromRecord(callbacks, callbacks.shared, id, callback, params)
    const pending = callbacks.pending.get(id)
    if (pending === undefined) return { status: 404, body: "no such transfer" }
    const reaction = react(id, pending.kind, pending.standing, pending.back, callback, params)
    const outcome = reaction.outcome
    if (outcome !== undefined) pending.standing = { settled: true, accepted: reaction.accepted ?? false }
    return yield* respond(pending.api, pending.callSid, pending.back, reaction, outcome === undefined ? Effect.void : Effect.asVoid(Deferred.succeed(pending.done, outcome)))
  })

/**
 * The Twilio side of one call: its REST API, where Twilio reaches this service, the number the
 * person sees, the call, and the stream's resume token for the way back to the agent.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallTransferOptions {
  readonly api: TwilioApi
  readonly callbacks: Callbacks
  /** This service's public base URL (`https://...`): Twilio's callbacks must be absolute (error 15004). */
  readonly callbackUrl: string
  /** The caller ID for the person's leg of a warm transfer (a Twilio number of the account). */
  readonly from: string
  readonly callSid: string
  /** The session the call carries (its transfer's record names it, so any node can send the caller back). */
  readonly sessionId: string
  /** The session's resume token now (the stream back to the agent carries it). */
  readonly resumeToken: Effect.Effect<Option.Option<string>>
  /** Run once the caller's TwiML was replaced (its Media Stream is ending): the bridge then
   * knows the stream's `stop` is not the call's end. */
  readonly onCallerMoved?: Effect.Effect<void> | undefined
  /** Waited on before an outcome other than Answered is returned, when the caller was moved and
   * sent back on a new stream: the agent's next words must reach them (the bridge completes it
   * when that stream attaches, with a bound of its own). */
  readonly callerBack?: Effect.Effect<void> | undefined
}

const apiRequest = (api: TwilioApi, path: string, params: URLSearchParams) =>
  Effect.tryPromise({
    try: async () => {
      const url = `${api.baseUrl.replace(/\/+$/, "")}/2010-04-01/Accounts/${encodeURIComponent(api.accountSid)}/${path}`
      const auth = Buffer.from(`${api.accountSid}:${Redacted.value(api.authToken)}`).toString("base64")
      const response = await fetch(url, {
        method: "POST",
        headers: { authorization: `Basic ${auth}`, "content-type": "application/x-www-form-urlencoded" },
        body: params.toString(),
        signal: AbortSignal.timeout(10_000)
      })
      const body = (await response.json().catch(() => ({}))) as { code?: number; message?: string; sid?: string }
      if (!response.ok) throw new Error(`Twilio answered ${response.status}${body.code !== undefined ? ` (error ${body.code})` : ""}: ${body.message ?? response.statusText}`)
      return body
    },
    catch: (e) => (e instanceof Error ? e.message : String(e))
  })

/**
 * A `Transferer` for one Twilio call (see the module's comment).
 *
 * @since 0.1.0
 * @category constructors
 */
export const transferer = (options: CallTransferOptions): Transfer.TransfererService => {
  const { api, callbacks } = options
  const base = options.callbackUrl.replace(/\/+$/, "")
  /** The caller's TwiML back to the agent: the same stream, resumed by its token. */
  const backToAgent = Effect.map(options.resumeToken, (token) =>
    Option.isSome(api.streamUrl) && Option.isSome(token)
      ? `<Response><Connect><Stream url="${escapeXml(api.streamUrl.value)}"><Parameter name="resumeToken" value="${escapeXml(token.value)}"/></Stream></Connect></Response>`
      : HANGUP)

  const run = (id: string, request: Transfer.TransferRequest, pending: Pending) =>
    Effect.gen(function*() {
      const url = (kind: string) => `${base}/twilio/transfer/${id}/${kind}`
      const { back, done } = pending
      const seconds = Math.max(5, Math.min(600, Math.round(Duration.toSeconds(request.ringTimeout))))
      /** Set once the caller's TwiML was replaced: its stream ended, and a way back is owed. */
      let moved = false
      const updateCaller = (twiml: string) => apiRequest(api, `Calls/${encodeURIComponent(options.callSid)}.json`, new URLSearchParams({ Twiml: twiml }))
      const moveCaller = (twiml: string) =>
        Effect.andThen(updateCaller(twiml), Effect.suspend(() => ((moved = true), options.onCallerMoved ?? Effect.void)))
      // Until an outcome is settled, an interrupted transfer gives the caller back to the agent.
      yield* Effect.addFinalizer((exit) => exit._tag === "Failure" && !pending.standing.settled ? Effect.ignore(updateCaller(back)) : Effect.void)
      const shared = callbacks.shared
      if (shared !== undefined) {
        // Recorded before the caller moves: its callbacks may reach any node of the fleet, at once.
        yield* shared.records.open(id, { sessionId: options.sessionId, callSid: options.callSid, kind: request._tag }).pipe(
          Effect.mapError((e) => `the transfer could not be recorded in the session store: ${e.message}`)
        )
        yield* Effect.addFinalizer(() => Effect.ignore(shared.records.close(id)))
        yield* settledElsewhere(shared.records, id, pending).pipe(Effect.forkScoped)
      }
      callbacks.pending.set(id, pending)
      if (request._tag === "Cold") {
        const answered = ` statusCallbackEvent="answered" statusCallback="${escapeXml(url("status"))}"`
        const noun = request.to.startsWith("sip:")
          ? `<Sip${answered}>${escapeXml(request.to)}</Sip>`
          : `<Number${answered}>${escapeXml(request.to)}</Number>`
        yield* moveCaller(`<Response><Dial action="${escapeXml(url("dial"))}" timeout="${seconds}">${noun}</Dial></Response>`)
      } else {
        const gather = `<Gather numDigits="1" timeout="10" action="${escapeXml(url("gather"))}"><Say>${escapeXml(request.briefing)}</Say>` +
          `<Say>Press 1 to take the call, or any other key to decline.</Say></Gather><Hangup/>`
        yield* moveCaller(`<Response>${conference(id, false, request.holdAudio)}</Response>`)
        // The caller is on hold now: if the person cannot be called, the caller goes back to the agent.
        yield* apiRequest(api, "Calls.json", new URLSearchParams({
          To: request.to,
          From: options.from,
          Twiml: `<Response>${gather}</Response>`,
          Timeout: String(seconds),
          StatusCallback: url("status"),
          StatusCallbackEvent: "completed",
          MachineDetection: "Enable",
          AsyncAmd: "true",
          AsyncAmdStatusCallback: url("amd")
        }))
      }
      const outcome = yield* Deferred.await(done)
      // Sent back on a new stream: the agent speaks once the caller can hear it.
      if (outcome._tag !== "Answered" && moved && back !== HANGUP && options.callerBack) yield* options.callerBack
      return outcome
    }).pipe(Effect.scoped, Effect.catch((message) => Effect.succeed(Transfer.outcome("Failed", message))))

  return {
    transport: "twilio",
    // The session was resumed after the process running its transfer died: the outcome is the
    // record's (whichever node Twilio's callback reached settled it there).
    restore: (_request, sessionId) => restored(callbacks, sessionId),
    transfer: (request) =>
      Effect.gen(function*() {
        const id = randomUUID()
        const pending: Pending = {
          kind: request._tag,
          api,
          callSid: options.callSid,
          back: yield* backToAgent,
          standing: { settled: false, accepted: false },
          done: yield* Deferred.make<Transfer.TransferOutcome>()
        }
        // Without a store, an answered cold transfer's entry stays for the dial's action (posted
        // when the bridged call ends), which it answers with a hang-up (a record answers it so).
        return yield* run(id, request, pending).pipe(
          Effect.ensuring(Effect.sync(() => {
            if (callbacks.shared !== undefined || !(request._tag === "Cold" && pending.standing.settled)) callbacks.pending.delete(id)
          }))
        )
      })
  }
}

/**
 * The outcome of the transfer session `sessionId` had in flight when the process running it died
 * (`TransfererService.restore`): its record's, with a durable store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const restored = (callbacks: Callbacks, sessionId: string): Effect.Effect<Transfer.TransferOutcome> =>
  callbacks.shared === undefined
    ? Effect.succeed(Transfer.outcome("Failed", "the process running the transfer stopped and, without a durable store, its outcome was kept nowhere"))
    : recordedOutcome(callbacks.shared.records, sessionId)

/**
 * The outcome of session `sessionId`'s live transfer, read from its record until there is one
 * (the task's ring timeout bounds the wait); the record is ended once it is read.
 */
const recordedOutcome = (records: TransferRecords.TransferRecords, sessionId: string): Effect.Effect<Transfer.TransferOutcome> =>
  Effect.gen(function*() {
    const found = yield* records.ofSession(sessionId).pipe(Effect.retry({ schedule: Schedule.spaced(RECORD_POLL_MS), times: 5 }))
    if (Option.isNone(found)) return Transfer.outcome("Failed", "the session store holds no transfer in flight for this call")
    const { id } = found.value
    return yield* records.read(id).pipe(
      Effect.flatMap((record) => {
        const outcome = Option.flatMap(record, (r) => r.outcome)
        return Option.isSome(outcome) ? Effect.succeed(outcome.value) : Effect.fail("not yet" as const)
      }),
      // A store failing meanwhile is read again too: the ring timeout ends the wait.
      Effect.retry({ schedule: Schedule.spaced(RECORD_POLL_MS) }),
      Effect.ensuring(Effect.ignore(records.close(id)))
    )
  }).pipe(Effect.catch((e) => Effect.succeed(Transfer.outcome("Failed", `the transfer's record could not be read: ${typeof e === "string" ? e : e.message}`))))

/** The outcome another node settled (Twilio posted there), read from the record until there is one. */
const settledElsewhere = (records: TransferRecords.TransferRecords, id: string, pending: Pending): Effect.Effect<void> =>
  records.read(id).pipe(
    Effect.flatMap((record) => {
      const settled = Option.flatMap(record, (r) => Option.map(r.outcome, (outcome) => ({ outcome, accepted: r.accepted })))
      if (Option.isNone(settled)) return Effect.fail("not yet" as const)
      pending.standing = { settled: true, accepted: settled.value.accepted }
      return Deferred.succeed(pending.done, settled.value.outcome)
    }),
    Effect.retry({ schedule: Schedule.spaced(RECORD_POLL_MS) }),
    Effect.ignore
  )

/**
 * A Node request listener for `POST /twilio/transfer/...`: reads the form body and answers with
 * `handle`'s TwiML. `publicUrl` is the base URL Twilio was given (the signature covers it).
 *
 * @since 0.1.0
 * @category handlers
 */
export const listener = (callbacks: Callbacks, publicUrl: string) =>
(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): void => {
  let body = ""
  req.on("data", (chunk) => (body += String(chunk)))
  req.on("end", () => {
    const signatureHeader = req.headers["x-twilio-signature"]
    Effect.runPromise(handle(callbacks, {
      fullUrl: publicUrl.replace(/\/+$/, "") + (req.url ?? "/"),
      signature: typeof signatureHeader === "string" ? signatureHeader : undefined,
      body
    })).then((answer) => {
      res.writeHead(answer.status, { "content-type": answer.status === 200 ? "text/xml" : "text/plain" }).end(answer.body)
    })
  })
}
