/**
 * The Gemini Live mock driven by Google's own client, `@google/genai`'s `live.connect`
 * (issue 40, "Keep it proven"): its base URL is the mock on 127.0.0.1 (`http:` base, so the SDK
 * opens `ws:`). Text, a tool round trip, audio in and out, and an error (an unknown model: a
 * close frame with Gemini's reason). Every server message the mock sent is then compiled against
 * genai's `LiveServerMessage`. Nothing reaches the network.
 */
import { assert, describe, it } from "@effect/vitest"
import { GoogleGenAI, type LiveServerMessage, Modality, type Session, Type } from "@google/genai"
import { Effect } from "effect"
import * as GeminiLiveMock from "../mocks/gemini-live/index.ts"
import { GeminiPlan, type GeminiScriptContext } from "../mocks/gemini-live/index.ts"
import { PCM16_16K, synthesize, toBase64 } from "../mocks/shared/audio.ts"
import { inbox, typeCheckFrames } from "./support.ts"

const MODEL = "gemini-2.5-flash-native-audio-preview-09-2025"

/** The model: asks for the weather tool when asked about the weather, then says its result. */
const weatherScript = (ctx: GeminiScriptContext) => {
  const result = ctx.functionResponses[0]?.response
  if (result !== undefined) return GeminiPlan.say(`Here is the weather: ${String(result.weather)}.`)
  if (ctx.lastUserText?.includes("weather")) return GeminiPlan.call("get_weather", { city: "Paris" })
  return GeminiPlan.say(`You said: ${ctx.lastUserText ?? "nothing"}`)
}

const tools = [{
  functionDeclarations: [{
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ["city"] }
  }]
}]

describe("Gemini Live mock, through @google/genai", () => {
  it.live("official client: @google/genai live does text, a tool round trip, audio in and out, and gets a close with Gemini's reason for an unknown model; every server message is a LiveServerMessage", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({
        apiKey: "AIza-official",
        knownModels: [MODEL],
        script: weatherScript,
        transcribe: () => "what is the weather"
      })
      const ai = new GoogleGenAI({ apiKey: "AIza-official", httpOptions: { baseUrl: new URL(mock.url).origin.replace("ws:", "http:") } })
      const messages = inbox<LiveServerMessage>()
      const session: Session = yield* Effect.promise(() =>
        ai.live.connect({
          model: MODEL,
          config: { responseModalities: [Modality.AUDIO], tools, inputAudioTranscription: {}, outputAudioTranscription: {} },
          callbacks: { onmessage: messages.push }
        })
      )
      yield* Effect.addFinalizer(() => Effect.sync(() => session.close()))
      const next = (match: (m: LiveServerMessage) => boolean, what: string) => Effect.promise(() => messages.next(match, what))
      yield* next((m) => m.setupComplete !== undefined, "setupComplete")

      // Text in, a tool call out; the SDK sends the tool's response; the model answers with audio.
      session.sendRealtimeInput({ text: "what is the weather in Paris?" })
      const call = yield* next((m) => m.toolCall !== undefined, "toolCall")
      const fc = call.toolCall!.functionCalls![0]!
      assert.strictEqual(fc.name, "get_weather")
      assert.deepStrictEqual(fc.args, { city: "Paris" })
      session.sendToolResponse({ functionResponses: [{ id: fc.id!, name: fc.name!, response: { weather: "sunny, 21 degrees" } }] })
      const audio = yield* next((m) => m.data !== undefined, "audio")
      assert.isAbove(Buffer.from(audio.data!, "base64").byteLength, 0)
      let said = ""
      const done = yield* Effect.promise(() =>
        messages.next((m) => {
          said += m.serverContent?.outputTranscription?.text ?? ""
          return m.serverContent?.turnComplete === true
        }, "turnComplete")
      )
      assert.isTrue(done.serverContent?.turnComplete)
      assert.strictEqual(said.trim(), "Here is the weather: sunny, 21 degrees.")

      // Audio in: speech then silence; activity detection ends the turn, which is transcribed and answered.
      for (let i = 0; i < 5; i++) session.sendRealtimeInput({ audio: { data: toBase64(synthesize(PCM16_16K, 100)), mimeType: "audio/pcm;rate=16000" } })
      for (let i = 0; i < 12; i++) {
        session.sendRealtimeInput({ audio: { data: toBase64(synthesize(PCM16_16K, 100, { kind: "silence" })), mimeType: "audio/pcm;rate=16000" } })
      }
      const heard = yield* next((m) => m.serverContent?.inputTranscription?.text !== undefined, "inputTranscription")
      assert.include(heard.serverContent!.inputTranscription!.text, "what is the weather")
      yield* next((m) => m.toolCall !== undefined, "the spoken turn's toolCall")

      // The mock's server messages, as genai types them.
      const sent = (yield* mock.awaitConnection(0)).sent().filter((f) => !f.noise).map((f) => f.json)
      const errors = yield* Effect.promise(() => typeCheckFrames(sent, {
        module: "@google/genai",
        type: "LiveServerMessage",
        // a class whose `text` and `data` are getters over the wire fields
        as: `Omit<LiveServerMessage, "text" | "data">`
      }))
      assert.deepStrictEqual(errors.map((e) => e.split("\n    at")[0]), [], `${sent.length} messages`)

      // An error: Gemini reports it with a close frame.
      // (`connect` itself does not settle when the server closes before `setupComplete`.)
      const refused = inbox<{ code: number; reason: string }>()
      void ai.live.connect({
        model: "gemini-unknown",
        config: { responseModalities: [Modality.AUDIO] },
        callbacks: { onmessage: () => {}, onclose: (e) => refused.push({ code: e.code, reason: e.reason }) }
      })
      const closed = yield* Effect.promise(() => refused.next(() => true, "the close of the unknown model's session"))
      assert.deepStrictEqual(closed, { code: 1008, reason: "models/gemini-unknown is not found for API version v1beta, or is not supported for bidiGenerateContent." })
    }).pipe(Effect.scoped), 60_000)
})
