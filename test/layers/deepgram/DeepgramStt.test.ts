import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Stream } from "effect"
import * as DeepgramStt from "../../../layers/deepgram/DeepgramStt.ts"
import * as FliteTts from "../../../layers/local/FliteTts.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import { VoiceError } from "../../../services/VoiceError.ts"
import * as Mock from "../../mocks/deepgram/server.ts"
import { speak } from "../local/helpers.ts"

const failureOf = <A>(exit: Exit.Exit<A, VoiceError>): VoiceError => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
  assert.instanceOf(error, VoiceError)
  return error as VoiceError
}

const sttOf = (mock: Mock.DeepgramMock, extra: Partial<DeepgramStt.DeepgramSttOptions> = {}) =>
  DeepgramStt.make({ apiKey: Redacted.make("dg-test"), baseUrl: mock.url, ...extra })

/** Polls (real time) until `check` holds. */
const eventually = (check: () => boolean) =>
  Effect.gen(function*() {
    while (!check()) yield* Effect.sleep("10 millis")
  })

describe("DeepgramStt", () => {
  it.effect("streams audio as binary PCM16, shows growing interims, and a Final per utterance on Finalize", () =>
    Effect.gen(function*() {
      const scripts = ["I would like a table for two.", "Transfer me to billing."]
      const mock = yield* Mock.make({ transcripts: scripts, msPerWord: 200 })
      const audio = yield* speak("I would like a table for two.").pipe(Effect.provide(FliteTts.layer()))
      yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock).stream()
        for (const f of AudioFrame.split(audio, 20)) yield* stream.push(f)
        yield* stream.endUtterance
        for (const f of AudioFrame.split(audio, 100)) yield* stream.push(f)
        yield* stream.endUtterance
        const events = yield* stream.events.pipe(
          Stream.takeUntil((e) => e._tag === "Final" && e.text === scripts[1]),
          Stream.runCollect
        )
        const finals = events.filter((e) => e._tag === "Final").map((e) => e.text)
        assert.deepStrictEqual(finals, scripts)
        const firstInterims = events.slice(0, events.findIndex((e) => e._tag === "Final")).map((e) => e.text)
        assert.isAbove(firstInterims.length, 2)
        assert.isTrue(firstInterims.every((t, i) => i === 0 || t.startsWith(firstInterims[i - 1]!)), String(firstInterims))
        const [connection] = mock.connections
        assert.strictEqual(connection!.authorization, "Token dg-test")
        for (const [k, v] of [["model", "nova-3"], ["encoding", "linear16"], ["sample_rate", "16000"], ["interim_results", "true"], ["language", "en-US"]]) {
          assert.strictEqual(connection!.query.get(k!), v, k)
        }
        assert.strictEqual(connection!.audioBytes, 2 * 2 * audio.data.length)
      }))
      yield* eventually(() => mock.connections[0]!.control.some((c) => c.includes("CloseStream")))
      assert.deepStrictEqual(mock.connections[0]!.control.map((c) => JSON.parse(c).type), ["Finalize", "Finalize", "CloseStream"])
    }), 30_000)

  it.effect("a refused key fails the stream at open with 401, without the key in the message", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      const error = failureOf(
        yield* DeepgramStt.make({ apiKey: Redacted.make("dg-secret-wrong"), baseUrl: mock.url }).stream().pipe(Effect.scoped, Effect.exit)
      )
      assert.deepStrictEqual([error.reason, error.status], ["InvalidRequest", 401])
      assert.notInclude(error.message, "dg-secret-wrong")
      mock.faults.rejectStatus = 503
      const busy = failureOf(yield* sttOf(mock).stream().pipe(Effect.scoped, Effect.exit))
      assert.isTrue(busy.retryable)
      const refused = failureOf(
        yield* DeepgramStt.make({ apiKey: Redacted.make("k"), baseUrl: "ws://127.0.0.1:1/v1/listen" }).stream().pipe(Effect.scoped, Effect.exit)
      )
      assert.strictEqual(refused.reason, "Transport")
    }))

  it.live("an error close frame fails the events and later pushes with its reason", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      for (const [code, reason, expected] of [[1011, "NET-0000", "Transport"], [1008, "DATA-0000", "InvalidAudio"]] as const) {
        mock.faults.closeAfterBytes = { bytes: 6400, code, reason }
        const exit = yield* Effect.scoped(Effect.gen(function*() {
          const stream = yield* sttOf(mock).stream()
          for (const f of AudioFrame.split(AudioFrame.silence(400, 16000), 20)) yield* stream.push(f)
          return yield* stream.events.pipe(Stream.runDrain, Effect.exit)
        }))
        const error = failureOf(exit)
        assert.deepStrictEqual([error.reason, error.status], [expected, code])
        assert.include(error.message, reason)
      }
    }))

  it.live("a connection that goes silent without closing (half-open) is found by its pings: the events fail with Transport", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      mock.faults.silentAfterBytes = 3200
      const exit = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock, { liveness: { interval: "50 millis", timeout: "100 millis" } }).stream()
        for (const f of AudioFrame.split(AudioFrame.silence(400, 16000), 20)) yield* stream.push(f)
        // Without the pings the events would never end: the test's own timeout would fail it.
        return yield* stream.events.pipe(Stream.runDrain, Effect.exit)
      }))
      const error = failureOf(exit)
      assert.strictEqual(error.reason, "Transport")
      assert.include(error.message, "1006")
      assert.isAtLeast(mock.connections[0]!.pings, 1)
    }))

  it.live("KeepAlive holds an idle stream open; without it the server's NET-0001 close is reported", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ inactivityMs: 150 })
      yield* Effect.scoped(Effect.gen(function*() {
        yield* sttOf(mock, { keepAliveMs: 40 }).stream()
        yield* eventually(() => mock.connections[0]!.control.filter((c) => c.includes("KeepAlive")).length >= 8)
        assert.isUndefined(mock.connections[0]!.closedByServer)
      }))
      const exit = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock, { keepAliveMs: 60_000 }).stream()
        return yield* stream.events.pipe(Stream.runDrain, Effect.exit)
      }))
      const error = failureOf(exit)
      assert.deepStrictEqual([error.status, error.reason], [1011, "Transport"])
      assert.include(error.message, "NET-0001")
    }))

  it.live("when Finalize is never answered, the Final comes after finalizeTimeout with what was finalized", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      mock.faults.ignoreFinalize = true
      const final = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock, { finalizeTimeout: "100 millis" }).stream()
        yield* stream.push(AudioFrame.silence(100, 16000))
        yield* stream.endUtterance
        return yield* stream.events.pipe(Stream.filter((e) => e._tag === "Final"), Stream.runHead)
      }))
      assert.deepStrictEqual(final._tag === "Some" && final.value, { _tag: "Final", text: "" })
    }))

  it.live("a from_finalize answer later than finalizeTimeout does not leak into the next utterance", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ transcripts: ["first words here", "second words here"], msPerWord: 10_000 })
      mock.faults.finalizeDelayMs = 250
      const finals = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock, { finalizeTimeout: "50 millis" }).stream()
        for (const f of AudioFrame.split(AudioFrame.silence(400, 16000), 20)) yield* stream.push(f)
        yield* stream.endUtterance // gives up after 50 ms: the answer comes at 250 ms
        mock.faults.finalizeDelayMs = undefined
        yield* Effect.sleep("400 millis") // the late answer for the first utterance arrives now
        for (const f of AudioFrame.split(AudioFrame.silence(400, 16000), 20)) yield* stream.push(f)
        yield* stream.endUtterance
        return yield* stream.events.pipe(Stream.filter((e) => e._tag === "Final"), Stream.take(2), Stream.runCollect)
      }))
      assert.deepStrictEqual(finals.map((e) => e.text), ["", "second words here"])
    }))
})
