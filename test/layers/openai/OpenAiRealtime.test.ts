/**
 * OpenAiRealtime against the OpenAI Realtime GA mock (127.0.0.1, live clock): the handshake, audio
 * responses, the function-call round trip (no reply without `createResponse`), session and chat
 * context updates as the server sees them, pipelining, truncation, audio input, and the layers.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import { CAPABILITIES, OpenAiRealtime, type Options } from "../../../layers/openai/OpenAiRealtime.ts"
import {
  ChatContext,
  type ChatItem,
  functionCall,
  functionCallOutput,
  message
} from "../../../src/ChatContext.ts"
import { RealtimeModel, type RealtimeSessionConfig, type RealtimeTool } from "../../../services/RealtimeModel.ts"
import { PCM16_24K, synthesize } from "../../mocks/shared/audio.ts"
import * as OpenAIRealtimeMock from "../../mocks/openai-realtime/index.ts"
import { Plan, type ScriptContext } from "../../mocks/openai-realtime/index.ts"
import { captureLogs, record } from "../google/RealtimeRecorder.ts"

const KEY = "sk-test-SECRET-9b1c77e2a4"

const weather: RealtimeTool = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}
const clock: RealtimeTool = { name: "get_time", description: "Current time", parameters: { type: "object", properties: {} } }

const user = (id: string, text: string) => message("user", text, { id })
const assistant = (id: string, text: string) => message("assistant", text, { id })
const ctx = (...items: ReadonlyArray<ChatItem>) => ChatContext.make(items)

const open = (
  mock: OpenAIRealtimeMock.OpenAIRealtimeMock,
  config: Partial<RealtimeSessionConfig> = {},
  options: Options = {}
) =>
  Effect.gen(function*() {
    const model = OpenAiRealtime.make({ url: mock.url, apiKey: Redacted.make(KEY), ...options })
    const connection = yield* model.connect({
      instructions: "You are a concise assistant.",
      tools: [weather],
      chatContext: ChatContext.empty,
      ...config
    })
    const events = yield* record(connection)
    const server = yield* mock.awaitConnection(0)
    return { connection, events, server }
  })

const count = (types: ReadonlyArray<string>, type: string) => types.filter((t) => t === type).length

describe("OpenAiRealtime", () => {
  it.live("connect: session.update then the seeded items, in order, with baton ids; capabilities", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ apiKey: KEY })
      const seed = ctx(
        message("system", "The caller is a VIP.", { id: "msg_s" }),
        user("msg_1", "Hello"),
        assistant("msg_2", "Hi, how can I help?")
      )
      const { connection, server } = yield* open(mock, { chatContext: seed, toolChoice: "required" })
      expect(connection.provider).toBe("openai")
      expect(connection.model).toBe("gpt-realtime")
      expect(connection.capabilities).toEqual(CAPABILITIES)
      expect(server.info.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(server.receivedTypes()).toEqual([
        "session.update",
        "conversation.item.create",
        "conversation.item.create",
        "conversation.item.create"
      ])
      const session = server.session()
      expect(session.instructions).toBe("You are a concise assistant.")
      expect(session.tools.map((t) => t.name)).toEqual(["get_weather"])
      expect(session.tool_choice).toBe("required")
      expect(session.output_modalities).toEqual(["audio"])
      expect(session.audio.input.format).toEqual({ type: "audio/pcm", rate: 24000 })
      expect(session.audio.output.format).toEqual({ type: "audio/pcm", rate: 24000 })
      expect(session.audio.input.turn_detection).toMatchObject({ type: "server_vad", create_response: true })
      expect(session.audio.input.transcription).toEqual({ model: "gpt-4o-mini-transcribe" })
      expect(server.items().map((i) => [i.id, i.role])).toEqual([
        ["msg_s", "system"],
        ["msg_1", "user"],
        ["msg_2", "assistant"]
      ])
      expect(server.items()[2]!.content).toEqual([{ type: "output_text", text: "Hi, how can I help?" }])
    }))

  it.live("an audio response: ResponseStarted, transcript and PCM16 24 kHz deltas, ResponseDone with usage", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ script: [Plan.say("The answer is four.", { audioMs: 300 })] })
      const { connection, events } = yield* open(mock)
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      const all = events.events()
      expect(all[0]!._tag).toBe("ResponseStarted")
      expect(all.at(-1)!._tag).toBe("ResponseDone")
      const started = all[0] as Extract<typeof all[number], { _tag: "ResponseStarted" }>
      const audio = all.filter((e) => e._tag === "AudioDelta")
      const transcript = all.flatMap((e) => (e._tag === "TranscriptDelta" ? [e.delta] : [])).join("")
      expect(transcript).toBe("The answer is four.")
      expect(audio.length).toBe(3)
      expect(audio.every((e) => e.responseId === started.responseId && e.sampleRate === 24000)).toBe(true)
      expect(audio.reduce((n, e) => n + e.pcm.byteLength, 0)).toBe(300 * 48)
      const done = all.at(-1) as Extract<typeof all[number], { _tag: "ResponseDone" }>
      expect(done).toMatchObject({ responseId: started.responseId, status: "completed" })
      expect(done.usage!.outputTokens).toBeGreaterThan(0)
      expect(done.usage!.inputTokens).toBeGreaterThan(0)
    }))

  it.live("function call round trip: FunctionCall event, no reply until createResponse", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script: [Plan.call("get_weather", { city: "Paris" }, { callId: "call_w1" }), Plan.say("It is sunny in Paris.")]
      })
      const { connection, events, server } = yield* open(mock, { tools: [weather, clock] })
      yield* connection.createResponse()
      const call = yield* events.waitFor((e) => e._tag === "FunctionCall")
      expect(call).toMatchObject({ _tag: "FunctionCall", callId: "call_w1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" })
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      const ack = yield* connection.sendToolOutput({ callId: "call_w1", name: "get_weather", output: "{\"temp\":21}", isError: false })
      yield* ack.await
      const output = server.items().at(-1)!
      expect(output).toMatchObject({ type: "function_call_output", call_id: "call_w1", output: "{\"temp\":21}" })
      yield* Effect.sleep("250 millis")
      expect(count(server.sentTypes(), "response.created")).toBe(1) // the server never answers a tool output by itself
      const from = events.events().length
      yield* connection.createResponse({ toolChoice: "none", instructions: "Mention the temperature." })
      yield* events.waitFor((e) => e._tag === "ResponseDone", { from })
      const text = events.events().slice(from).flatMap((e) => (e._tag === "TranscriptDelta" ? [e.delta] : [])).join("")
      expect(text).toBe("It is sunny in Paris.")
      const create = server.clientEvents().filter((e) => e.type === "response.create").at(-1)!
      expect(create.response).toEqual({
        tool_choice: "none",
        instructions: "You are a concise assistant.\n\nMention the temperature."
      })
      // an error output is wrapped, and a forced tool choice uses the object form
      yield* (yield* connection.sendToolOutput({ callId: "call_w1", name: "get_weather", output: "boom", isError: true })).await.pipe(
        Effect.flip,
        Effect.map((e) => expect(e.reason).toBe("rejected")) // same item id: the server refuses a duplicate
      )
      yield* connection.createResponse({ toolChoice: { tool: "get_time" } })
      const forced = yield* server.awaitReceived((f) => f.type === "response.create" && JSON.stringify(f.json).includes("get_time"))
      expect((forced.json as any).response.tool_choice).toEqual({ type: "function", name: "get_time" })
    }))

  it.live("updateSession and updateChatContext are reflected in the server's state", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const { connection, server } = yield* open(mock, { chatContext: ctx(user("msg_1", "Hello")) })
      yield* (yield* connection.updateSession({ instructions: "Speak French.", tools: [clock], toolChoice: { tool: "get_time" } })).await
      expect(server.session()).toMatchObject({
        instructions: "Speak French.",
        tool_choice: { type: "function", name: "get_time" }
      })
      expect(server.session().tools.map((t) => t.name)).toEqual(["get_time"])
      const call = functionCall({ callId: "call_9", name: "get_time", arguments: "{}" })
      const output = functionCallOutput({ callId: "call_9", name: "get_time", output: "12:00", isError: false, status: "ok" })
      const full = ctx(user("msg_1", "Hello"), assistant("msg_2", "Bonjour"), call, output, user("msg_3", "Merci"))
      yield* (yield* connection.updateChatContext(full)).await
      expect(server.items().map((i) => i.id)).toEqual(["msg_1", "msg_2", call.id, output.id, "msg_3"])
      expect(server.items().map((i) => i.type)).toEqual(["message", "message", "function_call", "function_call_output", "message"])
      // deletes and an insertion in the middle
      const note = message("system", "Be formal.", { id: "msg_n" })
      yield* (yield* connection.updateChatContext(ctx(user("msg_1", "Hello"), note, user("msg_3", "Merci"), user("msg_4", "Au revoir")))).await
      expect(server.items().map((i) => i.id)).toEqual(["msg_1", "msg_n", "msg_3", "msg_4"])
      expect(server.items()[1]!.role).toBe("system")
      // a reordering keeps the longest ordered run and moves the rest
      yield* (yield* connection.updateChatContext(ctx(user("msg_3", "Merci"), user("msg_1", "Hello"), note, user("msg_4", "Au revoir")))).await
      expect(server.items().map((i) => i.id)).toEqual(["msg_3", "msg_1", "msg_n", "msg_4"])
      // the same context again writes nothing; an id too long for the provider is hashed
      const before = server.received().length
      const same = ctx(user("msg_3", "Merci"), user("msg_1", "Hello"), note, user("msg_4", "Au revoir"))
      yield* (yield* connection.updateChatContext(same)).await
      expect(server.received().length).toBe(before)
      const long = user("m".repeat(40), "A long id")
      yield* (yield* connection.updateChatContext(same.append(long))).await
      const hashed = server.items().at(-1)!.id
      expect(hashed).toMatch(/^bt_[0-9a-f]{16}$/)
      yield* (yield* connection.updateChatContext(same.append(long))).await
      expect(server.items().length).toBe(5)
    }))

  it.live("server-created items are kept when the context names them (item id, or call id for calls)", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script: [Plan.sayThenCall("Let me check.", "get_weather", { city: "Oslo" })]
      })
      const { connection, events, server } = yield* open(mock, { chatContext: ctx(user("msg_1", "Weather in Oslo?")) })
      yield* connection.createResponse()
      const call = yield* events.waitFor((e) => e._tag === "FunctionCall")
      const spoken = yield* events.waitFor((e) => e._tag === "TranscriptDelta")
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      if (call._tag !== "FunctionCall" || spoken._tag !== "TranscriptDelta") return
      const serverIds = server.items().map((i) => i.id)
      const before = server.received().length
      const batonCall = functionCall({ callId: call.callId, name: call.name, arguments: call.arguments })
      yield* (yield* connection.updateChatContext(ctx(user("msg_1", "Weather in Oslo?"), assistant(spoken.itemId, "Let me check."), batonCall))).await
      expect(server.received().length).toBe(before)
      expect(server.items().map((i) => i.id)).toEqual(serverIds)
      const out = functionCallOutput({ callId: call.callId, name: call.name, output: "cold", isError: false, status: "ok" })
      yield* (yield* connection.updateChatContext(ctx(user("msg_1", "Weather in Oslo?"), assistant(spoken.itemId, "Let me check."), batonCall, out))).await
      expect(server.items().map((i) => i.id)).toEqual([...serverIds, out.id])
    }))

  it.live("pipelining: updates and createResponse are written without waiting for acks, and applied in order", () =>
    Effect.gen(function*() {
      const seen: Array<{ instructions: string; last: string | undefined }> = []
      // a round trip long enough that awaiting one is told from a loaded machine's slowness
      const mock = yield* OpenAIRealtimeMock.make({
        roundTripMs: 1_000,
        script: (c: ScriptContext) => {
          seen.push({ instructions: c.instructions, last: c.lastUserText })
          return Plan.say("D'accord.")
        }
      })
      const { connection, events, server } = yield* open(mock, { chatContext: ctx(user("msg_1", "Hello")) })
      const t0 = performance.now()
      const a1 = yield* connection.updateSession({ instructions: "Speak French." })
      const a2 = yield* connection.updateChatContext(ctx(user("msg_1", "Hello"), user("msg_2", "Bonjour")))
      yield* connection.createResponse()
      expect(performance.now() - t0).toBeLessThan(500) // no round trip awaited
      yield* a1.await
      yield* a2.await
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(server.receivedTypes().slice(-3)).toEqual(["session.update", "conversation.item.create", "response.create"])
      expect(seen).toEqual([{ instructions: "Speak French.", last: "Bonjour" }])
    }))

  it.live("truncate cuts a played assistant item; audio in: append, commit, clear; server VAD turns", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script: [Plan.say("A rather long answer to cut.", { audioMs: 1000 }), Plan.say("You asked the time.")]
      })
      const { connection, events, server } = yield* open(mock)
      yield* connection.createResponse()
      const delta = yield* events.waitFor((e) => e._tag === "AudioDelta")
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      if (delta._tag !== "AudioDelta") return
      yield* connection.truncate(delta.itemId, 300)
      const truncated = yield* server.awaitSent("conversation.item.truncated")
      expect(truncated.json).toMatchObject({ item_id: delta.itemId, audio_end_ms: 300 })
      yield* connection.pushAudio(synthesize(PCM16_24K, 500))
      yield* server.awaitReceived("input_audio_buffer.append")
      yield* Effect.sleep("20 millis")
      expect(server.inputBufferedMs()).toBe(500)
      yield* connection.clearAudio
      yield* server.awaitSent("input_audio_buffer.cleared")
      yield* connection.commitAudio
      yield* server.awaitReceived("input_audio_buffer.commit")
      const from = events.events().length
      yield* server.userSpeaks({ transcript: "What time is it?" })
      yield* events.waitFor((e) => e._tag === "ResponseDone", { from })
      const tags = events.tags().slice(from)
      expect(tags.slice(0, 2)).toEqual(["SpeechStarted", "SpeechStopped"])
      expect(tags).toContain("ResponseStarted")
      const transcript = yield* events.waitFor((e) => e._tag === "InputTranscript" && e.final, { from })
      expect(transcript).toMatchObject({ text: "What time is it?", final: true })
      // nothing was played of an item: it is deleted instead (the API refuses audio_end_ms 0)
      yield* connection.truncate(delta.itemId, 0)
      yield* server.awaitSent((f) => f.type === "conversation.item.deleted")
      expect(server.items().some((i) => i.id === delta.itemId)).toBe(false)
    }))

  it.live("cancelResponse and barge-in: ResponseDone cancelled, Interrupted only when the user spoke over it; text deltas", () =>
    Effect.gen(function*() {
      const long = Plan.say("a b c d e f g h i j", { audioMs: 3000, deltaIntervalMs: 20 })
      const mock = yield* OpenAIRealtimeMock.make({ script: [long, long] })
      const { connection, events, server } = yield* open(mock)
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "AudioDelta")
      yield* connection.cancelResponse()
      const cancelled = yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(cancelled).toMatchObject({ status: "cancelled" })
      expect(events.tags()).not.toContain("Interrupted")
      const from = events.events().length
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "AudioDelta", { from })
      yield* server.userSpeaks({ durationMs: 300, transcript: "stop" })
      const interrupted = yield* events.waitFor((e) => e._tag === "Interrupted", { from })
      const done = yield* events.waitFor((e) => e._tag === "ResponseDone", { from })
      expect(done).toMatchObject({ status: "cancelled" })
      expect(interrupted).toEqual({ _tag: "Interrupted", responseId: (done as { responseId: string }).responseId })
      yield* server.send({ type: "response.output_text.delta", response_id: "resp_t", item_id: "item_t", output_index: 0, content_index: 0, delta: "txt" })
      expect(yield* events.waitFor((e) => e._tag === "TextDelta")).toEqual({ _tag: "TextDelta", responseId: "resp_t", itemId: "item_t", delta: "txt" })
    }))

  it.live("rule 8: a cancel names its response: one that arrives after that response ended cannot cut the next answer", () =>
    Effect.gen(function*() {
      const long = Plan.say("a b c d e f g h", { audioMs: 2000, deltaIntervalMs: 20 })
      const mock = yield* OpenAIRealtimeMock.make({ script: [Plan.say("first"), long] })
      const { connection, events, server } = yield* open(mock)
      yield* connection.createResponse()
      const first = yield* events.waitFor((e) => e._tag === "ResponseStarted")
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      // The server starts its next answer; the cancel for the first one only now goes out.
      const from = events.events().length
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "AudioDelta", { from })
      const firstId = (first as { responseId: string }).responseId
      yield* connection.cancelResponse(firstId)
      const cancel = yield* server.awaitReceived((f) => f.type === "response.cancel")
      expect(cancel.json).toMatchObject({ response_id: firstId })
      // Refused as not active (no Error event: a cancel racing the end of its response), and
      // the answer in progress plays to its end.
      yield* server.awaitSent((f) => f.type === "error")
      const done = yield* events.waitFor((e) => e._tag === "ResponseDone", { from })
      expect(done).toMatchObject({ status: "completed" })
      expect(events.tags()).not.toContain("Error")
    }))

  it.live("a response.create refused because the server's own response is active is no Error event (that response serves it)", () =>
    Effect.gen(function*() {
      const long = Plan.say("a b c d e f", { audioMs: 1000, deltaIntervalMs: 20 })
      const mock = yield* OpenAIRealtimeMock.make({ script: [long, long] })
      const { connection, events, server } = yield* open(mock)
      // The server answers a spoken turn by itself; the client asks for a response meanwhile.
      yield* server.userSpeaks({ durationMs: 300, transcript: "hello" })
      yield* events.waitFor((e) => e._tag === "ResponseStarted")
      yield* connection.createResponse()
      const refused = yield* server.awaitSent((f) => f.type === "error")
      expect(refused.json).toMatchObject({ error: { code: "conversation_already_has_active_response" } })
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(events.tags()).not.toContain("Error")
      expect(events.tags().filter((t) => t === "ResponseStarted")).toHaveLength(1)
    }))

  it.live("layerConfig: key from OPENAI_API_KEY (never logged), URL from OPENAI_REALTIME_URL; missing key refused", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const mock = yield* OpenAIRealtimeMock.make({ apiKey: KEY, script: [Plan.say("hi")] })
      const env = ConfigProvider.layer(ConfigProvider.fromUnknown({ OPENAI_API_KEY: KEY, OPENAI_REALTIME_URL: mock.url }))
      const run = Effect.gen(function*() {
        const info = yield* OpenAiRealtime
        expect(info).toEqual({ model: "gpt-realtime", url: mock.url, hasApiKey: true })
        const model = yield* RealtimeModel
        expect(model.capabilities.autoToolReply).toBe(false)
        const connection = yield* model.connect({ instructions: "x", tools: [], chatContext: ChatContext.empty })
        const events = yield* record(connection)
        yield* connection.createResponse()
        yield* events.waitFor((e) => e._tag === "ResponseDone")
      }).pipe(Effect.provide(OpenAiRealtime.layerConfig.pipe(Layer.provide(env))), captureLogs(lines))
      yield* run
      expect((yield* mock.awaitConnection(0)).info.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(lines.length).toBeGreaterThan(0)
      expect(lines.some((l) => l.includes(KEY))).toBe(false)
      const missing = yield* Layer.build(OpenAiRealtime.layerConfig).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({}))),
        Effect.scoped,
        Effect.flip
      )
      expect(String(missing)).toContain("OPENAI_API_KEY")
      // a wrong key: the handshake is refused, the error names the status but not the key
      const refused = yield* OpenAiRealtime.make({ url: mock.url, apiKey: Redacted.make("sk-wrong-key") })
        .connect({ instructions: "x", tools: [], chatContext: ChatContext.empty })
        .pipe(Effect.scoped, Effect.flip)
      expect(refused.reason).toBe("connect")
      expect(refused.message).toContain("401")
      expect(refused.message).not.toContain("sk-wrong-key")
    }))
})
