/**
 * GeminiLive under faults of the Gemini Live mock (127.0.0.1, live clock): a late or refused
 * setupComplete, error close frames, a close mid-response, noise and binary frames, goAway with
 * session resumption (resumed, fresh and re-seeded, refused handle, mid-turn), cancelled tool calls.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Redacted } from "effect"
import { GeminiLive, type Options } from "../../../layers/google/GeminiLive.ts"
import { ChatContext, type ChatItem, message } from "../../../src/ChatContext.ts"
import type { RealtimeError, RealtimeEvent, RealtimeSessionConfig } from "../../../services/RealtimeModel.ts"
import * as GeminiLiveMock from "../../mocks/gemini-live/index.ts"
import { GeminiPlan } from "../../mocks/gemini-live/index.ts"
import { captureLogs, eventually, record } from "./RealtimeRecorder.ts"

const user = (id: string, text: string) => message("user", text, { id })
const ctx = (...items: ReadonlyArray<ChatItem>) => ChatContext.make(items)
const config = (extra: Partial<RealtimeSessionConfig> = {}): RealtimeSessionConfig => ({
  instructions: "Be brief.",
  tools: [{ name: "lookup", description: "Look something up", parameters: { type: "object", properties: {} } }],
  chatContext: ChatContext.empty,
  ...extra
})

const open = (mock: GeminiLiveMock.GeminiLiveMock, extra: Partial<RealtimeSessionConfig> = {}, options: Options = {}) =>
  Effect.gen(function*() {
    const connection = yield* GeminiLive.make({ url: mock.url, apiKey: Redacted.make("k"), ...options }).connect(config(extra))
    const events = yield* record(connection)
    const server = yield* mock.awaitConnection(0)
    return { connection, events, server }
  })

const failure = (exit: Exit.Exit<void, RealtimeError>): RealtimeError | undefined =>
  Exit.isFailure(exit) ? (exit.cause.reasons.find((r) => r._tag === "Fail") as { error: RealtimeError } | undefined)?.error : undefined

const said = (events: ReadonlyArray<RealtimeEvent>) =>
  events.flatMap((e) => (e._tag === "TranscriptDelta" ? [e.delta] : [])).join("")

describe("GeminiLive faults", () => {
  it.live("a setupComplete after the timeout fails connect with timeout, is dropped, and the next connect works", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        faults: [{ kind: "delayAck", match: "setup", delayMs: 400, times: 1 }],
        script: [GeminiPlan.say("Fine.")]
      })
      const model = GeminiLive.make({ url: mock.url, ackTimeout: "150 millis" })
      const late = yield* Effect.flip(Effect.scoped(model.connect(config())))
      expect(late.reason).toBe("timeout")
      expect(late.message).toContain("setupComplete")
      yield* Effect.sleep("400 millis") // past the late answer
      const connection = yield* model.connect(config())
      const events = yield* record(connection)
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(said(events.events())).toBe("Fine.")
      expect(mock.connectionCount()).toBe(2)
      expect(mock.internalErrors()).toEqual([])
    }))

  it.live("a refused setup (close 1008) fails connect with rejected and the server's reason", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ knownModels: ["models/some-other-model"] })
      const refused = yield* Effect.flip(Effect.scoped(GeminiLive.make({ url: mock.url }).connect(config())))
      expect(refused.reason).toBe("rejected")
      expect(refused.message).toContain("1008")
      expect(refused.message).toContain("is not found for API version v1beta")
    }))

  it.live("an error close (1007) after a request ends the events with a closed error; later operations fail closed", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make()
      const { connection, events, server } = yield* open(mock)
      yield* server.addFault({ kind: "reject", match: "clientContent", with: { code: 1007, reason: "Request contains an invalid argument." } })
      yield* (yield* connection.updateChatContext(ctx(user("msg_1", "hi")))).await // written: Gemini acknowledges nothing
      const error = failure(yield* events.ended())
      expect(error?.reason).toBe("closed")
      expect(error?.message).toContain("1007")
      expect(error?.message).toContain("invalid argument")
      expect((yield* Effect.flip(connection.createResponse())).reason).toBe("closed")
      expect((yield* Effect.flip(connection.sendToolOutput({ callId: "c", name: "lookup", output: "", isError: false }))).reason).toBe("closed")
    }))

  it.live("the server closing mid-response ends the events with a closed error", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        script: [GeminiPlan.say("one two three four five six", { closeAfter: { messages: 3, code: 1011, reason: "Internal error encountered." } })]
      })
      const { connection, events } = yield* open(mock)
      yield* connection.createResponse()
      const error = failure(yield* events.ended())
      expect(error).toMatchObject({ reason: "closed" })
      expect(error?.message).toContain("1011")
      expect(events.tags()[0]).toBe("ResponseStarted")
      expect(events.tags()).not.toContain("ResponseDone")
      expect((yield* Effect.flip(connection.pushAudio(new Uint8Array(320)))).reason).toBe("closed")
      expect(mock.connectionCount()).toBe(1)
    }))

  it.live("unknown messages, malformed and binary frames are skipped", () => {
    const lines: Array<string> = []
    return Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        frameEncoding: "binary",
        noise: { unknownEvery: 2, malformedEvery: 3 },
        script: [GeminiPlan.say("alpha beta gamma delta", { audioMs: 400 })]
      })
      const { connection, events, server } = yield* open(mock)
      for (const kind of ["binary-garbage", "not-object", "missing-type", "invalid-json"] as const) yield* server.sendNoise(kind)
      yield* server.send({ serverContent: { modelTurn: { parts: "not a list" } } })
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(said(events.events())).toBe("alpha beta gamma delta")
      expect(lines.some((l) => l.includes("unknown server message (mockUnknownMessage)"))).toBe(true)
      expect(lines.some((l) => l.includes("malformed server frame skipped (not JSON)"))).toBe(true)
      expect(lines.some((l) => l.includes("malformed server frame skipped (serverContent with an unexpected shape)"))).toBe(true)
      expect(events.tags()).not.toContain("Error")
    }).pipe(captureLogs(lines))
  })

  it.live("goAway with a resumption handle: GoAway, a resumed socket, Reconnected; then work goes on there", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script: [GeminiPlan.say("First."), GeminiPlan.say("Second.")] })
      const { connection, events, server } = yield* open(mock, { chatContext: ctx(user("msg_1", "Hello")) })
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      const handle = ((yield* server.awaitSent("sessionResumptionUpdate")).json as any).sessionResumptionUpdate.newHandle
      yield* server.goAway({ timeLeftMs: 1500 })
      expect(yield* events.waitFor((e) => e._tag === "GoAway")).toEqual({ _tag: "GoAway", timeLeftMs: 1500 })
      yield* events.waitFor((e) => e._tag === "Reconnected")
      const next = yield* mock.awaitConnection(1)
      expect((next.clientMessages()[0]!.setup as any).sessionResumption).toEqual({ handle })
      expect(next.resumed()).toBe(true)
      expect(next.history().length).toBe(server.history().length)
      expect((yield* server.awaitClose()).by).toBe("client") // moved before the server's deadline
      const from = events.events().length
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone", { from })
      expect(said(events.events().slice(from))).toBe("Second.")
      expect(next.receivedTypes()).toEqual(["setup", "clientContent"])
    }))

  it.live("goAway during a model turn waits for the turn to end before moving", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        script: [GeminiPlan.say("one two three four five six seven eight", { audioMs: 800, deltaIntervalMs: 25 })]
      })
      const { connection, events, server } = yield* open(mock)
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "AudioDelta")
      yield* server.goAway({ timeLeftMs: 3000 })
      yield* events.waitFor((e) => e._tag === "Reconnected", { timeoutMs: 4000 })
      const tags = events.tags()
      expect(tags.indexOf("ResponseDone")).toBeLessThan(tags.indexOf("Reconnected"))
      expect(events.events().find((e) => e._tag === "ResponseDone")).toMatchObject({ status: "completed" })
      expect(said(events.events())).toBe("one two three four five six seven eight")
    }))

  it.live("goAway without a handle, or with a refused one: a fresh session re-seeded with the history", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script: [GeminiPlan.say("Noted.")] })
      const { connection, events, server } = yield* open(mock, { chatContext: ctx(user("msg_1", "My name is Ada.")) })
      // no turn yet, so no handle: the next socket starts fresh and gets the history again
      yield* server.goAway({ timeLeftMs: 200 })
      yield* events.waitFor((e) => e._tag === "Reconnected")
      const second = yield* mock.awaitConnection(1)
      expect((second.clientMessages()[0]!.setup as any).sessionResumption).toEqual({})
      yield* eventually(() => expect(second.history()).toEqual([{ role: "user", parts: [{ text: "My name is Ada." }] }]))
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      yield* second.awaitSent("sessionResumptionUpdate")
      // the handle expired meanwhile: resuming is refused (1007), so again a fresh, re-seeded session
      yield* mock.invalidateResumptionHandle()
      const from = events.events().length
      yield* second.goAway({ timeLeftMs: 300 })
      yield* events.waitFor((e) => e._tag === "Reconnected", { from })
      expect(mock.connectionCount()).toBe(4)
      const fourth = yield* mock.awaitConnection(3)
      expect(fourth.resumed()).toBe(false)
      yield* eventually(() =>
        expect(fourth.history()).toEqual([
          { role: "user", parts: [{ text: "My name is Ada." }] },
          { role: "model", parts: [{ text: "Noted." }] }
        ])
      )
    }))

  it.live("a late setupComplete on the new socket after goAway: that attempt times out, the next one works", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script: [GeminiPlan.say("Still here.")] })
      const { connection, events, server } = yield* open(mock, {}, { ackTimeout: "150 millis" })
      yield* mock.addFault({ kind: "delayAck", match: "setup", delayMs: 400, times: 1 })
      yield* server.goAway({ timeLeftMs: 2000, closeAfterMs: 100 })
      // issued while the old socket is going away: waits, then goes to the new one
      yield* Effect.sleep("150 millis")
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone", { timeoutMs: 4000 })
      expect(events.tags().indexOf("Reconnected")).toBeLessThan(events.tags().indexOf("ResponseStarted"))
      expect(mock.connectionCount()).toBe(3)
      expect((yield* mock.awaitConnection(2)).receivedTypes()).toEqual(["setup", "clientContent"])
      expect(mock.internalErrors()).toEqual([])
    }))

  it.live("a tool call the server cancelled gets no toolResponse", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make()
      const { connection, events, server } = yield* open(mock)
      yield* server.pushToolCall([{ name: "lookup", args: { q: "x" }, id: "fc_9" }])
      yield* events.waitFor((e) => e._tag === "FunctionCall")
      yield* server.cancelToolCalls(["fc_9"])
      yield* server.awaitSent("toolCallCancellation")
      yield* Effect.sleep("20 millis")
      yield* (yield* connection.sendToolOutput({ callId: "fc_9", name: "lookup", output: "late", isError: false })).await
      yield* Effect.sleep("50 millis")
      expect(server.receivedTypes()).not.toContain("toolResponse")
      expect(server.unmatchedToolResponses()).toEqual([])
    }))
})
