/**
 * The service with the offline voice pipeline (no realtime model): a browser-like client streams
 * a spoken question as 16 kHz PCM16 over /ws, or a phone caller as 8 kHz µ-law over /twilio; the
 * server hears it (WebRTC VAD, pocketsphinx), the floor passes, and the agents' answers come back
 * as audio (flite; µ-law media on the phone) and, on /ws, as text.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import * as Mulaw from "../../services/Mulaw.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, Tool } from "../../src/index.ts"
import { engines, speak } from "../voice/harness.ts"
import { connect, start, wait } from "./harness.ts"

const weather = Agent.make({ name: "weather", instructions: "Weather.", onEnter: Agent.say("It will be sunny and warm all day.").pipe(Effect.asVoid) })
const greeter = Agent.make({ name: "greeter", instructions: "Greet.", tools: [Tool.handoff("transfer_to_weather", () => weather)] })
const model = ScriptedModel.layer([{ when: { user: /weather|whether/i }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } }])

/** A /ws client that asked the weather out loud, its last word the last audio it sent (no silence after it). */
const askWithNoSilenceAfter = Effect.gen(function*() {
  const question = yield* speak("What is the weather in Paris?").pipe(Effect.provide(engines))
  const server = yield* start(greeter, Layer.mergeAll(model, engines))
  const client = yield* connect(`${server.ws}/ws`)
  yield* wait(() => client.waitFor((f) => f.type === "ready"))
  for (const frame of AudioFrame.split(AudioFrame.concat([AudioFrame.silence(300, 16000), question]), 20)) {
    client.socket.send(AudioFrame.toPcm16(frame))
  }
  return client
})

describe("Server voice (cascaded pipeline)", () => {
  it.live("/ws: a spoken question is heard, the floor passes, the answer comes back spoken and written", () =>
    Effect.gen(function*() {
      const question = yield* speak("What is the weather in Paris?").pipe(Effect.provide(engines))
      const server = yield* start(greeter, Layer.mergeAll(model, engines))
      const client = yield* connect(`${server.ws}/ws`)
      const ready = yield* wait(() => client.waitFor((f) => f.type === "ready"))
      assert.strictEqual(ready.audio, "pipeline")
      client.sendJson({ type: "audio_format", sampleRate: 16000 })
      const audio = AudioFrame.concat([AudioFrame.silence(300, 16000), question, AudioFrame.silence(1200, 16000)])
      for (const frame of AudioFrame.split(audio, 20)) client.socket.send(AudioFrame.toPcm16(frame))
      const heard = yield* wait(() => client.waitFor((f) => f.type === "user_input_transcribed" && f.final, "the final transcript", 15_000))
      assert.match(heard.transcript, /weather/)
      yield* wait(() => client.waitFor((f) => f.type === "agent_handoff" && f.to === "weather", "the handoff"))
      yield* wait(() => client.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "the spoken answer", 15_000))
      const format = client.frames.find((f) => f.type === "audio_format")
      assert.strictEqual(format?.sampleRate, 16000)
      // about 2.5 s of flite's speech came back as PCM16
      const bytes = client.binary.reduce((n, b) => n + b.byteLength, 0)
      assert.isAbove(bytes / 2 / 16000, 1.5)
      assert.include(client.frames.filter((f) => f.type === "agent_text").map((f) => f.delta).join(""), "It will be sunny and warm all day.")
    }).pipe(Effect.scoped), 60_000)

  it.live("issue 33 item 8: push-to-talk released right after speaking: the client's audio_end ends the turn, which is answered", () =>
    Effect.gen(function*() {
      const client = yield* askWithNoSilenceAfter
      // the button goes up as the words end, and the page says the audio ended
      client.sendJson({ type: "audio_end" })
      const heard = yield* wait(() => client.waitFor((f) => f.type === "user_input_transcribed" && f.final, "the final transcript", 15_000))
      assert.match(heard.transcript, /weather/)
      yield* wait(() => client.waitFor((f) => f.type === "agent_handoff" && f.to === "weather", "the answer (a handoff)"))
      assert.isFalse(client.frames.some((f) => f.type === "error"), JSON.stringify(client.frames.filter((f) => f.type === "error")))
    }).pipe(Effect.scoped), 60_000)

  it.live("issue 33 item 8: a line that stops sending audio mid-speech counts as silence: the turn ends after the endpointing delay", () =>
    Effect.gen(function*() {
      const client = yield* askWithNoSilenceAfter
      // and nothing more: no silence, no audio_end (a muted microphone, a dropped stream)
      const heard = yield* wait(() => client.waitFor((f) => f.type === "user_input_transcribed" && f.final, "the final transcript", 15_000))
      assert.match(heard.transcript, /weather/)
      yield* wait(() => client.waitFor((f) => f.type === "agent_handoff" && f.to === "weather", "the answer (a handoff)"))
    }).pipe(Effect.scoped), 60_000)

  it.live("/twilio: a caller's µ-law question is heard by the pipeline, the floor passes, the answer comes back as µ-law media", () =>
    Effect.gen(function*() {
      const question = yield* speak("What is the weather in Paris?").pipe(Effect.provide(engines))
      // pocketsphinx's model is for 16 kHz speech; it hears phone-band audio poorly, so the
      // greeter hands off on any turn: what is checked is that the caller is heard at all.
      const anyTurn = ScriptedModel.layer([{ when: { agent: "greeter" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } }])
      const server = yield* start(greeter, Layer.mergeAll(anyTurn, engines))
      const caller = yield* connect(`${server.ws}/twilio`)
      const streamSid = "MZ00000000000000000000000000000002"
      caller.sendJson({ event: "connected", protocol: "Call", version: "1.0.0" })
      caller.sendJson({ event: "start", streamSid, start: { streamSid, mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 } } })
      const audio = AudioFrame.concat([AudioFrame.silence(300, 16000), question, AudioFrame.silence(1200, 16000)])
      for (const frame of AudioFrame.split(toPhoneBand(audio), 20)) {
        caller.sendJson({ event: "media", streamSid, media: { track: "inbound", payload: Buffer.from(Mulaw.encode(frame.data)).toString("base64") } })
      }
      // Only the weather agent speaks, once the floor has passed to it: audio back means the caller
      // was heard. Its mark follows its audio (the greeter's reply, a handoff, is marked first).
      const afterAudio = (f: { readonly event?: unknown }) => {
        const firstMedia = caller.frames.findIndex((m) => m.event === "media")
        return f.event === "mark" && firstMedia >= 0 && caller.frames.indexOf(f) > firstMedia
      }
      yield* wait(() => caller.waitFor(afterAudio, "a mark after the spoken answer", 20_000))
      const media = caller.frames.filter((f) => f.event === "media")
      assert.isTrue(media.every((f) => f.streamSid === streamSid))
      const seconds = media.reduce((n, f) => n + Buffer.from(f.media.payload, "base64").length, 0) / 8000
      assert.isAbove(seconds, 1.5)
    }).pipe(Effect.scoped), 60_000)
})

/** 16 kHz to the phone's 8 kHz: each pair of samples averaged (a crude low-pass, enough for speech). */
const toPhoneBand = (audio: AudioFrame.AudioFrame): AudioFrame.AudioFrame => {
  const out = new Int16Array(Math.floor(audio.data.length / 2))
  for (let i = 0; i < out.length; i++) out[i] = Math.round((audio.data[2 * i]! + audio.data[2 * i + 1]!) / 2)
  return AudioFrame.make(out, 8000)
}
