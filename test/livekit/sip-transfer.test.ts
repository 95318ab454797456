/**
 * Transfers on LiveKit SIP (issue 35) through livekit-server-sdk's SipClient, against a fake of
 * the `livekit.SIP` Twirp endpoints on 127.0.0.1 that checks the SDK's JWT and answers each
 * callee with a SIP status.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Redacted } from "effect"
import { CreateSIPParticipantRequest, TransferSIPParticipantRequest } from "@livekit/protocol"
import * as SipTransfer from "../../layers/livekit/SipTransfer.ts"
import * as Transfer from "../../src/Transfer.ts"
import * as FakeSip from "../mocks/livekit/FakeSip.ts"

const callees = {
  "tel:+15550000001": 200,
  "tel:+15550000002": 486,
  "tel:+15550000003": 480,
  "tel:+15550000004": 603,
  "+15550000001": 200,
  "+15550000002": 486
}

const setup = (secret = FakeSip.API_SECRET) =>
  Effect.map(FakeSip.make(callees), (fake) => ({
    fake,
    transferer: SipTransfer.transferer({
      host: fake.url,
      apiKey: FakeSip.API_KEY,
      apiSecret: Redacted.make(secret),
      roomName: "call-42",
      participantIdentity: "sip_caller",
      outboundTrunkId: "ST_outbound"
    })
  }))

const cold = (to: string): Transfer.TransferRequest => ({ _tag: "Cold", to, ringTimeout: Duration.seconds(25) })

describe("LiveKit SIP transfers", () => {
  it.live("cold transfer answered: TransferSIPParticipant for the caller's participant in its room, with the ring timeout and a dial tone: Answered", () =>
    Effect.gen(function*() {
      const { fake, transferer } = yield* setup()
      const result = yield* transferer.transfer(cold("tel:+15550000001"))
      assert.deepStrictEqual(result, Transfer.outcome("Answered", "transferred to tel:+15550000001"))
      const request = fake.received[0]!.request as TransferSIPParticipantRequest
      assert.strictEqual(fake.received[0]!.method, "TransferSIPParticipant")
      assert.deepStrictEqual([request.roomName, request.participantIdentity, request.playDialtone, Number(request.ringingTimeout?.seconds)], ["call-42", "sip_caller", true, 25])
    }).pipe(Effect.scoped))

  it.live("cold transfer busy: SIP 486 (Twirp resource_exhausted) is Busy with the SIP status", () =>
    Effect.gen(function*() {
      const { transferer } = yield* setup()
      assert.deepStrictEqual(yield* transferer.transfer(cold("tel:+15550000002")), Transfer.outcome("Busy", "sip status 486: Busy Here"))
    }).pipe(Effect.scoped))

  it.live("cold transfer: SIP 480 is NoAnswer and 603 Declined", () =>
    Effect.gen(function*() {
      const { transferer } = yield* setup()
      assert.deepStrictEqual(yield* transferer.transfer(cold("tel:+15550000003")), Transfer.outcome("NoAnswer", "sip status 480: Temporarily Unavailable"))
      assert.deepStrictEqual(yield* transferer.transfer(cold("tel:+15550000004")), Transfer.outcome("Declined", "sip status 603: Decline"))
    }).pipe(Effect.scoped))

  it.live("a wrong API secret is Failed with the server's refusal, not a SIP outcome", () =>
    Effect.gen(function*() {
      const { fake, transferer } = yield* setup("another-secret-that-is-long-enough-for-hs256")
      const result = yield* transferer.transfer(cold("tel:+15550000001"))
      assert.strictEqual(result._tag, "Failed")
      assert.include(result.reason, "permissions denied")
      assert.strictEqual(fake.received.length, 0)
    }).pipe(Effect.scoped))

  it.live("warm transfer: the person is a second SIP participant dialed into the room (wait until answered, briefing as metadata): answered, then busy", () =>
    Effect.gen(function*() {
      const { fake, transferer } = yield* setup()
      const warm = (to: string): Transfer.TransferRequest => ({ _tag: "Warm", to, ringTimeout: Duration.seconds(20), briefing: "Jane wants a quote.", acceptTimeout: Duration.seconds(60) })
      assert.deepStrictEqual(yield* transferer.transfer(warm("+15550000001")), Transfer.outcome("Answered", "transfer-15550000001 answered"))
      assert.deepStrictEqual(yield* transferer.transfer(warm("+15550000002")), Transfer.outcome("Busy", "sip status 486: Busy Here"))
      const request = fake.received[0]!.request as CreateSIPParticipantRequest
      assert.deepStrictEqual(
        [request.sipTrunkId, request.roomName, request.waitUntilAnswered, request.playDialtone, JSON.parse(request.participantMetadata)],
        ["ST_outbound", "call-42", true, true, { briefing: "Jane wants a quote." }]
      )
    }).pipe(Effect.scoped))
})
