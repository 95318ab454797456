/**
 * The front desk by voice, offline: a caller's WAV in, the call's WAV out.
 *
 *   npx node examples/voice-front-desk/main.ts [caller.wav | -] [call.wav]
 *
 * Without an output path the call goes to a fresh folder under the system's temp directory (the
 * path is printed), never into the clone.
 *
 * With no caller file (or `-`), flite speaks the demo caller's line ("What is the weather in Paris?")
 * into one first. The caller's audio is played into the session in real time after the
 * greeting, through the offline pipeline (WebRTC VAD, pocketsphinx, the front desk's demo model,
 * flite); the agents' speech and the caller's audio are written to `call.wav` (mono, 16 kHz) on
 * one timeline. Needs the Debian packages `npm run setup` installs (flite, pocketsphinx,
 * pocketsphinx-en-us).
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Clock, Effect, Layer, Stream } from "effect"
import { FliteTts, PocketsphinxStt, WebRtcVad } from "@baton-voice/baton/local"
import { AudioFrame, AudioInput, AudioOutput, Tts, Wav } from "@baton-voice/baton/services"
import { VoicePipeline } from "@baton-voice/baton/voice"
import { greeter, makeFrontDesk } from "../front-desk/agents.ts"
import * as DemoModel from "../front-desk/demoModel.ts"

const RATE = 16000
export const DEMO_CALLER = "What is the weather in Paris?"

/** The caller's audio: the file, or the demo line spoken by flite. */
const callerAudio = (path: string | undefined) =>
  path !== undefined
    ? Wav.readFile(path)
    : Effect.gen(function*() {
      const tts = yield* Tts.Tts
      return AudioFrame.concat(yield* Stream.runCollect(tts.synthesize(DEMO_CALLER)))
    })

/** Both sides on one timeline: each frame placed at the wall time it was played or heard. */
const mixdown = (parts: ReadonlyArray<{ readonly at: number; readonly frame: AudioFrame.AudioFrame }>, start: number) => {
  const end = Math.max(...parts.map((p) => p.at - start + AudioFrame.durationMs(p.frame)), 0)
  const out = new Int16Array(Math.ceil((end / 1000) * RATE))
  for (const { at, frame } of parts) {
    const offset = Math.round(((at - start) / 1000) * RATE)
    for (let i = 0; i < frame.data.length && offset + i < out.length; i++) {
      out[offset + i] = Math.max(-32768, Math.min(32767, out[offset + i]! + frame.data[i]!))
    }
  }
  return AudioFrame.make(out, RATE)
}

export const call = (callerPath: string | undefined, outPath: string) =>
  Effect.gen(function*() {
    const caller = yield* callerAudio(callerPath)
    if (caller.sampleRate !== RATE || caller.channels !== 1) {
      return yield* Effect.fail(new Error(`${callerPath}: the caller's WAV must be 16 kHz mono (it is ${caller.sampleRate} Hz × ${caller.channels})`))
    }
    const start = yield* Clock.currentTimeMillis
    const timeline: Array<{ readonly at: number; readonly frame: AudioFrame.AudioFrame }> = []
    const output: AudioOutput.AudioOutputService = {
      write: (pcm, sampleRate) =>
        Effect.gen(function*() {
          timeline.push({ at: yield* Clock.currentTimeMillis, frame: AudioFrame.fromPcm16(pcm, sampleRate) })
        }),
      clear: () => Effect.void
    }
    const line = yield* AudioInput.makeQueue
    const { session, inputDone } = yield* VoicePipeline.start({ agent: greeter, userdata: makeFrontDesk(), input: line.service.frames }).pipe(
      Effect.provideService(AudioOutput.AudioOutput, output)
    )
    yield* session.events.pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          if (event.type === "user_input_transcribed" && event.final) console.log(`caller: ${event.transcript}`)
          if (event.type === "agent_handoff") console.log(`── floor: ${event.from ?? ""} → ${event.to}`)
          if (event.type === "conversation_item_added" && event.item._tag === "Message" && event.item.role === "assistant") {
            console.log(`${event.agent}: ${event.item.text}${event.item.interrupted ? " …[cut]" : ""}`)
          }
        })
      ),
      Effect.forkScoped
    )
    // the caller waits for the greeting, then speaks: 20 ms frames in real time, then a pause
    yield* session.idle
    for (const frame of AudioFrame.split(AudioFrame.concat([caller, AudioFrame.silence(1000, RATE)]), 20)) {
      timeline.push({ at: yield* Clock.currentTimeMillis, frame })
      yield* line.offer(frame)
      yield* Effect.sleep(20)
    }
    yield* line.end
    yield* inputDone
    yield* session.idle
    yield* Wav.writeFile(outPath, mixdown(timeline, start))
    console.log(`wrote ${outPath}`)
  }).pipe(Effect.scoped)

const engines = Layer.mergeAll(FliteTts.layer({ voice: "rms" }), PocketsphinxStt.layer(), WebRtcVad.layer(), DemoModel.layer({}))

if (import.meta.main) {
  const [callerPath, outPath] = process.argv.slice(2)
  // "" or "-" for the caller: the demo line
  const caller = callerPath === undefined || callerPath === "" || callerPath === "-" ? undefined : callerPath
  NodeRuntime.runMain(call(caller, outPath || join(mkdtempSync(join(tmpdir(), "baton-call-")), "call.wav")).pipe(Effect.provide(engines)))
}

export { engines }
