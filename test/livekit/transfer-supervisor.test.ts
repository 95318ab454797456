/**
 * Transfers and supervisors in LiveKit jobs (issue 35). A job on the fake dispatch server whose
 * caller joined through LiveKit SIP transfers through livekit-server-sdk against the fake Twirp
 * SIP service, with the worker's API credentials; a caller that is not a SIP participant, or a
 * job without credentials, gets a `Failed` outcome that says why. A supervisor in the room takes
 * the call over and hands it back with data messages on `baton.supervisor` (rtc-node's loopback
 * room, and the fake server's memory rooms); anyone else's commands are refused.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Schema, Scope } from "effect"
import * as Job from "../../layers/livekit/Job.ts"
import * as LoopbackRoom from "../../layers/livekit/LoopbackRoom.ts"
import type { RoomParticipant } from "../../layers/livekit/Room.ts"
import * as Supervisor from "../../layers/livekit/Supervisor.ts"
import * as Worker from "../../layers/livekit/Worker.ts"
import { RtcNode } from "../../layers/rtc/RtcNode.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentTask, Tool } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"
import { until } from "../helpers.ts"
import * as FakeServer from "../mocks/livekit/FakeServer.ts"
import * as FakeSip from "../mocks/livekit/FakeSip.ts"
import * as MemoryRoom from "../mocks/livekit/MemoryRoom.ts"

const transferTool = Tool.make("transfer", {
  description: "Transfer the caller to a person",
  parameters: Schema.Struct({ to: Schema.String }),
  handler: (args) => AgentTask.run(Transfer.cold(args.to, { ringTimeout: "20 seconds" })).pipe(Effect.map(Transfer.describe))
})
const desk = Agent.make({ name: "desk", instructions: "Help; transfer when asked.", tools: [transferTool] })

/** Each model request's prompt as JSON, and the scripted answers. */
const model = (prompts: Array<string>) =>
  ScriptedModel.layer([
    { when: (request) => (prompts.push(JSON.stringify(request.prompt.content)), false), reply: {} },
    { when: { user: /sales/ }, reply: { toolCalls: [{ name: "transfer", arguments: { to: "tel:+15550000002" } }] } },
    { when: { user: /support/ }, reply: { toolCalls: [{ name: "transfer", arguments: { to: "tel:+15550000001" } }] } },
    { when: { agent: "desk" }, reply: (request) => ({ text: request.last.kind === "tool" ? request.last.outputs.map((o) => o.output).join(" ") : "How can I help?" }) }
  ])

const SIP_CALLER: RoomParticipant = { identity: "sip_+15551230000", name: "Caller", sip: true }
const said = (texts: ReadonlyArray<{ readonly topic: string; readonly text: string }>) => texts.filter((t) => t.topic === "lk.transcription").map((t) => t.text)

/** A worker on the fake dispatch server with the fake SIP service's credentials, running job J_1 in a memory room. */
const jobOnFakeServer = (caller: RoomParticipant, prompts: Array<string>) =>
  Effect.gen(function*() {
    const sip = yield* FakeSip.make({ "tel:+15550000001": 200, "tel:+15550000002": 486 })
    const server = yield* FakeServer.make({ apiKey: FakeSip.API_KEY, apiSecret: FakeSip.API_SECRET })
    const rooms = yield* MemoryRoom.makeWith({ participant: caller })
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const worker = yield* Worker.make({
      url: server.url,
      apiKey: FakeSip.API_KEY,
      apiSecret: Redacted.make(FakeSip.API_SECRET),
      agentName: "front-desk",
      statusIntervalMs: 100,
      drainSeconds: 1,
      job: { agent: desk, sip: { host: sip.url } }
    }).pipe(Scope.provide(scope), Effect.provide(Layer.merge(rooms.layer, model(prompts))))
    yield* worker.registered
    yield* Effect.promise(() => server.offer("J_1"))
    yield* Effect.promise(() => server.assign("J_1"))
    yield* until("the room joined", () => rooms.rooms.get("room-J_1")?.joined === true)
    return { sip, room: rooms.rooms.get("room-J_1")! }
  })

describe("LiveKit SIP transfers wired into jobs", () => {
  it.live("a SIP caller's transfer goes through the server's SIP API with the worker's credentials: busy (486) gives the floor back and the agent says so; answered (200) reaches the tool", () =>
    Effect.gen(function*() {
      const { room, sip } = yield* jobOnFakeServer(SIP_CALLER, [])
      yield* room.chat("sales please")
      yield* until("the agent's words after the busy line", () => said(room.texts).some((t) => t.includes("busy")))
      assert.include(said(room.texts).find((t) => t.includes("busy"))!, "The transfer failed: the line was busy (sip status 486: Busy Here)")
      yield* room.chat("then support")
      yield* until("the answered transfer's output", () => said(room.texts).some((t) => t.startsWith("The transfer was answered")))
      assert.deepStrictEqual(
        sip.received.map((r) => [r.method, r.request.roomName, "participantIdentity" in r.request ? r.request.participantIdentity : "", "transferTo" in r.request ? r.request.transferTo : ""]),
        [
          ["TransferSIPParticipant", "room-J_1", SIP_CALLER.identity, "tel:+15550000002"],
          ["TransferSIPParticipant", "room-J_1", SIP_CALLER.identity, "tel:+15550000001"]
        ]
      )
    }).pipe(Effect.scoped), 30_000)

  it.live("a caller who did not join through SIP cannot be transferred: Failed, saying so, and nothing reaches the SIP API", () =>
    Effect.gen(function*() {
      const { room, sip } = yield* jobOnFakeServer({ identity: "web-user", name: "User" }, [])
      yield* room.chat("sales please")
      yield* until("the tool's output", () => said(room.texts).some((t) => t.startsWith("The transfer could not be made")))
      assert.include(said(room.texts).find((t) => t.startsWith("The transfer could not be made"))!, "web-user did not join through LiveKit SIP")
      assert.strictEqual(sip.received.length, 0)
    }).pipe(Effect.scoped), 30_000)

  it.live("a job run without the server's API credentials: a SIP caller's transfer is Failed naming LIVEKIT_API_KEY and LIVEKIT_API_SECRET", () =>
    Effect.gen(function*() {
      const room = yield* LoopbackRoom.make({ participant: SIP_CALLER })
      yield* Job.run({ id: "J_2", roomName: "loopback", url: "ws://unused", token: Redacted.make("unused") }, { agent: desk }).pipe(
        Effect.provide(room.layer),
        Effect.scoped,
        Effect.forkScoped
      )
      yield* room.chat("sales please")
      yield* until("the tool's output", () => room.texts.some((t) => t.text.startsWith("The transfer could not be made")))
      assert.include(room.texts.find((t) => t.text.startsWith("The transfer could not be made"))!.text, "set LIVEKIT_API_KEY and LIVEKIT_API_SECRET")
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(model([]), RtcNode.layer))), 30_000)
})

const SUPERVISOR: RoomParticipant = { identity: "sup-1", name: "Sam", attributes: {} }
const STRANGER: RoomParticipant = { identity: "caller-2", name: "Eve", attributes: { "baton.role": "caller" } }
const BY_ATTRIBUTE: RoomParticipant = { identity: "sup-2", name: "Ann", attributes: { "baton.role": "supervisor" } }

const replies = (room: LoopbackRoom.Loopback, to: string) =>
  room.data.filter((d) => d.topic === Supervisor.TOPIC && d.to.includes(to)).map((d) => JSON.parse(d.payload))

describe("LiveKit supervisor (loopback room)", () => {
  it.live("a supervisor takes over (the agent says nothing, the caller's words are recorded), whispers and hands back with a note: the agent's next reply sees all of it; a stranger's commands are refused", () =>
    Effect.gen(function*() {
      const prompts: Array<string> = []
      const room = yield* LoopbackRoom.make()
      yield* Job.run({ id: "J_3", roomName: "loopback", url: "ws://unused", token: Redacted.make("unused") }, {
        agent: desk,
        supervisors: { identities: [SUPERVISOR.identity] }
      }).pipe(Effect.provide(Layer.merge(room.layer, model(prompts))), Effect.scoped, Effect.forkScoped)
      yield* room.chat("hello")
      yield* until("the agent's first reply", () => said(room.texts).includes("How can I help?"))

      // Someone who is not a supervisor is refused, and nothing changes.
      yield* room.sendData(STRANGER, Supervisor.TOPIC, JSON.stringify({ type: "takeOver" }))
      yield* until("the refusal", () => replies(room, STRANGER.identity).length === 1)
      assert.deepStrictEqual(replies(room, STRANGER.identity)[0], { type: "error", message: "caller-2 is not a supervisor of this room" })

      yield* room.sendData(SUPERVISOR, Supervisor.TOPIC, JSON.stringify({ type: "takeOver" }))
      yield* until("the take-over's result", () => replies(room, SUPERVISOR.identity).length === 1)
      assert.deepInclude(replies(room, SUPERVISOR.identity)[0], { type: "result", of: "takeOver" })
      const requestsBefore = prompts.length
      yield* room.chat("my card was charged twice")
      yield* room.sendData(SUPERVISOR, Supervisor.TOPIC, JSON.stringify({ type: "say", text: "I see the double charge; refunding one." }))
      yield* until("the say's result", () => replies(room, SUPERVISOR.identity).length === 2)
      assert.deepStrictEqual(replies(room, SUPERVISOR.identity)[1], { type: "result", of: "say" })
      // A whisper needs an agent holding the floor.
      yield* room.sendData(SUPERVISOR, Supervisor.TOPIC, JSON.stringify({ type: "whisper", text: "x" }))
      yield* until("the whisper's refusal", () => replies(room, SUPERVISOR.identity).length === 3)
      assert.strictEqual(replies(room, SUPERVISOR.identity)[2].type, "error")
      assert.strictEqual(prompts.length, requestsBefore, "no model was called while the supervisor held the floor")
      assert.deepStrictEqual(said(room.texts), ["How can I help?", "I see the double charge; refunding one."])

      yield* room.sendData(SUPERVISOR, Supervisor.TOPIC, JSON.stringify({ type: "handBack", note: "The refund is done; ask if anything else is needed." }))
      yield* until("the hand back's result", () => replies(room, SUPERVISOR.identity).length === 4)
      assert.deepInclude(replies(room, SUPERVISOR.identity)[3], { type: "result", of: "handBack" })
      yield* room.chat("thanks")
      yield* until("the agent's reply after the hand back", () => prompts.length > requestsBefore)
      const prompt = prompts.at(-1)!
      assert.include(prompt, "my card was charged twice")
      assert.include(prompt, "I see the double charge; refunding one.")
      assert.include(prompt, "The refund is done; ask if anything else is needed.")
    }).pipe(Effect.scoped, Effect.provide(RtcNode.layer)), 30_000)

  it.live("a participant with the baton.role=supervisor attribute is obeyed; a malformed command gets an error saying what is expected", () =>
    Effect.gen(function*() {
      const room = yield* LoopbackRoom.make()
      yield* Job.run({ id: "J_4", roomName: "loopback", url: "ws://unused", token: Redacted.make("unused") }, { agent: desk, supervisors: {} }).pipe(
        Effect.provide(Layer.merge(room.layer, model([]))),
        Effect.scoped,
        Effect.forkScoped
      )
      yield* room.sendData(BY_ATTRIBUTE, Supervisor.TOPIC, "not json")
      yield* room.sendData(BY_ATTRIBUTE, Supervisor.TOPIC, JSON.stringify({ type: "takeOver" }))
      yield* until("both answers", () => replies(room, BY_ATTRIBUTE.identity).length === 2)
      const [malformed, takeOver] = replies(room, BY_ATTRIBUTE.identity)
      assert.include(malformed.message, "one JSON object with a type (takeOver, handBack, whisper, say)")
      assert.deepInclude(takeOver, { type: "result", of: "takeOver" })
      yield* room.chat("hello?")
      yield* room.sendData(BY_ATTRIBUTE, Supervisor.TOPIC, JSON.stringify({ type: "handBack", agent: "nobody" }))
      yield* until("the refusal", () => replies(room, BY_ATTRIBUTE.identity).length === 3)
      assert.deepStrictEqual(replies(room, BY_ATTRIBUTE.identity)[2], { type: "error", of: "handBack", message: "no agent nobody (expected desk)" })
      assert.deepStrictEqual(said(room.texts), [], "the agent said nothing while Ann held the floor")
    }).pipe(Effect.scoped, Effect.provide(RtcNode.layer)), 30_000)
})
