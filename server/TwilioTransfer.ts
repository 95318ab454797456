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
import { Deferred, Duration, Effect, Option, Redacted } from "effect"
import * as Transfer from "../src/Transfer.ts"
import type { TwilioApi } from "./TwilioCallControl.ts"

const escapeXml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

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

/** What a pending transfer does with one callback: its outcome (when it settles it) and the TwiML to answer. */
type Step = (kind: string, params: Record<string, string>) => {
  readonly outcome?: Transfer.TransferOutcome
  readonly twiml: string
  /** Done after answering (the REST calls that take the caller back to the agent). */
  readonly then?: Effect.Effect<void>
}

interface Pending {
  readonly step: Step
  readonly done: Deferred.Deferred<Transfer.TransferOutcome>
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
}

/**
 * Twilio's transfer callbacks, checked with `authToken`, with no transfer waiting yet.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeCallbacks = (authToken: Redacted.Redacted<string>): Callbacks => ({ authToken, pending: new Map() })

/**
 * Answers one of Twilio's posts to `/twilio/transfer/{id}/{kind}`: 403 unless signed for
 * `fullUrl` (the public URL Twilio posted to), 404 for a transfer not pending, else 200 with TwiML.
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
    const pending = match ? callbacks.pending.get(match[1]!) : undefined
    if (match === null || pending === undefined) return { status: 404, body: "no such transfer" }
    const { outcome, then, twiml } = pending.step(match[2]!, params)
    if (outcome !== undefined) yield* Deferred.succeed(pending.done, outcome)
    if (then !== undefined) yield* Effect.forkDetach(then)
    return { status: 200, body: twiml }
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

const HANGUP = "<Response><Hangup/></Response>"
const EMPTY = "<Response/>"

const dialStatus = (status: string | undefined): Transfer.TransferOutcome => {
  switch (status) {
    case "completed":
    case "answered":
      return Transfer.outcome("Answered", `DialCallStatus=${status}`)
    case "busy":
      return Transfer.outcome("Busy", "DialCallStatus=busy")
    case "no-answer":
      return Transfer.outcome("NoAnswer", "DialCallStatus=no-answer")
    default:
      return Transfer.outcome("Failed", `DialCallStatus=${status ?? "missing"}`)
  }
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

  const run = (id: string, request: Transfer.TransferRequest, entry: { lingers: boolean }) =>
    Effect.gen(function*() {
      const url = (kind: string) => `${base}/twilio/transfer/${id}/${kind}`
      const back = yield* backToAgent
      const done = yield* Deferred.make<Transfer.TransferOutcome>()
      const seconds = Math.max(5, Math.min(600, Math.round(Duration.toSeconds(request.ringTimeout))))
      const settled = (outcome: Transfer.TransferOutcome) => {
        finished = true
        return { outcome, twiml: outcome._tag === "Answered" ? HANGUP : back }
      }
      /** Set once an outcome is settled; until then, an interrupted transfer gives the caller back to the agent. */
      let finished = false
      /** Set once the caller's TwiML was replaced: its stream ended, and a way back is owed. */
      let moved = false
      const updateCaller = (twiml: string) => apiRequest(api, `Calls/${encodeURIComponent(options.callSid)}.json`, new URLSearchParams({ Twiml: twiml }))
      const moveCaller = (twiml: string) =>
        Effect.andThen(updateCaller(twiml), Effect.suspend(() => ((moved = true), options.onCallerMoved ?? Effect.void)))
      yield* Effect.addFinalizer((exit) => exit._tag === "Failure" && !finished ? Effect.ignore(updateCaller(back)) : Effect.void)
      if (request._tag === "Cold") {
        // The dial's action comes when the bridged call ends (after the person and the caller
        // talked), so "answered" is the person's leg's own status callback; the action then hangs up.
        callbacks.pending.set(id, {
          done,
          step: (kind, params) =>
            kind === "status" && params["CallStatus"] === "in-progress" && !finished
              ? ((entry.lingers = true), { ...settled(Transfer.outcome("Answered", "CallStatus=in-progress")), twiml: EMPTY })
              : kind === "dial"
              ? (finished ? (callbacks.pending.delete(id), { twiml: HANGUP }) : settled(dialStatus(params["DialCallStatus"])))
              : { twiml: EMPTY }
        })
        const answered = ` statusCallbackEvent="answered" statusCallback="${escapeXml(url("status"))}"`
        const noun = request.to.startsWith("sip:")
          ? `<Sip${answered}>${escapeXml(request.to)}</Sip>`
          : `<Number${answered}>${escapeXml(request.to)}</Number>`
        const twiml = `<Response><Dial action="${escapeXml(url("dial"))}" timeout="${seconds}">${noun}</Dial></Response>`
        yield* moveCaller(twiml)
      } else {
        const room = `baton-transfer-${id}`
        const conference = (start: boolean) =>
          `<Dial><Conference startConferenceOnEnter="${start}" endConferenceOnExit="true" beep="false"${
            !start && request.holdAudio !== undefined ? ` waitUrl="${escapeXml(request.holdAudio)}"` : ""
          }>${room}</Conference></Dial>`
        let accepted = false
        let personSid: string | undefined
        // Only the first callback that settles the transfer acts (the person's leg also ends with a status callback).
        const returnCaller = (outcome: Transfer.TransferOutcome) =>
          finished ? Effect.void : (finished = true, updateCaller(back).pipe(
            Effect.ignore,
            Effect.andThen(Deferred.succeed(done, outcome))
          ))
        callbacks.pending.set(id, {
          done,
          step: (kind, params) => {
            if (kind === "gather" && params["Digits"] === "1" && !finished) {
              accepted = true
              finished = true
              return { outcome: Transfer.outcome("Answered", "the person pressed 1 after the briefing"), twiml: `<Response>${conference(true)}</Response>` }
            }
            if (kind === "gather") {
              return { twiml: HANGUP, then: returnCaller(Transfer.outcome("Declined", `the person pressed ${params["Digits"] || "nothing"} after the briefing`)) }
            }
            if (kind === "amd" && (params["AnsweredBy"] ?? "").startsWith("machine_")) {
              const hangUpMachine = personSid === undefined
                ? Effect.void
                : Effect.ignore(apiRequest(api, `Calls/${personSid}.json`, new URLSearchParams({ Status: "completed" })))
              return { twiml: EMPTY, then: Effect.andThen(hangUpMachine, returnCaller(Transfer.outcome("Voicemail", `AnsweredBy=${params["AnsweredBy"]}`))) }
            }
            if (kind === "status" && !accepted) {
              const status = params["CallStatus"]
              const outcome = status === "completed"
                ? Transfer.outcome("Declined", "the person hung up before accepting")
                : dialStatus(status)
              return { twiml: EMPTY, then: returnCaller(outcome) }
            }
            return { twiml: EMPTY }
          }
        })
        const gather = `<Gather numDigits="1" timeout="10" action="${escapeXml(url("gather"))}"><Say>${escapeXml(request.briefing)}</Say>` +
          `<Say>Press 1 to take the call, or any other key to decline.</Say></Gather><Hangup/>`
        yield* moveCaller(`<Response>${conference(false)}</Response>`)
        // The caller is on hold now: if the person cannot be called, the caller goes back to the agent.
        const person = yield* apiRequest(api, "Calls.json", new URLSearchParams({
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
        personSid = person.sid
      }
      const outcome = yield* Deferred.await(done)
      // Sent back on a new stream: the agent speaks once the caller can hear it.
      if (outcome._tag !== "Answered" && moved && back !== HANGUP && options.callerBack) yield* options.callerBack
      return outcome
    }).pipe(Effect.scoped, Effect.catch((message) => Effect.succeed(Transfer.outcome("Failed", message))))

  return {
    transport: "twilio",
    transfer: (request) =>
      Effect.suspend(() => {
        const id = randomUUID()
        // An answered cold transfer's entry stays for the dial's action (posted when the bridged
        // call ends), which it answers with a hang-up and then removes.
        const entry = { lingers: false }
        return run(id, request, entry).pipe(Effect.ensuring(Effect.sync(() => entry.lingers || callbacks.pending.delete(id))))
      })
  }
}

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
