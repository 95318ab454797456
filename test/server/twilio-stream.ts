/**
 * A Twilio Media Stream caller for the /twilio tests: Twilio's first two messages on a stream
 * (`connected`, then `start` with the TwiML's `<Parameter>`s), keypad presses and `stop`, for one
 * call; the app's status callback the bridge POSTs each call's resume token to; and the service's
 * Twilio callback listener on its own socket.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import * as TwilioTransfer from "../../server/TwilioTransfer.ts"
import type { Client } from "./harness.ts"

export interface TwilioCall {
  readonly accountSid: string
  readonly callSid: string
}

/** `connected` and `start` for `streamSid` of `call`, carrying `customParameters`. */
export const startStream = (call: TwilioCall, caller: Client, streamSid: string, customParameters: Record<string, string> = {}) => {
  caller.sendJson({ event: "connected", protocol: "Call", version: "1.0.0" })
  caller.sendJson({
    event: "start",
    sequenceNumber: "1",
    streamSid,
    start: {
      accountSid: call.accountSid,
      streamSid,
      callSid: call.callSid,
      tracks: ["inbound"],
      mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 },
      customParameters
    }
  })
}

/** The caller pressing `digits` on the keypad, one `dtmf` message each. */
export const press = (caller: Client, streamSid: string, digits: string) => {
  for (const [i, digit] of [...digits].entries()) {
    caller.sendJson({ event: "dtmf", streamSid, sequenceNumber: String(i + 2), dtmf: { track: "inbound_track", digit } })
  }
}

/** Twilio's `stop` for `streamSid` of `call`: the call's TwiML was replaced, the stream ends. */
export const stopStream = (call: TwilioCall, caller: Client, streamSid: string) =>
  caller.sendJson({ event: "stop", sequenceNumber: "99", streamSid, stop: { accountSid: call.accountSid, callSid: call.callSid } })

/** The app's status callback (`BATON_TWILIO_STATUS_URL`), a real HTTP server on 127.0.0.1 closed
 * with the Scope: every JSON body POSTed to it. */
export const statusCallback = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ url: string; posts: Array<any>; close: () => void }>((resolve) => {
      const posts: Array<any> = []
      const server = createServer((req, res) => {
        let body = ""
        req.on("data", (d) => (body += String(d)))
        req.on("end", () => {
          posts.push(JSON.parse(body))
          res.writeHead(204).end()
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/status`, posts, close: () => server.close() }))
    })
  ),
  (callback) => Effect.sync(callback.close)
)

/** The service's Twilio callback endpoint (`TwilioTransfer.listener`) on 127.0.0.1, closed with
 * the Scope; `url` is also the base the listener checks signatures against. */
export const callbackServer = (callbacks: TwilioTransfer.Callbacks) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; close: () => void }>((resolve) => {
        const holder = { url: "" }
        const server = createServer((req, res) => TwilioTransfer.listener(callbacks, holder.url)(req, res))
        server.listen(0, "127.0.0.1", () => {
          holder.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
          resolve({ url: holder.url, close: () => server.close() })
        })
      })
    ),
    (s) => Effect.sync(s.close)
  )
