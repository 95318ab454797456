/**
 * GeminiLive against the Gemini Live mock (127.0.0.1, live clock): setup and seeding, audio
 * responses, the tool round trip, what cannot change (unsupported), append-only chat context,
 * pipelining, audio input and barge-in, and the layers.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import { CAPABILITIES, GeminiLive, type Options } from "../../../layers/google/GeminiLive.ts"
import { ChatContext, type ChatItem, functionCall, functionCallOutput, message } from "../../../src/ChatContext.ts"
import { type RealtimeEvent, RealtimeModel, type RealtimeSessionConfig, type RealtimeTool } from "../../../services/RealtimeModel.ts"
import { PCM16_16K, synthesize } from "../../mocks/shared/audio.ts"
import * as GeminiLiveMock from "../../mocks/gemini-live/index.ts"
import { GeminiPlan } from "../../mocks/gemini-live/index.ts"
import { captureLogs, eventually, record } from "./RealtimeRecorder.ts"

const KEY = "AIza-test-SECRET-5d2e9f"
const MODEL = "models/gemini-2.5-flash-native-audio-preview-12-2025"

const weather: RealtimeTool = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string", description: "City" }, unit: { type: ["string", "null"], enum: ["c", "f"] } },
    required: ["city"],
    additionalProperties: false
  }
}
const user = (id: string, text: string) => message("user", text, { id })
const ctx = (...items: ReadonlyArray<ChatItem>) => ChatContext.make(items)

const open = (mock: GeminiLiveMock.GeminiLiveMock, config: Partial<RealtimeSessionConfig> = {}, options: Options = {}) =>
  Effect.gen(function*() {
    const model = GeminiLive.make({ url: mock.url, apiKey: Redacted.make(KEY), ...options })
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

const transcript = (events: ReadonlyArray<RealtimeEvent>) =>
  events.flatMap((e) => (e._tag === "TranscriptDelta" ? [e.delta] : [])).join("")

describe("GeminiLive", () => {
  it.live("connect: setup (model, instruction, tools, AUDIO, transcription, resumption) then the seeded history", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ apiKey: KEY, knownModels: [MODEL] })
      const seed = ctx(user("msg_1", "Hello"), message("assistant", "Hi there.", { id: "msg_2" }), message("system", "Be formal.", { id: "msg_3" }))
      const { connection, server } = yield* open(mock, { chatContext: seed })
      expect(connection.provider).toBe("google")
      expect(connection.model).toBe(MODEL)
      expect(connection.capabilities).toEqual(CAPABILITIES)
      yield* server.awaitReceived("clientContent") // Gemini acknowledges nothing but setup: wait for the frame
      expect(server.receivedTypes()).toEqual(["setup", "clientContent"])
      const setup = server.clientMessages()[0]!.setup as any
      expect(setup).toMatchObject({
        model: MODEL,
        generationConfig: { responseModalities: ["AUDIO"] },
        systemInstruction: { parts: [{ text: "You are a concise assistant." }] },
        inputAudioTranscription: {},
        outputAudioTranscription: {},
        sessionResumption: {}
      })
      expect(setup.tools[0].functionDeclarations).toEqual([{
        name: "get_weather",
        description: "Current weather for a city",
        parameters: {
          type: "OBJECT",
          properties: { city: { type: "STRING", description: "City" }, unit: { type: "STRING", nullable: true, enum: ["c", "f"] } },
          required: ["city"]
        }
      }])
      expect((server.clientMessages()[1]!.clientContent as any).turnComplete).toBe(false)
      yield* eventually(() =>
        expect(server.history()).toEqual([
          { role: "user", parts: [{ text: "Hello" }] },
          { role: "model", parts: [{ text: "Hi there." }] },
          { parts: [{ text: "Be formal." }] }
        ])
      )
      expect(server.sentTypes()).toEqual(["setupComplete"]) // seeding never calls the model
    }))

  it.live("an audio response: ResponseStarted, 24 kHz audio and transcript deltas, ResponseDone with usage", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script: [GeminiPlan.say("The answer is four.", { audioMs: 400 })] })
      const { connection, events, server } = yield* open(mock)
      yield* connection.createResponse({ instructions: "Answer the riddle." })
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      const all = events.events()
      expect(all[0]!._tag).toBe("ResponseStarted")
      expect(all.at(-1)).toMatchObject({ _tag: "ResponseDone", status: "completed" })
      const audio = all.filter((e) => e._tag === "AudioDelta")
      expect(audio.every((e) => e.sampleRate === 24000)).toBe(true)
      expect(audio.reduce((n, e) => n + e.pcm.byteLength, 0)).toBe(400 * 48)
      expect(transcript(all)).toBe("The answer is four.")
      const done = all.at(-1) as Extract<typeof all[number], { _tag: "ResponseDone" }>
      expect(done.usage!.outputTokens).toBeGreaterThan(0)
      expect(server.clientMessages()[1]).toEqual({
        clientContent: { turns: [{ role: "user", parts: [{ text: "Answer the riddle." }] }], turnComplete: true }
      })
    }))

  it.live("tool round trip: FunctionCall, nothing until the output, then the model goes on by itself", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        script: [GeminiPlan.call("get_weather", { city: "Paris" }, { id: "fc_1" }), GeminiPlan.say("Sunny in Paris.")]
      })
      const { connection, events, server } = yield* open(mock)
      yield* connection.createResponse()
      const call = yield* events.waitFor((e) => e._tag === "FunctionCall")
      expect(call).toMatchObject({ callId: "fc_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" })
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      yield* Effect.sleep("200 millis")
      const before = events.events().length
      expect(server.sentTypes().filter((t) => t.startsWith("serverContent"))).toEqual([]) // the model waits for the output
      yield* (yield* connection.sendToolOutput({ callId: "fc_1", name: "get_weather", output: "{\"temp\":21}", isError: false })).await
      yield* server.awaitReceived("toolResponse")
      expect(server.clientMessages().at(-1)).toEqual({
        toolResponse: { functionResponses: [{ id: "fc_1", name: "get_weather", response: { output: "{\"temp\":21}" } }] }
      })
      yield* events.waitFor((e) => e._tag === "ResponseDone", { from: before })
      expect(transcript(events.events().slice(before))).toBe("Sunny in Paris.")
      expect(server.receivedTypes().filter((t) => t === "clientContent").length).toBe(1) // no createResponse was needed
    }))

  it.live("instructions, tools and tool choice cannot change (unsupported); the same values are accepted", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make()
      const { connection, server } = yield* open(mock)
      expect((yield* Effect.flip(connection.updateSession({ instructions: "Speak French." }))).reason).toBe("unsupported")
      expect((yield* Effect.flip(connection.updateSession({ tools: [] }))).reason).toBe("unsupported")
      expect((yield* Effect.flip(connection.updateSession({ toolChoice: "required" }))).reason).toBe("unsupported")
      expect((yield* Effect.flip(connection.createResponse({ toolChoice: "none" }))).reason).toBe("unsupported")
      expect((yield* Effect.flip(connection.truncate("gemini_item_1", 100))).reason).toBe("unsupported")
      yield* (yield* connection.updateSession({ instructions: "You are a concise assistant.", tools: [weather], toolChoice: "auto" })).await
      expect(server.receivedTypes()).toEqual(["setup"])
    }))

  it.live("updateChatContext appends what is missing and refuses deletions (append-only history)", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script: [GeminiPlan.say("Noted.")] })
      const { connection, events, server } = yield* open(mock, { chatContext: ctx(user("msg_1", "Hello")) })
      const call = functionCall({ callId: "call_1", name: "get_weather", arguments: "{\"city\":\"Oslo\"}" })
      const out = functionCallOutput({ callId: "call_1", name: "get_weather", output: "cold", isError: false, status: "ok" })
      const grown = ctx(user("msg_1", "Hello"), message("assistant", "Hi.", { id: "msg_2" }), call, out)
      yield* (yield* connection.updateChatContext(grown)).await
      yield* eventually(() =>
        expect(server.history().slice(1)).toEqual([
          { role: "model", parts: [{ text: "Hi." }] },
          { role: "model", parts: [{ functionCall: { id: "call_1", name: "get_weather", args: { city: "Oslo" } } }] },
          { role: "user", parts: [{ functionResponse: { id: "call_1", name: "get_weather", response: { output: "cold" } } }] }
        ])
      )
      // the same context again sends nothing; a model turn recorded by baton under its own id is recognized
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      const sent = server.received().length
      yield* (yield* connection.updateChatContext(grown.append(message("assistant", "Noted.", { id: "msg_9" })))).await
      expect(server.received().length).toBe(sent)
      const refused = yield* Effect.flip(connection.updateChatContext(ctx(user("msg_1", "Hello"))))
      expect(refused.reason).toBe("unsupported")
      expect(refused.message).toContain("msg_2")
      expect(server.received().length).toBe(sent)
    }))

  it.live("pipelining: an append and createResponse are written without waiting, and the model sees the append", () =>
    Effect.gen(function*() {
      const seen: Array<string | undefined> = []
      // a round trip long enough that awaiting one is told from a loaded machine's slowness
      const mock = yield* GeminiLiveMock.make({
        roundTripMs: 1_000,
        script: (c) => (seen.push(c.lastUserText), GeminiPlan.say("Bonjour."))
      })
      const { connection, events, server } = yield* open(mock, { chatContext: ctx(user("msg_1", "Hello")) })
      const t0 = performance.now()
      const ack = yield* connection.updateChatContext(ctx(user("msg_1", "Hello"), user("msg_2", "Say bonjour")))
      yield* connection.createResponse()
      expect(performance.now() - t0).toBeLessThan(500) // no round trip awaited
      yield* ack.await
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(server.clientMessages().slice(-2).map((m) => (m.clientContent as any).turnComplete)).toEqual([false, true])
      expect(seen).toEqual(["Say bonjour"])
    }))

  it.live("audio in at 16 kHz; server VAD turn with input transcript; barge-in and cancel give Interrupted", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        script: [GeminiPlan.say("It is noon.", { audioMs: 300 }), GeminiPlan.say("a b c d e f g h", { audioMs: 3000, deltaIntervalMs: 20 })]
      })
      const { connection, events, server } = yield* open(mock)
      yield* connection.pushAudio(synthesize(PCM16_16K, 100, { kind: "silence" }))
      const frame = yield* server.awaitReceived("realtimeInput.audio")
      expect((frame.json as any).realtimeInput.audio.mimeType).toBe("audio/pcm;rate=16000")
      yield* connection.commitAudio
      yield* server.awaitReceived("realtimeInput.audioStreamEnd")
      yield* connection.clearAudio
      yield* server.userSpeaks({ transcript: "What time is it?" })
      const heard = yield* events.waitFor((e) => e._tag === "InputTranscript" && e.final)
      expect(heard).toMatchObject({ text: "What time is it?", itemId: expect.stringMatching(/^gemini_[0-9a-z]+_user_1$/) })
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(transcript(events.events())).toBe("It is noon.")
      const from = events.events().length
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "AudioDelta", { from })
      yield* connection.cancelResponse()
      const interrupted = yield* events.waitFor((e) => e._tag === "Interrupted", { from })
      const done = yield* events.waitFor((e) => e._tag === "ResponseDone", { from })
      expect(done).toMatchObject({ status: "cancelled", responseId: (interrupted as { responseId: string }).responseId })
    }))

  it.live("text parts are TextDeltas, thoughts are skipped; the user speaking over a turn interrupts it", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        script: [GeminiPlan.say("one two three four five six", { audioMs: 3000, deltaIntervalMs: 20 }), GeminiPlan.say("Okay.")]
      })
      const { connection, events, server } = yield* open(mock)
      yield* server.send({ serverContent: { modelTurn: { parts: [{ text: "hmm, let me think", thought: true }] } } })
      yield* server.send({ serverContent: { modelTurn: { parts: [{ text: "Plain text." }] } } })
      yield* server.send({ serverContent: { turnComplete: true }, usageMetadata: { promptTokenCount: 7, responseTokenCount: 3 } })
      const done = yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(events.tags()).toEqual(["ResponseStarted", "TextDelta", "ResponseDone"])
      expect(events.events()[1]).toMatchObject({ delta: "Plain text." })
      expect(done).toMatchObject({ status: "completed", usage: { inputTokens: 7, outputTokens: 3 } })
      const from = events.events().length
      yield* connection.createResponse()
      yield* events.waitFor((e) => e._tag === "AudioDelta", { from })
      yield* server.userSpeaks({ durationMs: 300, transcript: "wait" })
      const interrupted = yield* events.waitFor((e) => e._tag === "Interrupted", { from })
      const cut = yield* events.waitFor((e) => e._tag === "ResponseDone", { from })
      expect(cut).toMatchObject({ status: "cancelled", responseId: (interrupted as { responseId: string }).responseId })
      expect(yield* events.waitFor((e) => e._tag === "InputTranscript" && e.final, { from })).toMatchObject({ text: "wait" })
    }))

  it.live("manual activity: pushAudio opens the user's turn, commitAudio closes it", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script: [GeminiPlan.say("Heard you.")] })
      const { connection, events, server } = yield* open(mock, {}, { automaticActivityDetection: false })
      expect(connection.capabilities.serverTurnDetection).toBe(false)
      yield* connection.pushAudio(synthesize(PCM16_16K, 200))
      yield* connection.pushAudio(synthesize(PCM16_16K, 200))
      yield* connection.commitAudio
      yield* events.waitFor((e) => e._tag === "ResponseDone")
      expect(server.receivedTypes().slice(1)).toEqual([
        "realtimeInput.activityStart",
        "realtimeInput.audio",
        "realtimeInput.audio",
        "realtimeInput.activityEnd"
      ])
      expect((server.clientMessages()[0]!.setup as any).realtimeInputConfig).toEqual({ automaticActivityDetection: { disabled: true } })
    }))

  it.live("layerConfig: GEMINI_API_KEY (Redacted, never logged) and GEMINI_LIVE_URL; a missing key is refused", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const mock = yield* GeminiLiveMock.make({ apiKey: KEY, script: [GeminiPlan.say("hi")] })
      const endpoint = mock.url.split("?")[0]!
      const env = ConfigProvider.layer(ConfigProvider.fromUnknown({ GEMINI_API_KEY: KEY, GEMINI_LIVE_URL: endpoint }))
      yield* Effect.gen(function*() {
        expect(yield* GeminiLive).toEqual({ model: MODEL, url: endpoint, hasApiKey: true })
        const model = yield* RealtimeModel
        const connection = yield* model.connect({ instructions: "x", tools: [], chatContext: ChatContext.empty })
        const events = yield* record(connection)
        yield* connection.createResponse()
        yield* events.waitFor((e) => e._tag === "ResponseDone")
        const server = yield* mock.awaitConnection(0)
        yield* server.goAway({ timeLeftMs: 300 })
        yield* events.waitFor((e) => e._tag === "Reconnected")
      }).pipe(Effect.provide(GeminiLive.layerConfig.pipe(Layer.provide(env))), captureLogs(lines))
      expect(lines.length).toBeGreaterThan(0)
      expect(lines.some((l) => l.includes(KEY))).toBe(false)
      const missing = yield* Layer.build(GeminiLive.layerConfig).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({}))),
        Effect.scoped,
        Effect.flip
      )
      expect(String(missing)).toContain("GEMINI_API_KEY")
      const wrong = yield* GeminiLive.make({ url: endpoint, apiKey: Redacted.make("AIza-wrong") })
        .connect({ instructions: "x", tools: [], chatContext: ChatContext.empty })
        .pipe(Effect.scoped, Effect.flip)
      expect(wrong.reason).toBe("rejected")
      expect(wrong.message).toContain("API key not valid")
      expect(wrong.message).not.toContain("AIza-wrong")
    }))
})
