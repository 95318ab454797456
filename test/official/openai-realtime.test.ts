/**
 * The OpenAI Realtime mock driven by OpenAI's own clients (issue 40, "Keep it proven"): `openai`'s
 * realtime WebSocket client (`openai/realtime/ws`, which insists on `wss://`: a local TLS front
 * with a self-signed certificate is put before the mock) and `@openai/agents-realtime`'s
 * `RealtimeSession` over its WebSocket transport. Each drives text, a tool round trip, audio in
 * and out, and an error. Every server frame the mock sent is then compiled against `openai`'s
 * `RealtimeServerEvent`. Nothing reaches the network.
 */
import { assert, describe, it } from "@effect/vitest"
import { RealtimeAgent, RealtimeSession, tool } from "@openai/agents-realtime"
import { Effect } from "effect"
import OpenAI from "openai"
import { OpenAIRealtimeWS } from "openai/realtime/ws"
import type { RealtimeServerEvent } from "openai/resources/realtime/realtime"
import { z } from "zod"
import * as OpenAIRealtimeMock from "../mocks/openai-realtime/index.ts"
import { Plan, type ScriptContext } from "../mocks/openai-realtime/index.ts"
import { PCM16_24K, synthesize, toBase64 } from "../mocks/shared/audio.ts"
import { inbox, tlsFront, typeCheckFrames } from "./support.ts"

/** The model: asks for the weather tool when the user asks about the weather, then says its result. */
const weatherScript = (ctx: ScriptContext) => {
  const last = ctx.lastItem
  if (last?.type === "function_call_output") return Plan.say(`Here is the weather: ${last.output ?? ""}.`)
  if (ctx.lastUserText?.includes("weather")) return Plan.call("get_weather", { city: "Paris" })
  return Plan.say(`You said: ${ctx.lastUserText ?? "nothing"}`)
}

const sentFrames = (mock: OpenAIRealtimeMock.OpenAIRealtimeMock, index: number) =>
  mock.awaitConnection(index).pipe(Effect.map((c) => c.sent().filter((f) => !f.noise).map((f) => f.json)))

/**
 * The API reference's `session.created` / `session.updated` examples carry the session's
 * `object`, `id` and `expires_at` (docs/protocols.md 1.5), which openai's type of the session
 * (`RealtimeSessionCreateRequest`, the request shape) does not declare: those three are left out.
 */
const withoutUndeclared = (frame: unknown): unknown => {
  const f = frame as { type?: string; session?: Record<string, unknown> }
  if ((f.type !== "session.created" && f.type !== "session.updated") || f.session === undefined) return frame
  const { object: _object, id: _id, expires_at: _expires, ...session } = f.session
  return { ...f, session }
}

const assertWireTypes = (all: ReadonlyArray<unknown>) =>
  Effect.succeed(all.map(withoutUndeclared)).pipe(Effect.flatMap((frames) =>
  // The API sends null for absent values (`status_details`, `usage`, `include`, an input
  // transcript not made yet); openai's generated types have those fields optional, not nullable.
  Effect.promise(() =>
    typeCheckFrames(frames, { module: "openai/resources/realtime/realtime", type: "RealtimeServerEvent", nullAsAbsent: true })
  ).pipe(
    Effect.map((errors) => assert.deepStrictEqual(errors.map((e) => e.split("\n    at")[0]), [], `${frames.length} frames`))
  )))

describe("OpenAI Realtime mock, through OpenAI's clients", () => {
  it.live("official client: openai's realtime WebSocket (wss through a TLS front) does text, a tool round trip, audio in and out, and gets an error; every server frame is a RealtimeServerEvent", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ apiKey: "sk-official", script: weatherScript, transcribe: () => "what is the weather" })
      const front = yield* tlsFront(mock.url)
      const client = new OpenAI({ apiKey: "sk-official", baseURL: `https://${front.host}/v1` })
      const rt = new OpenAIRealtimeWS({ model: "gpt-realtime", options: { ca: front.cert } }, client)
      const events = inbox<RealtimeServerEvent>()
      const errors = inbox<{ code: string | null | undefined; eventId: string | undefined }>()
      rt.on("event", events.push)
      rt.on("error", (e) => errors.push({ code: e.error?.code, eventId: e.error?.event_id ?? undefined }))
      yield* Effect.addFinalizer(() => Effect.sync(() => rt.close()))
      const next = <T extends RealtimeServerEvent["type"]>(type: T) =>
        Effect.promise(() => events.next<Extract<RealtimeServerEvent, { type: T }>>((e) => e.type === type, type))

      const created = yield* next("session.created")
      assert.strictEqual(created.session.type, "realtime")
      rt.send({
        type: "session.update",
        session: {
          type: "realtime",
          instructions: "You tell the weather.",
          tools: [{ type: "function", name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } } } }],
          audio: { input: { transcription: { model: "gpt-4o-mini-transcribe" } } }
        }
      })
      yield* next("session.updated")

      // Text in, a tool call out; the tool's result back; the answer as audio and its transcript.
      rt.send({ type: "conversation.item.create", item: { type: "message", role: "user", content: [{ type: "input_text", text: "what is the weather in Paris?" }] } })
      rt.send({ type: "response.create" })
      const called = yield* next("response.function_call_arguments.done")
      assert.strictEqual(called.name, "get_weather")
      assert.deepStrictEqual(JSON.parse(called.arguments), { city: "Paris" })
      yield* next("response.done")
      rt.send({ type: "conversation.item.create", item: { type: "function_call_output", call_id: called.call_id, output: "sunny, 21 degrees" } })
      rt.send({ type: "response.create" })
      const audio = yield* next("response.output_audio.delta")
      assert.isAbove(Buffer.from(audio.delta, "base64").byteLength, 0)
      const said = yield* next("response.output_audio_transcript.done")
      assert.strictEqual(said.transcript, "Here is the weather: sunny, 21 degrees.")
      yield* next("response.done")

      // Audio in: speech then silence; the server's turn detection transcribes it and answers (the tool again).
      for (let i = 0; i < 5; i++) rt.send({ type: "input_audio_buffer.append", audio: toBase64(synthesize(PCM16_24K, 100)) })
      for (let i = 0; i < 4; i++) rt.send({ type: "input_audio_buffer.append", audio: toBase64(synthesize(PCM16_24K, 100, { kind: "silence" })) })
      yield* next("input_audio_buffer.speech_started")
      yield* next("input_audio_buffer.committed")
      const heard = yield* next("conversation.item.input_audio_transcription.completed")
      assert.strictEqual(heard.transcript, "what is the weather")
      const again = yield* next("response.done")
      assert.strictEqual(again.response.status, "completed")

      // An error: a tool_choice the API does not have.
      rt.send({ type: "response.create", event_id: "evt_bad_choice", response: { tool_choice: "get_weather" as never } })
      const error = yield* Effect.promise(() => errors.next(() => true, "the SDK's error event"))
      assert.deepStrictEqual(error, { code: "invalid_value", eventId: "evt_bad_choice" })

      yield* assertWireTypes(yield* sentFrames(mock, 0))
    }).pipe(Effect.scoped), 60_000)

  it.live("official client: @openai/agents-realtime's RealtimeSession does text, a tool round trip (it runs the tool), audio in and out, and reports an error; every server frame is a RealtimeServerEvent", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ apiKey: "sk-agents", script: weatherScript, transcribe: () => "what is the weather" })
      const cities: Array<string> = []
      const getWeather = tool({
        name: "get_weather",
        description: "Weather for a city",
        parameters: z.object({ city: z.string() }),
        execute: ({ city }) => {
          cities.push(city)
          return "sunny, 21 degrees"
        }
      })
      const agent = new RealtimeAgent({ name: "weather", instructions: "You tell the weather.", tools: [getWeather] })
      const session = new RealtimeSession(agent, { transport: "websocket", model: "gpt-realtime" })
      const seen = inbox<{ readonly type: string; readonly [k: string]: unknown }>()
      session.on("transport_event", (e) => seen.push(e as never))
      let audioBytes = 0
      session.on("audio", (e) => void (audioBytes += e.data.byteLength))
      const errors = inbox<unknown>()
      session.on("error", (e) => errors.push(e.error))
      yield* Effect.promise(() => session.connect({ apiKey: "sk-agents", url: mock.url }))
      yield* Effect.addFinalizer(() => Effect.sync(() => session.close()))
      const next = (type: string) => Effect.promise(() => seen.next((e) => e.type === type, type))

      // Text in; the SDK runs the tool the model asked for and asks for the answer itself.
      session.sendMessage("what is the weather in Paris?")
      const said = yield* Effect.promise(() =>
        seen.next((e) => e.type === "response.output_audio_transcript.done" && String(e.transcript).startsWith("Here"), "the answer")
      )
      assert.strictEqual(said.transcript, "Here is the weather: sunny, 21 degrees.")
      assert.deepStrictEqual(cities, ["Paris"])
      yield* next("response.done")
      assert.isAbove(audioBytes, 0)

      // Audio in: the server hears a turn, transcribes it and answers.
      const speech = synthesize(PCM16_24K, 500)
      session.sendAudio(speech.buffer.slice(speech.byteOffset, speech.byteOffset + speech.byteLength) as ArrayBuffer)
      const silence = synthesize(PCM16_24K, 800, { kind: "silence" })
      session.sendAudio(silence.buffer.slice(silence.byteOffset, silence.byteOffset + silence.byteLength) as ArrayBuffer)
      const heard = yield* next("conversation.item.input_audio_transcription.completed")
      assert.strictEqual(heard.transcript, "what is the weather")
      yield* Effect.promise(() => seen.next((e) => e.type === "response.done", "the spoken turn's answer"))
      yield* Effect.promise(() => seen.next((e) => e.type === "response.done", "the answer after its tool call"))
      assert.deepStrictEqual(cities, ["Paris", "Paris"])
      const history = session.history.flatMap((i) => (i.type === "message" ? [i.role] : []))
      assert.includeMembers(history, ["user", "assistant"])

      // An error from the server reaches the session's error event.
      session.transport.sendEvent({ type: "response.create", event_id: "evt_bad", response: { tool_choice: "bogus" } })
      const error = yield* Effect.promise(() => errors.next(() => true, "the session's error event"))
      assert.include(JSON.stringify(error), "invalid_value")

      yield* assertWireTypes(yield* sentFrames(mock, 0))
    }).pipe(Effect.scoped), 60_000)
})
