/**
 * An operator's voice on a realtime-model session (issue 35): it reaches the caller, and is
 * transcribed into the history as the operator's words by the service's `Stt` (pocketsphinx here),
 * not by the realtime model, whose input is the caller's turn and would be answered. Handed back,
 * the agent's realtime connection holds those words: the agent knows what the operator said.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as ScriptedRealtime from "../../layers/testing/ScriptedRealtime.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Agent } from "../../src/index.ts"
import { engines, speak } from "../voice/harness.ts"
import { connect, start, wait } from "./harness.ts"

const until = (check: () => boolean, what: string, ms = 15_000) =>
  new Promise<void>((resolve, reject) => {
    const started = Date.now()
    const poll = () => check() ? resolve() : Date.now() - started > ms ? reject(new Error(`never: ${what}`)) : setTimeout(poll, 20)
    poll()
  })

// OpenAI Realtime-like (the conversation changes on the open connection) and Gemini Live-like
// (fixed at connect: the agent handed back gets its history on a new connection).
const kinds = [["OpenAI-like", ScriptedRealtime.openAiLike], ["Gemini-like", ScriptedRealtime.geminiLike]] as const

describe("an operator's voice on a realtime session (sockets)", () => {
  for (const [kind, capabilities] of kinds) {
    it.live(`${kind}: reaches the caller, is transcribed into the history as the operator's (no model response), and the agent handed back holds those words`, () =>
      Effect.gen(function*() {
        const words = yield* speak("I can help you with that.").pipe(Effect.provide(engines))
        const realtime = yield* Layer.build(ScriptedRealtime.layer({ capabilities, rules: [{ when: () => true, reply: { text: "Front desk here." } }] }))
        const model = Context.get(realtime, ScriptedRealtime.ScriptedRealtime)
        const front = Agent.make({ name: "front", instructions: "You are the front desk." })
        // The service has a realtime model and an Stt (and, unused on a realtime line, VAD and TTS).
        const server = yield* start(front, Layer.mergeAll(Layer.succeedContext(realtime), engines), { maxLagMs: 0 })
        const caller = yield* connect(`${server.ws}/ws`)
        const ready = yield* wait(() => caller.waitFor((f) => f.type === "ready"))
        assert.strictEqual(ready.audio, "realtime")
        const ada = yield* connect(`${server.ws}/operator/ws?name=ada`)
        ada.sendJson({ type: "open", session: ready.sessionId })
        assert.strictEqual((yield* wait(() => ada.waitFor((f) => f.type === "history", "the session opened"))).audio, "realtime")
        ada.sendJson({ type: "take_over" })
        yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.to === "ada", "ada on the floor"))
        const responses = () => model.connections.reduce((n, c) => n + c.responses.length, 0)
        const pushed = () => model.connections.flatMap((c) => c.ops).filter((o) => o.op === "pushAudio").length
        const [responsesBefore, pushedBefore] = [responses(), pushed()]
        const before = caller.binary.reduce((n, b) => n + b.byteLength, 0)
        ada.sendJson({ type: "audio_format", sampleRate: 16000 })
        for (const frame of AudioFrame.split(AudioFrame.concat([AudioFrame.silence(200, 16000), words, AudioFrame.silence(300, 16000)]), 20)) {
          ada.socket.send(AudioFrame.toPcm16(frame))
        }
        ada.sendJson({ type: "audio_end" })
        // Her voice to the caller, as the agents' audio goes.
        yield* wait(() => until(() => caller.binary.reduce((n, b) => n + b.byteLength, 0) - before >= AudioFrame.toPcm16(words).byteLength, "ada's voice at the caller"))
        // Her words in the history as hers, transcribed by the service's Stt.
        const said = yield* wait(() => ada.waitFor((f) => f.type === "event" && f.event.type === "conversation_item_added" && f.event.item.role === "assistant" && f.event.item.agent === "ada", "ada's words recorded", 15_000))
        const text: string = said.event.item.text
        assert.match(text, /help|that|can/i)
        // The realtime model neither heard her voice nor was asked to answer it.
        assert.strictEqual(pushed(), pushedBefore, "no operator audio to the realtime model")
        assert.strictEqual(responses(), responsesBefore, "no model response while ada holds the floor")
        assert.isFalse(ada.frames.some((f) => f.type === "error"), JSON.stringify(ada.frames.filter((f) => f.type === "error")))
        // Handed back: the agent's connection holds what ada said.
        ada.sendJson({ type: "hand_back", agent: "front" })
        yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.kind === "hand_back" && f.to === "front", "the floor back"))
        const held = () => model.connections.some((c) => !c.closed && c.items.some((i) => i._tag === "Message" && i.text.includes(text)))
        yield* wait(() => until(held, "ada's words on the agent's realtime connection"))
      }).pipe(Effect.scoped), 60_000)
  }
})
