/**
 * Twilio's call-update endpoint as the REST API speaks it, on 127.0.0.1: `POST
 * /2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json`, form encoded, HTTP Basic with the
 * account SID and auth token (20003 / 401 otherwise); an unknown call is 20404 / 404; a call
 * already completed refuses TwiML with 21220 / 400. Answers 200 with the Call JSON (snake_case).
 * It keeps every update, and `onUpdate` lets a test play Twilio's part (stop the stream, open a
 * new one) when the call's TwiML is replaced.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

export interface CallUpdate {
  readonly callSid: string
  readonly params: Record<string, string>
}

export interface TwilioRestMock {
  readonly url: string
  readonly updates: Array<CallUpdate>
  /** Called after each accepted update (Twilio acting on the call). */
  onUpdate: (update: CallUpdate) => void
}

export const ACCOUNT_SID = "AC0123456789abcdef0123456789abcdef"
export const AUTH_TOKEN = "test-auth-token-not-a-secret"

const error = (res: import("node:http").ServerResponse, status: number, code: number, message: string) =>
  res.writeHead(status, { "content-type": "application/json" }).end(
    JSON.stringify({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status })
  )

/** The mock, serving the calls in `live` (their CallSids), for the test's Scope. */
export const make = (live: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<TwilioRestMock & { close: () => void }>((resolve) => {
        const status = new Map(live.map((sid) => [sid, "in-progress"]))
        const mock: TwilioRestMock & { close: () => void } = { url: "", updates: [], onUpdate: () => {}, close: () => server.close() }
        const server = createServer((req, res) => {
          let body = ""
          req.on("data", (d) => (body += String(d)))
          req.on("end", () => {
            const path = new RegExp(`^/2010-04-01/Accounts/${ACCOUNT_SID}/Calls/(CA[0-9a-fA-F]+)\\.json$`).exec(req.url ?? "")
            const expected = `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString("base64")}`
            if (req.headers.authorization !== expected) return error(res, 401, 20003, "Authenticate")
            if (req.method !== "POST" || !path) return error(res, 404, 20404, "The requested resource was not found")
            const callSid = path[1]!
            const state = status.get(callSid)
            if (state === undefined) return error(res, 404, 20404, `The requested resource /Calls/${callSid}.json was not found`)
            const params = Object.fromEntries(new URLSearchParams(body))
            if (state !== "in-progress" && (params["Twiml"] !== undefined || params["Url"] !== undefined)) {
              return error(res, 400, 21220, "Call is not in-progress. Cannot redirect.")
            }
            if (params["Status"] === "completed") status.set(callSid, "completed")
            const update = { callSid, params }
            mock.updates.push(update)
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
              sid: callSid,
              account_sid: ACCOUNT_SID,
              status: status.get(callSid),
              direction: "inbound",
              api_version: "2010-04-01",
              uri: `/2010-04-01/Accounts/${ACCOUNT_SID}/Calls/${callSid}.json`
            }))
            mock.onUpdate(update)
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

/** What a `<Play digits>` then `<Connect><Stream>` TwiML asks of Twilio: the digits, the stream's URL and its parameters. */
export const readDtmfTwiml = (twiml: string) => ({
  digits: /<Play digits="([^"]*)"\s*\/>/.exec(twiml)?.[1],
  streamUrl: /<Stream url="([^"]*)"/.exec(twiml)?.[1],
  parameters: Object.fromEntries([...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\s*\/>/g)].map((m) => [m[1]!, m[2]!]))
})
