/**
 * LiveKit's `livekit.SIP` Twirp service, the two methods a transfer uses, on 127.0.0.1:
 * `POST /twirp/livekit.SIP/TransferSIPParticipant` and `.../CreateSIPParticipant`, protobuf JSON
 * bodies (decoded with `@livekit/protocol`), `Authorization: Bearer <JWT>` checked with
 * livekit-server-sdk's `TokenVerifier` (the `sip.call` grant; a transfer also `roomAdmin` for its
 * room; 401 `unauthenticated` otherwise). Each callee answers with the SIP status `callees` gives
 * it: 200 succeeds (`{}` for a transfer, `SIPParticipantInfo` for a create), any other is a Twirp
 * error as LiveKit maps it (486 `resource_exhausted`, 408 `deadline_exceeded`, 603
 * `permission_denied`, ...) with `meta.sip_status_code` and `meta.sip_status`.
 */
import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { CreateSIPParticipantRequest, SIPParticipantInfo, TransferSIPParticipantRequest } from "@livekit/protocol"
import { Effect } from "effect"
import { TokenVerifier } from "livekit-server-sdk"

export const API_KEY = "APIfakesip"
export const API_SECRET = "fake-sip-secret-that-is-long-enough-for-hs256"

const REASONS: Record<number, string> = {
  408: "Request Timeout",
  480: "Temporarily Unavailable",
  486: "Busy Here",
  487: "Request Terminated",
  500: "Server Internal Error",
  600: "Busy Everywhere",
  603: "Decline"
}

/** The Twirp code and HTTP status LiveKit gives a SIP failure. */
const twirpOf = (sip: number): [string, number] => {
  if (sip === 486 || sip === 600 || sip === 480) return ["resource_exhausted", 429]
  if (sip === 408 || sip === 504) return ["deadline_exceeded", 408]
  if (sip === 487) return ["aborted", 409]
  if (sip === 603 || sip === 607 || sip === 608 || (sip >= 401 && sip <= 403)) return ["permission_denied", 403]
  if (sip === 404 || sip === 410 || sip === 604) return ["not_found", 404]
  if (sip >= 500 && sip < 600) return ["failed_precondition", 412]
  return ["invalid_argument", 400]
}

export interface Received {
  readonly method: string
  readonly request: TransferSIPParticipantRequest | CreateSIPParticipantRequest
}

export interface FakeSip {
  readonly url: string
  readonly received: Array<Received>
}

const twirpError = (res: ServerResponse, status: number, code: string, msg: string, meta?: Record<string, string>) =>
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ code, msg, ...(meta ? { meta } : {}) }))

/** A callee whose request is never answered (a server that hangs): `callees[to] = NEVER`. */
export const NEVER = 0

/** The fake, each callee (`transfer_to` or `sip_call_to`) answering with its SIP status (default 404), for the test's Scope. */
export const make = (callees: Record<string, number>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<FakeSip & { close: () => void }>((resolve) => {
        const verifier = new TokenVerifier(API_KEY, API_SECRET)
        const fake = { url: "", received: [] as Array<Received>, close: () => (server.close(), server.closeAllConnections()) }
        const server = createServer((req, res) => {
          let body = ""
          req.on("data", (d) => (body += String(d)))
          req.on("end", async () => {
            const method = /^\/twirp\/livekit\.SIP\/(\w+)$/.exec(req.url ?? "")?.[1]
            if (req.method !== "POST" || (method !== "TransferSIPParticipant" && method !== "CreateSIPParticipant")) {
              return twirpError(res, 404, "bad_route", `no handler for path ${req.url}`)
            }
            const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1]
            const claims = token === undefined ? undefined : await verifier.verify(token).catch(() => undefined)
            let request: TransferSIPParticipantRequest | CreateSIPParticipantRequest
            try {
              request = method === "TransferSIPParticipant"
                ? TransferSIPParticipantRequest.fromJsonString(body)
                : CreateSIPParticipantRequest.fromJsonString(body)
            } catch (e) {
              return twirpError(res, 400, "malformed", `the request could not be decoded: ${String(e)}`)
            }
            const roomAdmin = request instanceof TransferSIPParticipantRequest
              ? claims?.video?.roomAdmin === true && claims.video.room === request.roomName
              : true
            if (claims?.sip?.call !== true || !roomAdmin) return twirpError(res, 401, "unauthenticated", "permissions denied")
            fake.received.push({ method, request })
            const callee = request instanceof TransferSIPParticipantRequest ? request.transferTo : request.sipCallTo
            const sip = callees[callee] ?? 404
            if (sip === NEVER) return
            if (sip === 200) {
              const answer = request instanceof TransferSIPParticipantRequest
                ? {}
                : new SIPParticipantInfo({
                  participantId: "PA_fake1",
                  participantIdentity: request.participantIdentity,
                  roomName: request.roomName,
                  sipCallId: "SCL_fake1"
                }).toJson()
              return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer))
            }
            const [code, status] = twirpOf(sip)
            const reason = REASONS[sip] ?? "Not Found"
            return twirpError(res, status, code, `sip status ${sip}: ${reason}`, { sip_status_code: String(sip), sip_status: reason })
          })
        })
        server.listen(0, "127.0.0.1", () => {
          fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
          resolve(fake)
        })
      })
    ),
    (fake) => Effect.sync(fake.close)
  )
