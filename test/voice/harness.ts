/**
 * Real audio for the voice pipeline tests: flite (rms) speaks, WebRTC VAD and pocketsphinx
 * listen, an AudioOutput records what the agents played (with wall times), and pocketsphinx
 * transcribes it back.
 */
import { Clock, Effect, Layer, Stream } from "effect"
import * as FliteTts from "../../layers/local/FliteTts.ts"
import * as PocketsphinxStt from "../../layers/local/PocketsphinxStt.ts"
import * as WebRtcVad from "../../layers/local/WebRtcVad.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import type { AudioOutputService } from "../../services/AudioOutput.ts"
import { Stt } from "../../services/Stt.ts"
import { Tts } from "../../services/Tts.ts"

export const engines = Layer.mergeAll(FliteTts.layer({ voice: "rms" }), PocketsphinxStt.layer(), WebRtcVad.layer())

/** What flite says for `text`, as one 16 kHz frame. */
export const speak = (text: string) =>
  Effect.gen(function*() {
    const tts = yield* Tts
    return AudioFrame.concat(yield* Stream.runCollect(tts.synthesize(text)))
  })

export const silence = (ms: number) => AudioFrame.silence(ms, 16000)

/** 20 ms frames of the parts in order, as a transport would deliver them. */
export const frames = (...parts: ReadonlyArray<AudioFrame.AudioFrame>) => AudioFrame.split(AudioFrame.concat(parts), 20)

export interface Played {
  readonly agent: string
  readonly speechId: string
  readonly frame: AudioFrame.AudioFrame
  readonly at: number
}

/** An AudioOutput that keeps every frame with the agent and the wall time it was handed over. */
export const recorder = () => {
  const played: Array<Played> = []
  const clears: Array<{ readonly agent: string; readonly speechId: string; readonly at: number }> = []
  const output: AudioOutputService = {
    write: (pcm, sampleRate, info) =>
      Clock.currentTimeMillis.pipe(Effect.map((at) => void played.push({ agent: info.agent, speechId: info.speechId, frame: AudioFrame.fromPcm16(pcm, sampleRate), at }))),
    clear: (info) => Clock.currentTimeMillis.pipe(Effect.map((at) => void clears.push({ agent: info.agent, speechId: info.speechId, at })))
  }
  const audioOf = (agent: string) => AudioFrame.concat(played.filter((p) => p.agent === agent).map((p) => p.frame))
  return { output, played, clears, audioOf }
}

/** What pocketsphinx hears in `audio` (16 kHz), as one utterance. */
export const transcribe = (audio: AudioFrame.AudioFrame) =>
  Effect.gen(function*() {
    const stt = yield* Stt
    const stream = yield* stt.stream()
    for (const frame of AudioFrame.split(audio, 20)) yield* stream.push(frame)
    yield* stream.endUtterance
    const finals = yield* stream.events.pipe(Stream.filter((e) => e._tag === "Final"), Stream.take(1), Stream.runCollect)
    return finals[0]?.text ?? ""
  }).pipe(Effect.scoped)
