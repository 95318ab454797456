/**
 * OpenAiRealtime under faults of the OpenAI Realtime GA mock (127.0.0.1, live clock): late acks
 * after the client's timeout (seed 001), rejected requests, a close mid-response, noise frames,
 * session expiry with reconnection and re-seeding, and the client closing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Scope } from "effect"
import { OpenAiRealtime, type Options } from "../../../layers/openai/OpenAiRealtime.ts"
import { ChatContext, type ChatItem, message } from "../../../src/ChatContext.ts"
import type { RealtimeError, RealtimeSessionConfig, RealtimeTool } from "../../../services/RealtimeModel.ts"
import * as OpenAIRealtimeMock from "../../mocks/openai-realtime/index.ts"
import { Plan } from "../../mocks/openai-realtime/index.ts"
import { captureLogs, record } from "../google/RealtimeRecorder.ts"

const weather: RealtimeTool = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } } }
}
const user = (id: string, text: string) => message("user", text, { id })
const ctx = (...items: ReadonlyArray<ChatItem>) => ChatContext.make(items)

const open = (
  mock: OpenAIRealtimeMock.OpenAIRealtimeMock,
  config: Partial<RealtimeSessionConfig> = {},
  options: Options = {}
) =>
  Effect.gen(function*() {
    const model = OpenAiRealtime.make({ url: mock.url, apiKey: Redacted.make("sk-test"), ...options })
    const connection = yield* model.connect({ instructions: "Be brief.", tools: [weather], chatContext: ChatContext.empty, ...config })
    const events = yield* record(connection)
    const server = yield* mock.awaitConnection(0)
    return { connection, events, server }
  })

const failure = (exit: Exit.Exit<void, RealtimeError>): RealtimeError | undefined =>
  Exit.isFailure(exit) ? (exit.cause.reasons.find((r) => r._tag === "Fail") as { error: RealtimeError } | undefined)?.error : undefined

describe("OpenAiRealtime faults", () => {
  it.live("seed 001: an item ack after the timeout fails the Ack with timeout, the late ack is dropped, later operations work", () => {
    const lines: Array<string> = []
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        faults: [{ kind: "delayAck", match: (e) => e.type === "conversation.item.create" && (e.item as any)?.id === "msg_late", delayMs: 450 }],
        script: [Plan.say("Still here.")]
      })
      const { connection, events, server } = yield* open(mock, {}, { ackTimeout: "150 millis" })
      const late = yield* connection.updateChatContext(ctx(user("msg_late", "Are you there?")))
      const timedOut = yield* Effect.flip(late.await)
      expect(timedOut.reason).toBe("timeout")
      expect(timedOut.message).toContain("msg_late")
      // other requests go on while the late one is in flight
      yield* (yield* connection.updateSession({ instructions: "Be patient." })).await
      yield* server.awaitSent((f) => f.type === "conversation.item.added" && (f.json as any).item.id === "msg_late", { timeoutMs: 2000 })
      yield* Effect.sleep("30 millis")
      expect(lines.some((l) => l.includes("late acknowledgement dropped") && l.includes("msg_late"))).toBe(true)
      // the late item exists on the server and in the client's mirror: the next diff builds on it
      yield* (yield* connection.updateChatContext(ctx(user("msg_late", "Are you there?"), user("msg_2", "Hello?")))).await
      expect(server.items().map((i) => i.id)).toEqual(["msg_late", "msg_2"])
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(lines.some((l) => l.startsWith("Error") || l.startsWith("Fatal"))).toBe(false)
    }).pipe(captureLogs(lines))
  })

  it.live("a session.updated after the timeout is not taken for the pending next update's ack", () => {
    const lines: Array<string> = []
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const { connection, server } = yield* open(mock, {}, { ackTimeout: "300 millis" })
      yield* server.addFault({ kind: "delayAck", match: "session.update", delayMs: 450, times: 1 })
      yield* server.addFault({ kind: "delayAck", match: "session.update", delayMs: 250, times: 1 })
      const first = yield* connection.updateSession({ instructions: "A" })
      expect((yield* Effect.flip(first.await)).reason).toBe("timeout")
      // B is pending (its answer comes ~250 ms after it was sent) when A's answer arrives late
      const second = yield* connection.updateSession({ instructions: "B" })
      yield* server.awaitSent((f) => f.type === "session.updated" && (f.json as any).session.instructions === "A", { timeoutMs: 2000 })
      yield* Effect.sleep("30 millis")
      expect(lines.some((l) => l.includes("late acknowledgement dropped (session.updated)"))).toBe(true)
      expect(yield* Effect.timeoutOption(second.await, "1 millis")).toMatchObject({ _tag: "None" })
      yield* second.await
      expect(server.session().instructions).toBe("B")
      const third = yield* connection.updateSession({ tools: [] })
      yield* third.await
      expect(server.session().tools).toEqual([])
    }).pipe(captureLogs(lines))
  })

  it.live("an error naming the request fails its Ack with rejected; the mirror forgets a rejected create", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const { connection, events, server } = yield* open(mock)
      yield* server.addFault({
        kind: "reject",
        match: "session.update",
        times: 1,
        with: { code: "invalid_value", message: "Invalid value: 'session.instructions'." }
      })
      const rejected = yield* Effect.flip((yield* connection.updateSession({ instructions: "nope" })).await)
      expect(rejected.reason).toBe("rejected")
      expect(rejected.message).toContain("Invalid value")
      expect(server.session().instructions).not.toBe("nope")
      yield* server.addFault({ kind: "reject", match: "conversation.item.create", times: 1, with: { code: "server_error", message: "try again" } })
      const items = ctx(user("msg_1", "one"))
      expect((yield* Effect.flip((yield* connection.updateChatContext(items)).await)).reason).toBe("rejected")
      yield* (yield* connection.updateChatContext(items)).await // re-created, since the first was refused
      expect(server.items().map((i) => i.id)).toEqual(["msg_1"])
      // an error naming no pending request surfaces as a non-fatal Error event
      yield* connection.createResponse({ toolChoice: { tool: "get_weather" } })
      yield* server.addFault({ kind: "reject", match: "response.create", times: 1, with: { code: "unknown_parameter", message: "Unknown parameter: 'response.foo'." } })
      yield* connection.createResponse()
      const error = yield* events.waitFor((e) => e._tag === "Error")
      expect(error).toMatchObject({ code: "unknown_parameter", fatal: false })
      // account errors are fatal; a cancel racing the end of a response is not an error at all
      yield* server.perform({ type: "error", error: { code: "response_cancel_not_active", message: "Cancellation failed: no active response found" } })
      yield* server.perform({ type: "error", error: { code: "insufficient_quota", message: "You exceeded your current quota." } })
      const fatal = yield* events.waitFor((e) => e._tag === "Error" && e.fatal)
      expect(fatal).toMatchObject({ code: "insufficient_quota", message: "You exceeded your current quota." })
      expect(events.events().filter((e) => e._tag === "Error").length).toBe(2)
    }))

  it.live("the server closing mid-response ends the events with a closed error; pending and later operations fail closed", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script: [Plan.say("This will never finish.", { closeAfter: { events: 4, code: 1011, reason: "upstream failure" } })]
      })
      const { connection, events, server } = yield* open(mock)
      yield* server.addFault({ kind: "dropAck", match: "session.update" })
      const pending = yield* connection.updateSession({ instructions: "never acknowledged" })
      yield* connection.createResponse()
      const exit = yield* events.ended()
      const error = failure(exit)
      expect(error?.reason).toBe("closed")
      expect(error?.message).toContain("1011")
      expect(error?.message).toContain("upstream failure")
      expect(events.tags()[0]).toBe("ResponseStarted")
      expect((yield* Effect.flip(pending.await)).reason).toBe("closed")
      expect((yield* Effect.flip(connection.updateSession({ instructions: "x" }))).reason).toBe("closed")
      expect((yield* Effect.flip(connection.pushAudio(new Uint8Array(480)))).reason).toBe("closed")
      expect((yield* Effect.flip(connection.createResponse())).reason).toBe("closed")
      expect(mock.connectionCount()).toBe(1) // no reconnection for a plain close
    }))

  it.live("unknown events and malformed frames are logged and skipped", () => {
    const lines: Array<string> = []
    return Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        noise: { unknownEvery: 2, malformedEvery: 3 },
        script: [Plan.say("one two three four five", { audioMs: 500 }), Plan.say("again")]
      })
      const { connection, events, server } = yield* open(mock)
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      for (const kind of ["binary-garbage", "not-object", "missing-type", "invalid-json", "unknown"] as const) yield* server.sendNoise(kind)
      yield* server.send({ type: "response.output_audio.delta", response_id: 42 })
      const from = events.events().length
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone", { from })
      const text = events.events().flatMap((e) => (e._tag === "TranscriptDelta" ? [e.delta] : [])).join("")
      expect(text).toBe("one two three four fiveagain")
      expect(lines.some((l) => l.includes("unknown server event mock.unknown_event"))).toBe(true)
      expect(lines.some((l) => l.includes("malformed server frame skipped (not JSON)"))).toBe(true)
      expect(lines.some((l) => l.includes("binary frame"))).toBe(true)
      expect(lines.some((l) => l.includes("response.output_audio.delta with an unexpected shape"))).toBe(true)
      expect(events.tags()).not.toContain("Error")
    }).pipe(captureLogs(lines))
  })

  it.live("session expiry: reconnect, re-configure and re-seed the held items, emit Reconnected, go on", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script: [
          Plan.sayThenCall("Checking.", "get_weather", { city: "Rome" }),
          Plan.say("Sunny in Rome.")
        ]
      })
      const { connection, events, server } = yield* open(mock, {
        chatContext: ctx(message("system", "VIP caller.", { id: "msg_s" }), user("msg_1", "Weather in Rome?"))
      })
      yield* (yield* connection.updateSession({ instructions: "Be very brief." })).await
      yield* connection.createResponse()
      const call = yield* events.waitFor((e) => e._tag === "FunctionCall")
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      if (call._tag !== "FunctionCall") return
      const before = server.items().map((i) => [i.id, i.type])
      yield* server.expire
      // an operation issued during the reconnection waits for it, then goes to the new socket
      const during = yield* connection.updateChatContext(
        ctx(
          message("system", "VIP caller.", { id: "msg_s" }),
          user("msg_1", "Weather in Rome?"),
          message("assistant", "Checking.", { id: before[2]![0]! }),
          { _tag: "FunctionCall", id: "fc_1", callId: call.callId, name: call.name, arguments: call.arguments },
          user("msg_2", "Quickly please")
        )
      )
      yield* events.waitFor((e) => e._tag === "Reconnected")
      yield* during.await
      expect(mock.connectionCount()).toBe(2)
      const next = yield* mock.awaitConnection(1)
      expect(next.session().instructions).toBe("Be very brief.")
      expect(next.session().tools.map((t) => t.name)).toEqual(["get_weather"])
      expect(next.items().map((i) => [i.id, i.type])).toEqual([...before, ["msg_2", "message"]])
      expect(next.items()[2]!.content).toEqual([{ type: "output_text", text: "Checking." }])
      // the call made before the expiry can still be answered, and the model replies on the new socket
      yield* (yield* connection.sendToolOutput({ callId: call.callId, name: call.name, output: "sunny", isError: false })).await
      const from = events.events().length
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone", { from })
      expect(events.tags().indexOf("Reconnected")).toBeLessThan(from)
      expect(events.tags()).not.toContain("Error")
      expect(next.receivedTypes().at(-1)).toBe("response.create")
    }))

  it.live("session expiry without reconnection ends the stream with a closed error", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const { connection, events, server } = yield* open(mock, {}, { reconnectOnExpiry: false })
      yield* server.expire
      const error = failure(yield* events.ended())
      expect(error?.reason).toBe("closed")
      expect(error?.message).toContain("maximum duration")
      expect((yield* Effect.flip(connection.commitAudio)).reason).toBe("closed")
      expect(mock.connectionCount()).toBe(1)
    }))

  it.live("closing the scope closes the socket, ends the events, and later operations fail closed", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const scope = yield* Scope.make()
      const model = OpenAiRealtime.make({ url: mock.url })
      const connection = yield* model.connect({ instructions: "x", tools: [], chatContext: ChatContext.empty }).pipe(Scope.provide(scope))
      const events = yield* record(connection)
      const server = yield* mock.awaitConnection(0)
      yield* server.addFault({ kind: "dropAck", match: "session.update" })
      const pending = yield* connection.updateSession({ instructions: "y" })
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isSuccess(yield* events.ended())).toBe(true)
      expect((yield* Effect.flip(pending.await)).reason).toBe("closed")
      expect((yield* Effect.flip(connection.cancelResponse())).reason).toBe("closed")
      const closed = yield* server.awaitClose()
      expect(closed).toMatchObject({ by: "client", code: 1000 })
    }))

  it.live("a refused or silent handshake fails connect with a clear reason", () =>
    Effect.gen(function*() {
      const refused = yield* OpenAIRealtimeMock.make({ onConnect: () => ({ kind: "reject", status: 503 }) })
      const e1 = yield* OpenAiRealtime.make({ url: refused.url }).connect({ instructions: "", tools: [], chatContext: ChatContext.empty })
        .pipe(Effect.scoped, Effect.flip)
      expect(e1).toMatchObject({ reason: "connect" })
      expect(e1.message).toContain("503")
      const silent = yield* OpenAIRealtimeMock.make({ onConnect: () => ({ kind: "silent" }) })
      const e2 = yield* OpenAiRealtime.make({ url: silent.url, connectTimeout: "200 millis" })
        .connect({ instructions: "", tools: [], chatContext: ChatContext.empty })
        .pipe(Effect.scoped, Effect.flip)
      expect(e2.reason).toBe("timeout")
      const rejecting = yield* OpenAIRealtimeMock.make({
        faults: [{ kind: "reject", match: "session.update", with: { code: "invalid_value", message: "bad session" } }]
      })
      const e3 = yield* OpenAiRealtime.make({ url: rejecting.url }).connect({ instructions: "", tools: [], chatContext: ChatContext.empty })
        .pipe(Effect.scoped, Effect.flip)
      expect(e3.reason).toBe("rejected")
      expect(e3.message).toContain("bad session")
    }))
})
