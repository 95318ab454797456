/**
 * Twilio's side of a transfer, as the REST API and its webhooks speak it, on 127.0.0.1:
 *
 * - `POST /2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json` (update, `Twiml` or `Status`)
 *   and `POST .../Calls.json` (create: `To`, `From`, `Twiml` or `Url` required, 21205 otherwise;
 *   201 with the Call JSON). Basic auth (20003 / 401), unknown call 20404, a completed call
 *   refuses TwiML with 21220, a relative URL in updated TwiML is 15004.
 *   An invalid `To` is 21211.
 * - It plays the callee each `to` names in `people`: `<Dial action>` posts `DialCallStatus`;
 *   a created call posts its `StatusCallback` (`CallStatus`), its `AsyncAmdStatusCallback`
 *   (`AnsweredBy`) and its `<Gather action>` (`Digits`) as that person would answer. Every post
 *   is form encoded and signed (`X-Twilio-Signature`); the TwiML answered is kept.
 */
import { createHmac } from "node:crypto"
import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { ACCOUNT_SID, AUTH_TOKEN } from "./calls.ts"

export { ACCOUNT_SID, AUTH_TOKEN }

/** How a person answers: picks up and presses a key, hangs up after the briefing, or does not pick up. */
export type Person =
  | { readonly answers: "press"; readonly digit: string }
  | { readonly answers: "hangs-up" }
  | { readonly answers: "machine" }
  | { readonly answers: "busy" | "no-answer" | "failed" }
  | { readonly answers: "rings" }

export interface Posted {
  readonly url: string
  readonly params: Record<string, string>
  readonly status: number
  readonly answer: string
}

export interface TransferMock {
  readonly url: string
  /** Each call's TwiML in order (update or create), by CallSid. */
  readonly twiml: Map<string, Array<string>>
  /** Each webhook posted and what the app answered. */
  readonly posted: Array<Posted>
  /** The Say text each created call heard, by To. */
  readonly heard: Map<string, Array<string>>
  /** Status=completed updates (hang-ups), by CallSid. */
  readonly hungUp: Array<string>
  /**
   * Twilio acting on a call whose TwiML was replaced, before anything else happens to it (a test
   * plays the Media Stream's part here: `stop`, then the socket closed).
   */
  onTwiml: (callSid: string, twiml: string) => Promise<void> | void
}

const sign = (url: string, params: Record<string, string>) =>
  createHmac("sha1", AUTH_TOKEN).update(url + Object.keys(params).sort().map((k) => k + params[k]).join("")).digest("base64")

const error = (res: ServerResponse, status: number, code: number, message: string) =>
  res.writeHead(status, { "content-type": "application/json" }).end(
    JSON.stringify({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status })
  )

const attribute = (tag: string, name: string) => new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1]
const unescape = (text: string) => text.replace(/&quot;/g, "\"").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&")

let sids = 0
const newSid = () => `CA${(++sids).toString(16).padStart(32, "0")}`

/** The mock, with the calls in `live` in progress and the people it can reach, for the test's Scope. */
export const make = (live: ReadonlyArray<string>, people: Record<string, Person>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<TransferMock & { close: () => void }>((resolve) => {
        const status = new Map(live.map((sid) => [sid, "in-progress"]))
        const statusCallbacks = new Map<string, string>()
        const mock = { url: "", twiml: new Map(), posted: [], heard: new Map(), hungUp: [], onTwiml: () => {}, close: () => server.close() } as
          TransferMock & { close: () => void }

        const post = async (url: string, params: Record<string, string>) => {
          const full = { AccountSid: ACCOUNT_SID, ApiVersion: "2010-04-01", ...params }
          const response = await fetch(url, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sign(url, full) },
            body: new URLSearchParams(full).toString()
          })
          const answer = await response.text()
          mock.posted.push({ url, params: full, status: response.status, answer })
          return answer
        }

        /** The caller's `<Dial action><Number|Sip>`: ring the person and post the action. */
        const dial = async (callSid: string, twiml: string) => {
          const dialTag = /<Dial[^>]*>/.exec(twiml)![0]
          const to = unescape(/<(?:Number|Sip)[^>]*>([^<]*)</.exec(twiml)![1]!)
          const person: Person = people[to] ?? { answers: "failed" }
          // Rings past the test's end: no action is posted (a node dying meanwhile, transfer-fleet).
          if (person.answers === "rings") return
          const picksUp = person.answers === "press" || person.answers === "hangs-up" || person.answers === "machine"
          const DialCallStatus = picksUp ? "completed" : person.answers
          // The dialed leg's `statusCallbackEvent="answered"`: posted as the person picks up.
          const nounTag = /<(?:Number|Sip)[^>]*>/.exec(twiml)![0]
          const answered = attribute(nounTag, "statusCallback")
          if (picksUp && answered !== undefined && /answered/.test(attribute(nounTag, "statusCallbackEvent") ?? "")) {
            await post(unescape(answered), { CallSid: newSid(), ParentCallSid: callSid, CallStatus: "in-progress", To: to })
          }
          const next = await post(unescape(attribute(dialTag, "action")!), { CallSid: callSid, DialCallStatus, DialCallSid: newSid(), DialCallDuration: "0" })
          record(callSid, next)
        }

        /** A created call: the person answers (or not) as scripted. */
        const callPerson = async (sid: string, params: Record<string, string>) => {
          const person: Person = people[params["To"]!] ?? { answers: "failed" }
          const statusCallback = params["StatusCallback"]
          const completed = (CallStatus: string) =>
            statusCallback === undefined ? Promise.resolve("") : post(statusCallback, { CallSid: sid, CallStatus, To: params["To"]!, From: params["From"]! })
          if (person.answers === "busy" || person.answers === "no-answer" || person.answers === "failed") return completed(person.answers)
          if (person.answers === "rings") return undefined // until the app gives up
          const amd = params["AsyncAmdStatusCallback"]
          if (person.answers === "machine") {
            if (amd !== undefined) await post(amd, { CallSid: sid, AnsweredBy: "machine_start", MachineDetectionDuration: "2100" })
            return undefined // the app hangs this leg up (Status=completed), which posts `completed`
          }
          if (amd !== undefined) await post(amd, { CallSid: sid, AnsweredBy: "human", MachineDetectionDuration: "1400" })
          const twiml = params["Twiml"] ?? ""
          mock.heard.set(params["To"]!, [...twiml.matchAll(/<Say>([^<]*)<\/Say>/g)].map((m) => unescape(m[1]!)))
          if (person.answers === "hangs-up") return completed("completed")
          const gather = /<Gather[^>]*>/.exec(twiml)
          if (gather === null) return completed("completed")
          const next = await post(unescape(attribute(gather[0], "action")!), { CallSid: sid, Digits: person.answers === "press" ? person.digit : "" })
          record(sid, next)
          if (/<Hangup\/>/.test(next)) {
            status.set(sid, "completed")
            return completed("completed")
          }
          return undefined
        }

        const record = (sid: string, twiml: string) => mock.twiml.set(sid, [...(mock.twiml.get(sid) ?? []), twiml])

        const server = createServer((req, res) => {
          let body = ""
          req.on("data", (d) => (body += String(d)))
          req.on("end", () => {
            const expected = `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString("base64")}`
            if (req.headers.authorization !== expected) return error(res, 401, 20003, "Authenticate")
            const params = Object.fromEntries(new URLSearchParams(body))
            const prefix = `/2010-04-01/Accounts/${ACCOUNT_SID}/Calls`
            if (req.method === "POST" && req.url === `${prefix}.json`) {
              if (params["To"] === undefined || params["From"] === undefined) return error(res, 400, 21201, "No 'To' or 'From' number is specified")
              if (params["Twiml"] === undefined && params["Url"] === undefined) return error(res, 400, 21205, "Url parameter is required")
              if (!/^(\+[1-9]\d{1,14}|sip:.+|client:.+)$/.test(params["To"])) return error(res, 400, 21211, `Invalid 'To' Phone Number: ${params["To"]}`)
              const sid = newSid()
              status.set(sid, "queued")
              record(sid, params["Twiml"] ?? "")
              if (params["StatusCallback"] !== undefined) statusCallbacks.set(sid, params["StatusCallback"])
              res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({
                sid, account_sid: ACCOUNT_SID, to: params["To"], from: params["From"], status: "queued", direction: "outbound-api",
                api_version: "2010-04-01", uri: `${prefix}/${sid}.json`
              }))
              void callPerson(sid, params)
              return undefined
            }
            const path = new RegExp(`^${prefix}/(CA[0-9a-fA-F]+)\\.json$`).exec(req.url ?? "")
            if (req.method !== "POST" || !path) return error(res, 404, 20404, "The requested resource was not found")
            const callSid = path[1]!
            const state = status.get(callSid)
            if (state === undefined) return error(res, 404, 20404, `The requested resource /Calls/${callSid}.json was not found`)
            const twiml = params["Twiml"]
            if (state === "completed" && (twiml !== undefined || params["Url"] !== undefined)) {
              return error(res, 400, 21220, "Call is not in-progress. Cannot redirect.")
            }
            if (twiml !== undefined && /\s(?:action|url|waitUrl)="(?!https?:|wss?:)/.test(twiml)) {
              return error(res, 400, 15004, "Relative URLs are not allowed when updating a call with TwiML")
            }
            if (params["Status"] === "completed") {
              status.set(callSid, "completed")
              mock.hungUp.push(callSid)
            }
            if (twiml !== undefined) record(callSid, twiml)
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
              sid: callSid, account_sid: ACCOUNT_SID, status: status.get(callSid), api_version: "2010-04-01", uri: `${prefix}/${callSid}.json`
            }))
            if (twiml !== undefined) {
              const acting = Promise.resolve(mock.onTwiml(callSid, twiml))
              if (/<Dial[^>]*\saction="/.test(twiml) && /<(?:Number|Sip)[\s>]/.test(twiml)) void acting.then(() => dial(callSid, twiml))
            }
            const statusCallback = statusCallbacks.get(callSid)
            if (params["Status"] === "completed" && statusCallback !== undefined) {
              // A created leg hung up by the app: Twilio posts its completion.
              void post(statusCallback, { CallSid: callSid, CallStatus: "completed" })
            }
            return undefined
          })
        })
        server.listen(0, "127.0.0.1", () => {
          ;(mock as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
          resolve(mock)
        })
      })
    ),
    (mock) => Effect.sync(mock.close)
  )
