/**
 * The fake LiveKit dispatch server (test/mocks/livekit/FakeServer.ts) answers as LiveKit does
 * (issue 40 item 4): `serverInfo` in `RegisterWorkerResponse`, `agentName` and `dispatchId` on the
 * job, `url` in `JobAssignment`, and a job offered only to a worker registered under its agent
 * name. Driven by raw protobuf workers.
 */
import { assert, describe, it } from "@effect/vitest"
import { AvailabilityResponse, JobType, RegisterWorkerRequest, ServerMessage, WorkerMessage } from "@livekit/protocol"
import { Effect } from "effect"
import { AccessToken } from "livekit-server-sdk"
import { WebSocket } from "ws"
import * as FakeServer from "./livekit/FakeServer.ts"

const KEY = "APIdispatch"
const SECRET = "dispatch-secret-0123456789abcdef0123456789"

/** A raw worker: registers as `agentName`, accepts every offer, keeps what the server sends. */
const rawWorker = (url: string, agentName: string) =>
  Effect.promise(async () => {
    const token = new AccessToken(KEY, SECRET, { identity: `worker-${agentName}` })
    token.addGrant({ agent: true })
    const ws = new WebSocket(`${url}/agent`, { headers: { Authorization: `Bearer ${await token.toJwt()}` } })
    const got: Array<ServerMessage["message"]> = []
    ws.on("message", (data: Buffer) => {
      const msg = ServerMessage.fromBinary(new Uint8Array(data)).message
      got.push(msg)
      if (msg.case === "availability" && msg.value.job) {
        const answer = new AvailabilityResponse({ jobId: msg.value.job.id, available: true, participantIdentity: `agent-${agentName}` })
        ws.send(new WorkerMessage({ message: { case: "availability", value: answer } }).toBinary())
      }
    })
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject))
    const register = new RegisterWorkerRequest({ type: JobType.JT_ROOM, agentName, version: "raw" })
    ws.send(new WorkerMessage({ message: { case: "register", value: register } }).toBinary())
    return { ws, got }
  })

describe("fake LiveKit dispatch server", () => {
  it.live("issue 40 item 4: serverInfo on register; a job goes only to its agent's worker, with agentName, dispatchId and the room URL", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const front = yield* rawWorker(server.url, "front-desk")
      const back = yield* rawWorker(server.url, "back-office")
      yield* Effect.promise(() => server.waitFor((m) => m.case === "register" && m.value.agentName === "back-office", "both registrations"))
      yield* Effect.promise(() => server.offer("J_1", "room-1", "back-office"))
      yield* Effect.promise(() => server.assign("J_1", "room-1", "back-office"))
      yield* Effect.promise(() => server.offer("J_2", "room-2", "front-desk"))
      yield* Effect.promise(() => server.assign("J_2", "room-2", "front-desk"))
      yield* Effect.promise(() => server.waitFor((m) => m.case === "availability" && m.value.jobId === "J_2", "J_2's answer"))
      yield* Effect.sleep("50 millis")
      const jobsOf = (got: Array<ServerMessage["message"]>, kind: "availability" | "assignment") =>
        got.flatMap((m) => (m.case === kind && m.value.job ? [m.value.job.id] : []))
      assert.deepStrictEqual(jobsOf(back.got, "availability"), ["J_1"])
      assert.deepStrictEqual(jobsOf(front.got, "availability"), ["J_2"])
      assert.deepStrictEqual(jobsOf(back.got, "assignment"), ["J_1"])
      const registered = back.got.find((m) => m.case === "register")
      assert.strictEqual(registered?.case, "register")
      if (registered?.case !== "register") return
      assert.deepInclude(registered.value.serverInfo, { version: "1.9.0", protocol: 16, nodeId: "ND_fake" })
      const assignment = back.got.find((m) => m.case === "assignment")
      if (assignment?.case !== "assignment") return assert.fail("no assignment")
      assert.strictEqual(assignment.value.url, server.url)
      assert.deepInclude(assignment.value.job, { id: "J_1", agentName: "back-office", dispatchId: "AD_J_1" })
      front.ws.close()
      back.ws.close()
    }))

  it.live("issue 40 item 4: a job for an agent name no worker registered is not offered to the others", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: KEY, apiSecret: SECRET })
      const front = yield* rawWorker(server.url, "front-desk")
      yield* Effect.promise(() => server.waitFor((m) => m.case === "register", "registration"))
      const offered = server.offer("J_1", "room-1", "nobody")
      yield* Effect.sleep("200 millis")
      assert.deepStrictEqual(front.got.map((m) => m.case), ["register"])
      // A worker that registers under that name later gets it.
      const late = yield* rawWorker(server.url, "nobody")
      const answer = yield* Effect.promise(() => offered)
      assert.strictEqual(answer.connection, 2)
      assert.isTrue(late.got.some((m) => m.case === "availability"))
      front.ws.close()
      late.ws.close()
    }))
})
