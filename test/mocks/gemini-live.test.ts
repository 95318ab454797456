/**
 * Protocol conformance of the Gemini Live mock, driven by a raw `ws` client (docs/protocols.md section 2):
 * setup, model turns (audio, text, 3.1 multi-part), realtime input with activity detection, tool
 * calls, barge-in, session resumption, and the capability facts (tools / instructions fixed by setup).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { PCM16_16K, synthesize, toBase64 } from "./shared/audio.ts"
import * as GeminiLiveMock from "./gemini-live/index.ts"
import { GeminiPlan } from "./gemini-live/index.ts"
import { connect, geminiKind, type Msg, type RawClient, squash } from "./rawClient.ts"

const NATIVE = "models/gemini-2.5-flash-native-audio-preview-12-2025"

const baseSetup = (extra: Record<string, unknown> = {}) => ({
  model: NATIVE,
  generationConfig: { responseModalities: ["AUDIO"] },
  systemInstruction: { parts: [{ text: "You are a test assistant." }] },
  inputAudioTranscription: {},
  outputAudioTranscription: {},
  ...extra
})

const open = (mock: GeminiLiveMock.GeminiLiveMock, setup: Record<string, unknown> = baseSetup()) =>
  Effect.gen(function*() {
    const client = yield* connect(mock.url)
    yield* client.send({ setup })
    yield* client.waitFor("setupComplete")
    return client
  })

const say = (client: RawClient, text: string) =>
  client.send({ clientContent: { turns: [{ role: "user", parts: [{ text }] }], turnComplete: true } })

const turnComplete = (m: Msg) => m.serverContent?.turnComplete === true
const audio16k = (ms: number, kind: "tone" | "silence" = "tone") => ({
  realtimeInput: { audio: { data: toBase64(synthesize(PCM16_16K, ms, { kind })), mimeType: "audio/pcm;rate=16000" } }
})

describe("Gemini Live mock: protocol", () => {
  it.live("setup -> setupComplete; setup first and only once; framing errors close with 1007", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ knownModels: [NATIVE] })
      const c1 = yield* connect(mock.url)
      yield* c1.send({ setup: baseSetup() })
      expect(yield* c1.waitFor("setupComplete")).toEqual({ setupComplete: {} })
      yield* c1.send({ setup: baseSetup() })
      expect((yield* c1.closed()).code).toBe(1007)

      const c2 = yield* connect(mock.url)
      yield* say(c2, "hi")
      expect(yield* c2.closed()).toEqual({ code: 1007, reason: "The first message must be a setup message." })
      const c3 = yield* connect(mock.url)
      yield* c3.sendRaw("{not json")
      expect((yield* c3.closed()).code).toBe(1007)
      const c4 = yield* connect(mock.url)
      yield* c4.send({ setup: baseSetup(), clientContent: { turns: [] } })
      expect((yield* c4.closed()).code).toBe(1007)
      const c5 = yield* connect(mock.url)
      yield* c5.send({ setup: baseSetup({ model: "models/unknown-model" }) })
      expect((yield* c5.closed()).code).toBe(1008)
      const c6 = yield* connect(mock.url)
      yield* c6.send({ config: baseSetup() })
      expect((yield* c6.closed()).code).toBe(1007)

      const lenient = yield* GeminiLiveMock.make({ acceptConfigAlias: true })
      const c7 = yield* connect(lenient.url.replace("/ws/", "//ws/")) // the SDK's doubled slash
      yield* c7.send({ config: baseSetup() })
      yield* c7.waitFor("setupComplete")
      expect((yield* lenient.awaitConnection(0)).setup()?.model).toBe(NATIVE)
    }))

  it.live("model turn: 24 kHz audio chunks, output transcription, generationComplete, turnComplete + usageMetadata", () =>
    Effect.gen(function*() {
      const seen: Array<GeminiLiveMock.GeminiScriptContext> = []
      const mock = yield* GeminiLiveMock.make({ script: (ctx) => (seen.push(ctx), GeminiPlan.say("hello there friend", { audioMs: 300 })) })
      const client = yield* open(mock)
      yield* say(client, "hi")
      const events = yield* client.until(turnComplete)
      expect(events.map(geminiKind)).toEqual([
        "serverContent.modelTurn",
        "serverContent.outputTranscription",
        "serverContent.modelTurn",
        "serverContent.outputTranscription",
        "serverContent.modelTurn",
        "serverContent.outputTranscription",
        "serverContent.generationComplete",
        "serverContent.turnComplete+usageMetadata"
      ])
      const audio = events.filter((m) => m.serverContent.modelTurn).map((m) => m.serverContent.modelTurn.parts[0].inlineData)
      expect(audio.every((a) => a.mimeType === "audio/pcm;rate=24000")).toBe(true)
      expect(audio.reduce((n, a) => n + Buffer.from(a.data, "base64").byteLength, 0)).toBe(300 * 48)
      expect(events.filter((m) => m.serverContent.outputTranscription).map((m) => m.serverContent.outputTranscription.text).join(""))
        .toBe("hello there friend")
      const usage = events.at(-1)!.usageMetadata
      expect(usage).toMatchObject({ responseTokensDetails: [{ modality: "AUDIO" }] })
      expect(usage.totalTokenCount).toBe(usage.promptTokenCount + usage.responseTokenCount)
      expect(seen[0]).toMatchObject({ trigger: "clientContent", systemInstruction: "You are a test assistant.", lastUserText: "hi" })
      const conn = yield* mock.awaitConnection(0)
      expect(conn.history()).toEqual([
        { role: "user", parts: [{ text: "hi" }] },
        { role: "model", parts: [{ text: "hello there friend" }] }
      ])
    }))

  it.live("TEXT modality gives text parts; native-audio models refuse TEXT; 3.1 sends multi-part messages", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ script: () => GeminiPlan.say("two words", { thought: "thinking..." }) })
      const text = yield* open(mock, { model: "models/gemini-live-2.5-flash", generationConfig: { responseModalities: ["TEXT"] } })
      yield* say(text, "hi")
      const events = yield* text.until(turnComplete)
      expect(events[0]!.serverContent.modelTurn.parts[0]).toEqual({ text: "thinking...", thought: true })
      expect(events.slice(1, 3).map((m) => m.serverContent.modelTurn.parts[0].text)).toEqual(["two ", "words"])

      const bad = yield* connect(mock.url)
      yield* bad.send({ setup: { model: NATIVE, generationConfig: { responseModalities: ["TEXT"] } } })
      expect((yield* bad.closed()).code).toBe(1007)

      const v31 = yield* open(mock, baseSetup({ model: "models/gemini-3.1-flash-live-preview" }))
      yield* v31.send({ realtimeInput: { text: "hello" } })
      const multi = yield* v31.until(turnComplete)
      expect(squash(multi.map(geminiKind))).toEqual([
        "serverContent.modelTurn", // the thought
        "serverContent.modelTurn+outputTranscription", // audio + transcript in one message
        "serverContent.modelTurn", // the rest of the audio
        "serverContent.generationComplete",
        "serverContent.turnComplete+usageMetadata"
      ])
    }))

  it.live("realtime audio with automatic activity detection: input transcription, then the model answers", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ transcribe: () => "book a table" })
      const client = yield* open(mock)
      for (let i = 0; i < 4; i++) yield* client.send(audio16k(100))
      for (let i = 0; i < 9; i++) yield* client.send(audio16k(100, "silence"))
      const events = yield* client.until(turnComplete)
      expect(events[0]).toEqual({ serverContent: { inputTranscription: { text: "book a table" } } })
      expect(events.filter((m) => m.serverContent.outputTranscription).map((m) => m.serverContent.outputTranscription.text).join(""))
        .toBe("You said: book a table")

      // audioStreamEnd flushes an utterance without waiting for the silence
      yield* client.send(audio16k(300))
      yield* client.send({ realtimeInput: { audioStreamEnd: true } })
      const flushed = yield* client.until(turnComplete)
      expect(geminiKind(flushed[0]!)).toBe("serverContent.inputTranscription")
      const conn = yield* mock.awaitConnection(0)
      expect(conn.receivedTypes().filter((t) => t !== "realtimeInput.audio")).toEqual(["setup", "realtimeInput.audioStreamEnd"])
    }))

  it.live("activityStart/activityEnd: refused with automatic detection on, drive the turn when it is disabled", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make()
      const auto = yield* open(mock)
      yield* auto.send({ realtimeInput: { activityStart: {} } })
      expect((yield* auto.closed()).code).toBe(1007)

      const manual = yield* open(mock, baseSetup({ realtimeInputConfig: { automaticActivityDetection: { disabled: true } } }))
      yield* manual.send({ realtimeInput: { activityStart: {} } })
      yield* manual.send(audio16k(500))
      yield* manual.send(audio16k(500, "silence"))
      yield* Effect.sleep("50 millis")
      expect(manual.frames.length).toBe(1) // only setupComplete: no VAD when disabled
      yield* manual.send({ realtimeInput: { activityEnd: {} } })
      const events = yield* manual.until(turnComplete)
      expect(events[0]!.serverContent.inputTranscription.text).toBe("[audio 1000ms]")
    }))

  it.live("tool call: the turn pauses on toolCall; toolResponse makes the model continue by itself", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        script: (ctx) =>
          ctx.turnNumber === 0
            ? GeminiPlan.sayThenCall("Let me check.", "get_weather", { city: "Paris" })
            : GeminiLiveMock.geminiEchoScript(ctx)
      })
      const tools = [{ functionDeclarations: [{ name: "get_weather", parameters: { type: "OBJECT", properties: { city: { type: "STRING" } } } }] }]
      const client = yield* open(mock, baseSetup({ tools }))
      yield* say(client, "weather?")
      const events = yield* client.until("toolCall")
      const call = events.at(-1)!.toolCall.functionCalls[0]
      expect(call).toMatchObject({ name: "get_weather", args: { city: "Paris" } })
      expect(call.id).toMatch(/^fc_/)
      yield* Effect.sleep("100 millis")
      expect(client.frames.at(-1)!.msg!.toolCall).toBeDefined() // no generationComplete / turnComplete
      const conn = yield* mock.awaitConnection(0)
      expect(conn.pendingToolCallIds()).toEqual([call.id])

      yield* client.send({ toolResponse: { functionResponses: [{ id: "fc_unknown", name: "get_weather", response: {} }] } })
      yield* client.send({ toolResponse: { functionResponses: [{ id: call.id, name: "get_weather", response: { output: { temp: 21 } } }] } })
      const answer = yield* client.until(turnComplete)
      expect(answer.filter((m) => m.serverContent.outputTranscription).map((m) => m.serverContent.outputTranscription.text).join(""))
        .toBe("Tool result: {\"output\":{\"temp\":21}}")
      expect(conn.unmatchedToolResponses().map((r) => r.id)).toEqual(["fc_unknown"])
      expect(conn.pendingToolCallIds()).toEqual([])
      expect(conn.history().map((c) => Object.keys(c.parts[0]!)[0])).toEqual(["text", "text", "functionCall", "functionResponse", "text"])
    }))

  it.live("barge-in: interrupted then turnComplete (no generationComplete); pending calls are cancelled", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        deltaIntervalMs: 20,
        script: (ctx) =>
          ctx.turnNumber === 0
            ? GeminiPlan.say("a long long answer that goes on", { audioMs: 3000 })
            : ctx.turnNumber === 1
            ? GeminiPlan.call("lookup", { q: 1 })
            : GeminiPlan.say("ok")
      })
      const client = yield* open(mock)
      const conn = yield* mock.awaitConnection(0)
      yield* say(client, "tell me a story")
      yield* client.waitFor((m) => m.serverContent?.modelTurn !== undefined)
      yield* conn.userSpeaks({ transcript: "stop" })
      const cut = yield* client.until(turnComplete)
      expect(cut.map(geminiKind)).not.toContain("serverContent.generationComplete")
      expect(geminiKind(cut.at(-2)!)).toBe("serverContent.interrupted")
      const next = yield* client.until("toolCall")
      expect(geminiKind(next[0]!)).toBe("serverContent.inputTranscription")
      const id = next.at(-1)!.toolCall.functionCalls[0].id
      yield* conn.userSpeaks({ transcript: "never mind" })
      const cancelled = yield* client.until(turnComplete)
      expect(cancelled.map(geminiKind)).toEqual(["serverContent.interrupted", "toolCallCancellation", "serverContent.turnComplete"])
      expect(cancelled[1]).toEqual({ toolCallCancellation: { ids: [id] } })
    }))

  it.live("session resumption: handles after turns, not resumable during calls; a handle restores the conversation", () =>
    Effect.gen(function*() {
      const seen: Array<GeminiLiveMock.GeminiScriptContext> = []
      const mock = yield* GeminiLiveMock.make({
        script: (ctx) => (seen.push(ctx), ctx.turnNumber === 1 && !ctx.resumed ? GeminiPlan.call("lookup", {}) : GeminiPlan.say("noted"))
      })
      const tools = [{ functionDeclarations: [{ name: "lookup" }] }]
      const c1 = yield* open(mock, baseSetup({ tools, sessionResumption: { transparent: true } }))
      yield* say(c1, "remember 42")
      yield* c1.until(turnComplete)
      const update = yield* c1.waitFor("sessionResumptionUpdate")
      expect(update.sessionResumptionUpdate).toMatchObject({ resumable: true, lastConsumedClientMessageIndex: "1" })
      const handle: string = update.sessionResumptionUpdate.newHandle
      expect(handle.length).toBeGreaterThan(0)
      yield* say(c1, "look it up")
      yield* c1.waitFor("toolCall")
      expect((yield* c1.waitFor("sessionResumptionUpdate")).sessionResumptionUpdate).toEqual({
        newHandle: "",
        resumable: false,
        lastConsumedClientMessageIndex: "2"
      })

      const c2 = yield* open(mock, baseSetup({ sessionResumption: { handle } }))
      const conn2 = yield* mock.awaitConnection(1)
      expect(conn2.resumed()).toBe(true)
      expect(conn2.history()).toEqual([
        { role: "user", parts: [{ text: "remember 42" }] },
        { role: "model", parts: [{ text: "noted" }] }
      ])
      expect(conn2.pendingToolCallIds()).toEqual([]) // the call was lost with the old connection
      yield* say(c2, "what did I say?")
      yield* c2.until(turnComplete)
      expect(seen.at(-1)!.history.length).toBe(3)
      expect(seen.at(-1)!.tools).toEqual([]) // config (except the model) may change on resume

      const wrongModel = yield* connect(mock.url)
      yield* wrongModel.send({ setup: baseSetup({ model: "models/other", sessionResumption: { handle } }) })
      expect((yield* wrongModel.closed()).code).toBe(1007)
      yield* mock.invalidateResumptionHandle(handle)
      const expired = yield* connect(mock.url)
      yield* expired.send({ setup: baseSetup({ sessionResumption: { handle } }) })
      expect((yield* expired.closed()).code).toBe(1007)
    }))

  it.live("capabilities: tools and system instruction are fixed by setup; no mid-session config message", () =>
    Effect.gen(function*() {
      expect(GeminiLiveMock.GEMINI_LIVE_CAPABILITIES).toMatchObject({
        midSessionInstructionsUpdate: false,
        midSessionToolsUpdate: false,
        autoToolReplyGeneration: true
      })
      const seen: Array<GeminiLiveMock.GeminiScriptContext> = []
      const mock = yield* GeminiLiveMock.make({ script: (ctx) => (seen.push(ctx), GeminiPlan.say("ok")) })
      const tools = [{ functionDeclarations: [{ name: "a" }, { name: "b", behavior: "NON_BLOCKING" }] }]
      const client = yield* open(mock, baseSetup({ tools }))
      // the LiveKit workaround for instructions: a clientContent turn without role, turnComplete false
      yield* client.send({ clientContent: { turns: [{ parts: [{ text: "New instructions: be brief." }] }], turnComplete: false } })
      yield* say(client, "hi")
      yield* client.until(turnComplete)
      expect(seen[0]!.tools.map((t) => t.name)).toEqual(["a", "b"])
      expect(seen[0]!.systemInstruction).toBe("You are a test assistant.")
      expect(seen[0]!.history[0]).toEqual({ parts: [{ text: "New instructions: be brief." }] })
      // an update message is not part of this protocol: the connection is closed
      yield* client.send({ contextUpdate: { tools: [] } })
      expect((yield* client.closed()).code).toBe(1007)
    }))

  it.live("clientContent: roles, history seeding (initialHistoryInClientContent), 3.1 restriction", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make()
      const sys = yield* open(mock)
      yield* sys.send({ clientContent: { turns: [{ role: "system", parts: [{ text: "x" }] }], turnComplete: true } })
      expect((yield* sys.closed()).code).toBe(1007)

      const v31 = yield* open(mock, baseSetup({ model: "models/gemini-3.1-flash-live-preview", historyConfig: { initialHistoryInClientContent: true } }))
      yield* v31.send({
        clientContent: {
          turns: [{ role: "user", parts: [{ text: "earlier" }] }, { role: "model", parts: [{ text: "reply" }] }],
          turnComplete: true
        }
      })
      yield* Effect.sleep("100 millis")
      expect(v31.frames.length).toBe(1) // history never triggers a model call
      yield* v31.send({ realtimeInput: { text: "now" } })
      yield* v31.until(turnComplete)
      yield* say(v31, "late history")
      expect((yield* v31.closed()).code).toBe(1007)
    }))

  it.live("non-blocking tools: the turn completes; scheduling SILENT stays quiet, WHEN_IDLE answers", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        script: (ctx) => (ctx.turnNumber === 0 ? GeminiPlan.sayThenCall("Working on it.", "search", { q: "x" }) : GeminiLiveMock.geminiEchoScript(ctx))
      })
      const client = yield* open(mock, baseSetup({ tools: [{ functionDeclarations: [{ name: "search", behavior: "NON_BLOCKING" }] }] }))
      yield* say(client, "search")
      const events = yield* client.until(turnComplete)
      const id = events.find((m) => m.toolCall)!.toolCall.functionCalls[0].id
      const quiet = client.frames.length
      yield* client.send({ toolResponse: { functionResponses: [{ id, name: "search", response: {}, willContinue: true, scheduling: "SILENT" }] } })
      yield* Effect.sleep("100 millis")
      expect((yield* mock.awaitConnection(0)).pendingToolCallIds()).toEqual([id])
      expect(client.frames.length).toBe(quiet) // SILENT: no model turn
      const before = client.frames.length
      yield* client.send({ toolResponse: { functionResponses: [{ id, name: "search", response: { output: "found", scheduling: "WHEN_IDLE" } }] } })
      const answer = yield* client.until(turnComplete)
      expect(client.frames.length).toBeGreaterThan(before)
      expect(answer.map((m) => m.serverContent?.outputTranscription?.text ?? "").join("")).toContain("found")
    }))
})
