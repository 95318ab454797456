import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Stream } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as FliteFfi from "../../../layers/local/FliteFfi.ts"
import * as FliteTts from "../../../layers/local/FliteTts.ts"
import * as PocketsphinxStt from "../../../layers/local/PocketsphinxStt.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { Stt } from "../../../services/Stt.ts"
import { Tts } from "../../../services/Tts.ts"
import { VoiceError } from "../../../services/VoiceError.ts"
import { pad, speak, wordAccuracy } from "./helpers.ts"

const failureOf = <A>(exit: Exit.Exit<A, VoiceError>): VoiceError => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
  assert.instanceOf(error, VoiceError)
  return error as VoiceError
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const sameSamples = (a: AudioFrame.AudioFrame, b: AudioFrame.AudioFrame) =>
  a.sampleRate === b.sampleRate && a.data.length === b.data.length && a.data.every((x, i) => x === b.data[i])

describe.each(["library", "program"] as const)("FliteTts, engine %s", (engine) => {
  const flite = (options: FliteTts.FliteTtsOptions = {}) => FliteTts.layer({ engine, ...options })

  it.effect("speaks a sentence as 16 kHz mono frames of 20 ms with sound in them", () =>
    Effect.gen(function*() {
      const tts = yield* Tts
      assert.strictEqual(tts.sampleRate, 16000)
      const frames = yield* Stream.runCollect(tts.synthesize("Good morning, this is the front desk."))
      assert.isAbove(frames.length, 50)
      for (const f of frames.slice(0, -1)) assert.strictEqual(AudioFrame.durationMs(f), 20)
      const all = AudioFrame.concat(frames)
      assert.strictEqual(all.channels, 1)
      assert.isAbove(AudioFrame.durationMs(all), 1000)
      assert.isAbove(AudioFrame.rms(all), 0.01)
    }).pipe(Effect.provide(flite())), 30_000)

  it.effect("another voice gives other audio, at its own rate; an empty text gives none", () =>
    Effect.gen(function*() {
      const rms = yield* speak("Hello there.")
      const slt = yield* speak("Hello there.", "slt")
      assert.notDeepEqual(Array.from(rms.data.slice(0, 4000)), Array.from(slt.data.slice(0, 4000)))
      const kal = yield* speak("Hello there.", "kal")
      assert.strictEqual(kal.sampleRate, 8000)
      assert.isAbove(AudioFrame.rms(kal), 0.01)
      const tts = yield* Tts
      assert.strictEqual((yield* Stream.runCollect(tts.synthesize("   "))).length, 0)
    }).pipe(Effect.provide(flite())), 30_000)

  it.effect("a speed of 2 halves the speech, and the next sentence without one is as long as before", () =>
    Effect.gen(function*() {
      const tts = yield* Tts
      const text = "Hello, I would like to book a table for two people."
      const normal = AudioFrame.concat(yield* Stream.runCollect(tts.synthesize(text)))
      const fast = AudioFrame.concat(yield* Stream.runCollect(tts.synthesize(text, { speed: 2 })))
      const ratio = fast.data.length / normal.data.length
      assert.isTrue(ratio > 0.4 && ratio < 0.6, `speed 2 gave ${ratio} of the length`)
      const again = AudioFrame.concat(yield* Stream.runCollect(tts.synthesize(text)))
      assert.strictEqual(again.data.length, normal.data.length)
    }).pipe(Effect.provide(flite())), 30_000)

  it.effect("a voice flite does not have is refused (flite itself would fall back silently)", () =>
    Effect.gen(function*() {
      const tts = yield* Tts
      const error = failureOf(yield* Stream.runCollect(tts.synthesize("Hi.", { voice: "nosuch" })).pipe(Effect.exit))
      assert.strictEqual(error.reason, "InvalidRequest")
      assert.include(error.message, "rms")
      const build = failureOf(yield* Layer.build(flite({ voice: "nosuch" })).pipe(Effect.exit))
      assert.strictEqual(build.reason, "InvalidRequest")
    }).pipe(Effect.provide(flite())), 30_000)

  it.effect("a missing engine fails the layer with the apt-get line", () =>
    Effect.gen(function*() {
      const missing = engine === "program" ? { binary: "/nonexistent/flite" } : { library: "/nonexistent/libflite.so.1" }
      const error = failureOf(yield* Layer.build(flite(missing)).pipe(Effect.exit))
      assert.strictEqual(error.reason, "Unavailable")
      assert.strictEqual(error.source, "tts")
      assert.include(error.message, engine === "program" ? "apt-get install -y flite" : "apt-get install -y libflite1")
    }))

  it.effect("leaves no file behind a synthesis, and no directory behind the layer", () =>
    Effect.gen(function*() {
      const tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "flite-tmp-"))
      const saved = process.env["TMPDIR"]
      process.env["TMPDIR"] = tmp
      yield* Effect.gen(function*() {
        const tts = yield* Tts
        yield* Stream.runCollect(tts.synthesize("Leave nothing behind."))
        const dirs = Fs.readdirSync(tmp)
        // the program works in a directory of its own; the library needs none
        assert.strictEqual(dirs.length, engine === "program" ? 1 : 0)
        for (const dir of dirs) assert.deepStrictEqual(Fs.readdirSync(Path.join(tmp, dir)), [])
      }).pipe(Effect.provide(flite()), Effect.ensuring(Effect.sync(() => {
        if (saved === undefined) delete process.env["TMPDIR"]
        else process.env["TMPDIR"] = saved
      })))
      assert.deepStrictEqual(Fs.readdirSync(tmp), [])
      Fs.rmSync(tmp, { recursive: true })
    }), 30_000)
})

describe("FliteTts", () => {
  it.effect("runs libflite in process by default, and the program when the library cannot be loaded", () =>
    Effect.gen(function*() {
      const byDefault = yield* FliteTts.make()
      assert.strictEqual(byDefault.engine, "library")
      const fallback = yield* FliteTts.make({ library: "/nonexistent/libflite.so.1" })
      assert.strictEqual(fallback.engine, "program")
      assert.strictEqual(fallback.sampleRate, 16000)
    }).pipe(Effect.scoped), 30_000)

  it.effect("the library speaks a sentence sample for sample as the program does, for each voice's rate", () =>
    Effect.gen(function*() {
      const library = yield* FliteTts.make({ engine: "library" })
      const program = yield* FliteTts.make({ engine: "program" })
      const whole = (tts: typeof library, text: string, voice: string) =>
        Effect.map(Stream.runCollect(tts.synthesize(text, { voice })), AudioFrame.concat)
      for (const voice of ["rms", "slt", "kal"]) {
        const text = "It will be sunny and warm all day."
        const [a, b] = [yield* whole(library, text, voice), yield* whole(program, text, voice)]
        assert.isTrue(sameSamples(a, b), `${voice}: ${a.data.length} samples at ${a.sampleRate} Hz, the program ${b.data.length} at ${b.sampleRate} Hz`)
      }
    }).pipe(Effect.scoped), 60_000)

  it.effect("two syntheses asked at once each give the audio they give alone (one flite call at a time)", () =>
    Effect.gen(function*() {
      const tts = yield* Tts
      const texts = ["Please transfer me to the billing department.", "What time does the hotel restaurant open tomorrow?"]
      const alone = [yield* speak(texts[0]!), yield* speak(texts[1]!)]
      const together = yield* Effect.all(texts.map((text) => Effect.map(Stream.runCollect(tts.synthesize(text)), AudioFrame.concat)), {
        concurrency: 2
      })
      assert.isTrue(sameSamples(together[0]!, alone[0]!))
      assert.isTrue(sameSamples(together[1]!, alone[1]!))
    }).pipe(Effect.provide(FliteTts.layer({ engine: "library" }))), 30_000)

  it.effect("what the library says, pocketsphinx transcribes back to its words", () =>
    Effect.gen(function*() {
      for (const sentence of ["Hello, I would like to book a table for two people.", "Please transfer me to the billing department."]) {
        const audio = pad(yield* speak(sentence), 200, 300)
        const heard = yield* Effect.scoped(Effect.gen(function*() {
          const stream = yield* (yield* Stt).stream()
          for (const frame of AudioFrame.split(audio, 20)) yield* stream.push(frame)
          yield* stream.endUtterance
          const events = yield* stream.events.pipe(Stream.takeUntil((e) => e._tag === "Final"), Stream.runCollect)
          return events.at(-1)?._tag === "Final" ? events.at(-1)!.text : ""
        }))
        assert.isAtLeast(wordAccuracy(sentence, heard), 0.8, `"${sentence}" was heard as "${heard}"`)
      }
    }).pipe(Effect.provide(Layer.mergeAll(FliteTts.layer({ engine: "library" }), PocketsphinxStt.layer()))), 60_000)

  it.live("interrupting the library's stream returns at once: a synthesis in flight finishes unheard, one queued is dropped", () =>
    Effect.gen(function*() {
      const tts = yield* Tts
      const long = "The quick brown fox jumps over the lazy dog near the river bank. ".repeat(20)
      assert.strictEqual(FliteFfi.pending(), 0)
      const inFlight = yield* Stream.runCollect(tts.synthesize(long)).pipe(Effect.forkChild)
      while (FliteFfi.pending() < 1) yield* Effect.sleep("1 millis")
      const queued = yield* Stream.runCollect(tts.synthesize("Not heard either.")).pipe(Effect.forkChild)
      while (FliteFfi.pending() < 2) yield* Effect.sleep("1 millis")
      yield* Fiber.interrupt(queued)
      assert.strictEqual(FliteFfi.pending(), 1, "the queued synthesis is dropped")
      yield* Fiber.interrupt(inFlight)
      assert.strictEqual(FliteFfi.pending(), 1, "the interruption did not wait for the synthesis in flight")
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(inFlight)))
      // the next sentence waits for flite to be free, then is spoken
      const next = AudioFrame.concat(yield* Stream.runCollect(tts.synthesize("Hello there.")))
      assert.isAbove(AudioFrame.rms(next), 0.01)
      assert.strictEqual(FliteFfi.pending(), 0)
    }).pipe(Effect.provide(FliteTts.layer({ engine: "library" }))), 60_000)

  it.live("a long-lived library layer keeps speaking across garbage collections (its voice's library stays loaded)", () =>
    Effect.gen(function*() {
      const fixture = Path.join(import.meta.dirname, "fixtures", "flite-gc.ts")
      const done = yield* Effect.promise(() =>
        new Promise<{ code: number | null; signal: string | null; stdout: string }>((resolve) => {
          const child = ChildProcess.spawn(process.execPath, ["--expose-gc", fixture], { stdio: ["ignore", "pipe", "inherit"] })
          let stdout = ""
          child.stdout.on("data", (chunk) => stdout += String(chunk))
          child.on("close", (code, signal) => resolve({ code, signal, stdout }))
        })
      )
      assert.deepStrictEqual([done.code, done.signal, done.stdout.trim()], [0, null, "spoken"])
    }), 60_000)

  it.live("interrupting the program's stream kills the flite process", () =>
    Effect.gen(function*() {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "flite-kill-"))
      const pidFile = Path.join(dir, "pid")
      const script = Path.join(dir, "flite")
      // A wrapper that records the pid of the synthesis (then the same process becomes flite).
      Fs.writeFileSync(script, `#!/bin/sh\ncase "$1" in -voice) echo $$ > ${pidFile};; esac\nexec flite "$@"\n`)
      Fs.chmodSync(script, 0o755)
      const long = "The quick brown fox jumps over the lazy dog near the river bank. ".repeat(150)
      yield* Effect.gen(function*() {
        const tts = yield* Tts
        Fs.rmSync(pidFile, { force: true }) // the layer's probe wrote one
        const fiber = yield* Stream.runCollect(tts.synthesize(long)).pipe(Effect.forkChild)
        while (!Fs.existsSync(pidFile) || Fs.readFileSync(pidFile, "utf8").trim() === "") yield* Effect.sleep("10 millis")
        const pid = Number(Fs.readFileSync(pidFile, "utf8").trim())
        assert.isTrue(alive(pid), "flite runs while the reply is synthesized")
        yield* Fiber.interrupt(fiber)
        assert.isFalse(alive(pid), "flite is gone once the interruption returns")
      }).pipe(Effect.provide(FliteTts.layer({ engine: "program", binary: script })))
      Fs.rmSync(dir, { recursive: true, force: true })
    }), 30_000)
})
