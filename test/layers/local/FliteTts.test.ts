import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as FliteTts from "../../../layers/local/FliteTts.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { Tts } from "../../../services/Tts.ts"
import { VoiceError } from "../../../services/VoiceError.ts"
import { speak } from "./helpers.ts"

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

describe("FliteTts", () => {
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
    }).pipe(Effect.provide(FliteTts.layer())))

  it.effect("another voice gives other audio; an empty text gives none", () =>
    Effect.gen(function*() {
      const rms = yield* speak("Hello there.")
      const slt = yield* speak("Hello there.", "slt")
      assert.notDeepEqual(Array.from(rms.data.slice(0, 4000)), Array.from(slt.data.slice(0, 4000)))
      const tts = yield* Tts
      assert.strictEqual((yield* Stream.runCollect(tts.synthesize("   "))).length, 0)
    }).pipe(Effect.provide(FliteTts.layer())))

  it.effect("a voice flite does not have is refused (flite itself would fall back silently)", () =>
    Effect.gen(function*() {
      const tts = yield* Tts
      const error = failureOf(yield* Stream.runCollect(tts.synthesize("Hi.", { voice: "nosuch" })).pipe(Effect.exit))
      assert.strictEqual(error.reason, "InvalidRequest")
      assert.include(error.message, "rms")
      const build = failureOf(yield* Layer.build(FliteTts.layer({ voice: "nosuch" })).pipe(Effect.exit))
      assert.strictEqual(build.reason, "InvalidRequest")
    }).pipe(Effect.provide(FliteTts.layer())))

  it.effect("a missing flite fails the layer with the apt-get line", () =>
    Effect.gen(function*() {
      const error = failureOf(yield* Layer.build(FliteTts.layer({ binary: "/nonexistent/flite" })).pipe(Effect.exit))
      assert.strictEqual(error.reason, "Unavailable")
      assert.strictEqual(error.source, "tts")
      assert.include(error.message, "apt-get install -y flite")
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
        assert.strictEqual(dirs.length, 1)
        assert.deepStrictEqual(Fs.readdirSync(Path.join(tmp, dirs[0]!)), [])
      }).pipe(Effect.provide(FliteTts.layer()), Effect.ensuring(Effect.sync(() => {
        if (saved === undefined) delete process.env["TMPDIR"]
        else process.env["TMPDIR"] = saved
      })))
      assert.deepStrictEqual(Fs.readdirSync(tmp), [])
      Fs.rmSync(tmp, { recursive: true })
    }))

  it.live("interrupting the stream kills the flite process", () =>
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
      }).pipe(Effect.provide(FliteTts.layer({ binary: script })))
      Fs.rmSync(dir, { recursive: true, force: true })
    }))
})
