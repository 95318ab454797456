/**
 * The audio recorder: both sides of a call to WAV files, each frame placed at the time it
 * arrived (silence in the gaps) or right after the previous one when audio comes in a burst;
 * the agent's audio still reaches the real output; rates other than the track's are resampled.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../../layers/testing/ScriptedRealtime.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import * as AudioInput from "../../../services/AudioInput.ts"
import { AudioOutput, type AudioOutputService } from "../../../services/AudioOutput.ts"
import * as AudioRecorder from "../../../src/observe/AudioRecorder.ts"
import * as Wav from "../../../services/Wav.ts"
import { Agent, AgentSession } from "../../../src/index.ts"

const tone = (ms: number, rate: number, value: number) => AudioFrame.make(new Int16Array(Math.round((ms / 1000) * rate)).fill(value), rate)
const info = { agent: "a", speechId: "s" }

const readWav = (fs: FileSystem.FileSystem, path: string) =>
  Effect.flatMap(fs.readFile(path), (bytes) => {
    const wav = Wav.decodeSync(bytes)
    return typeof wav === "string" ? Effect.die(new Error(wav)) : Effect.succeed({ sampleRate: wav.sampleRate, channels: wav.channels, samples: wav.data })
  })

describe("AudioRecorder", () => {
  it.effect("the agent's side: frames at their arrival time, a burst right after, the real output still fed", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const prefix = `${yield* fs.makeTempDirectoryScoped()}/call`
      const played: Array<number> = []
      const inner: AudioOutputService = { write: (pcm) => Effect.sync(() => void played.push(pcm.byteLength)), clear: () => Effect.void }
      yield* Effect.gen(function*() {
        const out = yield* AudioOutput
        yield* out.write(AudioFrame.toPcm16(tone(100, 24000, 1000)), 24000, info)
        yield* TestClock.adjust("1 second")
        yield* out.write(AudioFrame.toPcm16(tone(100, 24000, 2000)), 24000, info)
        yield* out.write(AudioFrame.toPcm16(tone(100, 24000, 3000)), 24000, info) // a burst: no gap
      }).pipe(Effect.provide(AudioRecorder.layer(prefix)), Effect.provideService(AudioOutput, inner))

      assert.deepStrictEqual(played, [4800, 4800, 4800])
      const wav = yield* readWav(fs, `${prefix}.agent.wav`)
      assert.strictEqual(wav.sampleRate, 24000)
      assert.strictEqual(wav.channels, 1)
      assert.strictEqual(wav.samples.length, 24000 + 2400 + 2400)
      assert.deepStrictEqual([wav.samples[0], wav.samples[2399], wav.samples[2400], wav.samples[23999]], [1000, 1000, 0, 0])
      assert.deepStrictEqual([wav.samples[24000], wav.samples[26399], wav.samples[26400], wav.samples[28799]], [2000, 2000, 3000, 3000])
      // No user audio: no user file.
      assert.isFalse(yield* fs.exists(`${prefix}.user.wav`))
    }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)))

  it.effect("the user's side: every frame read from the input, other rates and stereo brought to the track's", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const prefix = `${yield* fs.makeTempDirectoryScoped()}/call`
      const queue = yield* AudioInput.makeQueue
      const read = yield* Effect.gen(function*() {
        const input = yield* AudioInput.AudioInput
        yield* queue.offer(tone(20, 16000, 500))
        yield* queue.offer(AudioFrame.make(new Int16Array(960).fill(800), 48000, 2)) // 10 ms of 48 kHz stereo
        yield* queue.end
        return yield* Stream.runCollect(input.frames)
      }).pipe(Effect.provide(AudioRecorder.layer(prefix)), Effect.provideService(AudioInput.AudioInput, queue.service))
      assert.strictEqual(read.length, 2)
      const wav = yield* readWav(fs, `${prefix}.user.wav`)
      assert.strictEqual(wav.sampleRate, 16000)
      assert.strictEqual(wav.samples.length, 320 + 160)
      assert.deepStrictEqual([wav.samples[0], wav.samples[319], wav.samples[320], wav.samples[479]], [500, 500, 800, 800])
    }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)))

  it.effect("a realtime agent's answer is recorded as it is played", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const prefix = `${yield* fs.makeTempDirectoryScoped()}/rt`
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: Agent.make({ name: "talker", instructions: "You talk." }) })
        yield* drive(session.run("tell me a story"))
      }).pipe(
        Effect.scoped,
        Effect.provide(Layer.provideMerge(
          AudioRecorder.layer(prefix),
          ScriptedRealtime.layer({ rules: [{ when: { user: "story" }, reply: { text: ["Once ", "upon ", "a ", "time."] } }], audio: true })
        ))
      )
      const wav = yield* readWav(fs, `${prefix}.agent.wav`)
      assert.strictEqual(wav.sampleRate, 24000)
      // Four text deltas with 10 ms of audio each.
      assert.isAtLeast(wav.samples.length, 4 * 240)
    }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)))

  it("WAV: a streamed header round-trips; what is not a WAV file is an error", () => {
    const data = new Int16Array([1, -2, 3])
    const bytes = new Uint8Array(Wav.HEADER_BYTES + 6)
    bytes.set(Wav.header(8000, 1, 6))
    bytes.set(new Uint8Array(data.buffer), Wav.HEADER_BYTES)
    const wav = Wav.decodeSync(bytes)
    assert.notStrictEqual(typeof wav, "string")
    if (typeof wav !== "string") assert.deepStrictEqual([wav.sampleRate, [...wav.data]], [8000, [1, -2, 3]])
    assert.isString(Wav.decodeSync(new Uint8Array(10)))
    assert.isString(Wav.decodeSync(new TextEncoder().encode("RIFF....WAVEjunkjunkjunkjunkjunkjunkjunkjunkjunk")))
  })})
