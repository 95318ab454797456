/**
 * Issue 34 for a voice call: the real service with the offline voice pipeline (`baton serve
 * --voice local`: WebRTC VAD, pocketsphinx, flite; the demo model) twice on one SQLite file,
 * SIGKILL between. The call resumed by the second process listens and speaks as a new voice call
 * there does: a spoken question after the resume is heard, transcribed, answered by the agent
 * that held the floor, and the answer comes back as audio.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, afterEach, assert, beforeAll, describe, it } from "vitest"
import { accessToken, connect, type Service, startService } from "../../examples/resume/service.ts"
import * as FliteTts from "../../layers/local/FliteTts.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { speak } from "../voice/harness.ts"

const SECRET = "crash-resume-voice-secret"

let folder: string
const running: Array<Service> = []
beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), "baton-crash-voice-"))
})
afterEach(() => {
  for (const service of running.splice(0)) service.child.kill("SIGKILL")
})
afterAll(() => rmSync(folder, { recursive: true, force: true }))

const serve = async (store: string) => {
  const service = await startService({ store, token: SECRET, voice: "local" })
  running.push(service)
  return service
}

const bytesOf = (chunks: ReadonlyArray<Buffer>) => chunks.reduce((n, b) => n + b.byteLength, 0)

describe("a voice call outlives its process (issue 34)", () => {
  it("resumed from the store by another process, a voice call gets its pipeline again: the next spoken turn is heard, answered and spoken", async () => {
    const question = await Effect.runPromise(speak("What is the weather in Oslo?").pipe(Effect.provide(FliteTts.layer({ voice: "rms" }))))
    const store = `sqlite:${join(folder, "voice.db")}`
    const first = await serve(store)
    const caller = await connect(`${first.ws}/ws?token=${await accessToken(first, SECRET)}`)
    const ready = await caller.waitFor((f) => f.type === "ready", "ready")
    assert.strictEqual(ready.audio, "pipeline", "a new call on this service has voice")
    caller.send({ type: "user_text", text: "What's the weather in Paris?" })
    await caller.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "weather's answer", 30_000)
    assert.isAbove(bytesOf(caller.binary), 16_000, "the answer was spoken")
    await first.crash()

    const second = await serve(store)
    const back = await connect(`${second.ws}/ws?resume=${encodeURIComponent(ready.resumeToken)}`)
    const resumed = await back.waitFor((f) => f.type === "ready", "ready")
    assert.deepInclude(resumed, { resumed: true, sessionId: ready.sessionId, agent: "weather" })
    assert.strictEqual(resumed.audio, "pipeline", "the resumed call has its voice pipeline, as a new one does")
    await back.waitFor((f) => f.type === "history", "history")

    back.send({ type: "audio_format", sampleRate: 16000 })
    const audio = AudioFrame.concat([AudioFrame.silence(300, 16000), question, AudioFrame.silence(1200, 16000)])
    for (const frame of AudioFrame.split(audio, 20)) back.socket.send(AudioFrame.toPcm16(frame))
    const heard = await back.waitFor((f) => f.type === "user_input_transcribed" && f.final, "the final transcript", 30_000)
    assert.notStrictEqual(heard.transcript.trim(), "", "the resumed call heard the caller")
    const at = back.frames.indexOf(heard)
    await back.waitFor((f) => back.frames.indexOf(f) > at && f.type === "speech_finished" && f.agent === "weather", "weather's spoken answer", 30_000)
    const said = back.frames.slice(at).filter((f) => f.type === "agent_text" && f.agent === "weather").map((f) => f.delta).join("")
    assert.notStrictEqual(said, "", "the agent that held the floor answered")
    assert.strictEqual(back.frames.find((f) => f.type === "audio_format")?.sampleRate, 16000)
    // at least a second of the answer's speech came back as PCM16 at 16 kHz
    assert.isAbove(bytesOf(back.binary) / 2 / 16000, 1)
    assert.isFalse(back.frames.some((f) => f.type === "error"), JSON.stringify(back.frames.filter((f) => f.type === "error")))
  }, 120_000)
})
