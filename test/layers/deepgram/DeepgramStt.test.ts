import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Redacted, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as DeepgramStt from "../../../layers/deepgram/DeepgramStt.ts"
import * as FliteTts from "../../../layers/local/FliteTts.ts"
import * as AudioFrame from "../../../services/AudioFrame.ts"
import type { SttEvent } from "../../../services/Stt.ts"
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

/** `ms` of a 220 Hz tone (speech to the mock's energy VAD), 20 ms frames. */
const tone = (ms: number) =>
  AudioFrame.split(AudioFrame.make(Int16Array.from({ length: ms * 16 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 220 * i) / 16000))), 16000), 20)
const quiet = (ms: number) => AudioFrame.split(AudioFrame.silence(ms, 16000), 20)

/** Waits (node timers, so also under TestClock) until `check` holds. */
const until = (check: () => boolean) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const poll = () => (check() ? resolve() : setTimeout(poll, 5))
      poll()
    })
  )

/** Polls (real time) until `check` holds. */
const eventually = (check: () => boolean) =>
  Effect.gen(function*() {
    while (!check()) yield* Effect.sleep("10 millis")
  })

describe("DeepgramStt", () => {
  it.live("streams audio as binary PCM16, shows growing interims, and a Final per utterance on Finalize", () =>
    Effect.gen(function*() {
      const scripts = ["I would like a table for two.", "Transfer me to billing."]
      const mock = yield* Mock.make({ transcripts: scripts, msPerWord: 50 })
      const audio = yield* speak("I would like a table for two.").pipe(Effect.provide(FliteTts.layer()))
      yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock).stream()
        const events: Array<SttEvent> = []
        yield* Effect.forkScoped(Stream.runForEach(stream.events, (e) => Effect.sync(() => events.push(e))))
        // As a VAD would, each utterance ends once its words are heard.
        for (const [utterance, frameMs] of [[0, 20], [1, 100]] as const) {
          for (const f of AudioFrame.split(audio, frameMs)) yield* stream.push(f)
          yield* eventually(() => events.some((e) => e._tag === "Interim" && e.text === scripts[utterance]))
          yield* stream.endUtterance
        }
        yield* eventually(() => events.filter((e) => e._tag === "Final").length === 2)
        const finals = events.filter((e) => e._tag === "Final").map((e) => e.text)
        assert.deepStrictEqual(finals, scripts)
        const firstInterims = events.slice(0, events.findIndex((e) => e._tag === "Final")).map((e) => e.text)
        assert.isAbove(firstInterims.length, 2)
        assert.isTrue(firstInterims.every((t, i) => i === 0 || t.startsWith(firstInterims[i - 1]!)), String(firstInterims))
        const [connection] = mock.connections
        assert.strictEqual(connection!.authorization, "Token dg-test")
        for (
          const [k, v] of [
            ["model", "nova-3"], ["encoding", "linear16"], ["sample_rate", "16000"], ["interim_results", "true"], ["language", "en-US"],
            ["endpointing", "25"], ["utterance_end_ms", "1000"]
          ]
        ) {
          assert.strictEqual(connection!.query.get(k!), v, k)
        }
        assert.strictEqual(connection!.audioBytes, 2 * 2 * audio.data.length)
      }))
      yield* eventually(() => mock.connections[0]!.control.some((c) => c.includes("CloseStream")))
      assert.deepStrictEqual(mock.connections[0]!.control.map((c) => JSON.parse(c).type), ["Finalize", "Finalize", "CloseStream"])
    }), 30_000)

  it.effect("a refused key fails the stream at open with 401, without the key in the message; a bad option before opening", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      const error = failureOf(
        yield* DeepgramStt.make({ apiKey: Redacted.make("dg-secret-wrong"), baseUrl: mock.url }).stream().pipe(Effect.scoped, Effect.exit)
      )
      assert.deepStrictEqual([error.reason, error.status], ["InvalidRequest", 401])
      assert.notInclude(error.message, "dg-secret-wrong")
      const badOption = failureOf(yield* sttOf(mock, { endpointingMs: -5 }).stream().pipe(Effect.scoped, Effect.exit))
      assert.deepStrictEqual([badOption.reason, mock.connections.length], ["InvalidRequest", 0])
      assert.include(badOption.message, "endpointingMs must be a whole number of ms")
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

  it.effect("a turn whose words endpointing already finalized ends within the endpointing delay, not after the 3 s timeout", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ transcripts: ["book a table"], msPerWord: 100 })
      const { final, fromFinalize } = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock, { endpointingMs: 300 }).stream()
        for (const f of [...tone(400), ...quiet(400)]) yield* stream.push(f)
        const connection = mock.connections[0]!
        yield* until(() => connection.sent.some((m) => m.type === "Results" && m.speech_final && m.channel.alternatives[0]!.transcript !== ""))
        const ending = yield* Effect.forkChild(stream.endUtterance)
        yield* TestClock.adjust("300 millis")
        // The layer's clock stands at 300 ms: a layer waiting for a from_finalize answer (none comes:
        // nothing is left to finalize) would still be waiting. The live bound only stops a hang.
        const ended = yield* Fiber.await(ending).pipe(Effect.timeoutOption("2 seconds"), TestClock.withLive)
        assert.isTrue(ended._tag === "Some" && Exit.isSuccess(ended.value), "endUtterance still waiting at 300 ms")
        const final = yield* stream.events.pipe(Stream.filter((e) => e._tag === "Final"), Stream.runHead)
        return { final, fromFinalize: connection.sent.some((m) => m.type === "Results" && m.from_finalize === true) }
      }))
      assert.deepStrictEqual(final._tag === "Some" && final.value, { _tag: "Final", text: "book a table" })
      assert.isFalse(fromFinalize, "the mock answered Finalize: the case is not the one named")
    }))

  it.effect("when the Finalize answer does not come, the endpointing final that settles the interim words ends the turn", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ transcripts: ["book a table"], msPerWord: 100 })
      mock.faults.ignoreFinalize = true
      const final = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock, { endpointingMs: 300 }).stream()
        for (const f of tone(400)) yield* stream.push(f)
        yield* stream.events.pipe(Stream.filter((e) => e.text === "book a table"), Stream.runHead)
        // The VAD was quicker than Deepgram's 300 ms endpointing: the utterance ends before the silence is sent.
        const ending = yield* Effect.forkChild(stream.endUtterance, { startImmediately: true })
        for (const f of quiet(400)) yield* stream.push(f)
        const ended = yield* Fiber.await(ending).pipe(Effect.timeoutOption("2 seconds"), TestClock.withLive)
        assert.isTrue(ended._tag === "Some" && Exit.isSuccess(ended.value), "endUtterance still waiting with the clock at 0")
        return yield* stream.events.pipe(Stream.filter((e) => e._tag === "Final"), Stream.runHead)
      }))
      assert.deepStrictEqual(final._tag === "Some" && final.value, { _tag: "Final", text: "book a table" })
    }))

  it.effect("long speech that Deepgram finalizes in segments without a pause (is_final alone) is one Final with every segment, at once", () =>
    Effect.gen(function*() {
      const words = "one two three four five six seven eight"
      const mock = yield* Mock.make({ transcripts: [words], msPerWord: 100, segmentMs: 300 })
      const events: Array<SttEvent> = []
      yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock).stream()
        yield* Effect.forkScoped(Stream.runForEach(stream.events, (e) => Effect.sync(() => events.push(e))))
        for (const f of tone(900)) yield* stream.push(f)
        yield* until(() => events.some((e) => e.text === words))
        const ending = yield* Effect.forkChild(stream.endUtterance)
        const ended = yield* Fiber.await(ending).pipe(Effect.timeoutOption("2 seconds"), TestClock.withLive)
        assert.isTrue(ended._tag === "Some" && Exit.isSuccess(ended.value), "endUtterance waiting although every word was final")
        yield* until(() => events.some((e) => e._tag === "Final"))
      }))
      const segments = mock.connections[0]!.sent.filter((m) => m.type === "Results" && m.is_final && !m.speech_final)
      assert.strictEqual(segments.length, 3)
      const interims = events.filter((e) => e._tag === "Interim").map((e) => e.text)
      assert.isTrue(interims.every((t, i) => i === 0 || t.startsWith(interims[i - 1]!)), String(interims))
      assert.deepStrictEqual(events.filter((e) => e._tag === "Final"), [{ _tag: "Final", text: words }])
    }))

  it.effect("when nothing settles the interim words, the Final after finalizeTimeout keeps them as heard", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ transcripts: ["book a table please"], msPerWord: 100 })
      mock.faults.ignoreFinalize = true
      const final = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock, { endpointingMs: false }).stream()
        for (const f of tone(300)) yield* stream.push(f)
        yield* stream.events.pipe(Stream.filter((e) => e.text === "book a table"), Stream.runHead)
        const ending = yield* Effect.forkChild(stream.endUtterance)
        yield* TestClock.adjust("2999 millis")
        assert.isUndefined(ending.pollUnsafe(), "gave up before finalizeTimeout")
        yield* TestClock.adjust("1 millis")
        yield* Fiber.join(ending)
        return yield* stream.events.pipe(Stream.filter((e) => e._tag === "Final"), Stream.runHead)
      }))
      assert.deepStrictEqual(final._tag === "Some" && final.value, { _tag: "Final", text: "book a table" })
      assert.strictEqual(mock.connections[0]!.query.get("endpointing"), "false")
    }))

  it.live("a from_finalize answer later than finalizeTimeout does not leak into the next utterance", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ transcripts: ["first words here", "second words here"], msPerWord: 100 })
      mock.faults.finalizeDelayMs = 250
      const events: Array<SttEvent> = []
      yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock, { finalizeTimeout: "50 millis" }).stream()
        yield* Effect.forkScoped(Stream.runForEach(stream.events, (e) => Effect.sync(() => events.push(e))))
        for (const f of tone(400)) yield* stream.push(f)
        yield* eventually(() => events.some((e) => e.text === "first words here"))
        yield* stream.endUtterance // gives up after 50 ms with the interim words: the answer comes at 250 ms
        mock.faults.finalizeDelayMs = undefined
        yield* eventually(() => mock.connections[0]!.sent.some((m) => m.type === "Results" && m.from_finalize === true))
        yield* Effect.sleep("50 millis") // the late answer for the first utterance is read now
        for (const f of tone(400)) yield* stream.push(f)
        yield* eventually(() => events.some((e) => e.text === "second words here"))
        yield* stream.endUtterance
        yield* eventually(() => events.filter((e) => e._tag === "Final").length === 2)
      }))
      assert.deepStrictEqual(events.filter((e) => e._tag === "Final").map((e) => e.text), ["first words here", "second words here"])
    }))

  it.live("audio goes out in messages of chunkMs, a pause's first 60 ms frame by frame, and what is gathered before Finalize and CloseStream", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ transcripts: ["book a table"], msPerWord: 100 })
      yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock).stream()
        // 160 ms of words, then a pause: a 100 ms message, then the rest of the words with the
        // pause's first frame, whose frames go out as they come; the pause's next 20 ms are
        // gathered, and go out before CloseStream
        for (const f of [...tone(160), ...quiet(60)]) yield* stream.push(f)
        yield* stream.endUtterance
        for (const f of quiet(20)) yield* stream.push(f)
      }))
      yield* eventually(() => (mock.connections[0]?.received ?? []).some((m) => "control" in m && m.control.includes("CloseStream")))
      const received = mock.connections[0]!.received.filter((m) => !("control" in m) || !m.control.includes("KeepAlive"))
      assert.deepStrictEqual(received.map((m) => ("control" in m ? JSON.parse(m.control).type : m.audioBytes)), [
        3200,
        2560,
        640,
        640,
        "Finalize",
        640,
        "CloseStream"
      ])
    }))

  it.live("Deepgram's own end of speech (speech_final) is an interim with endOfSpeech, before the utterance's Final", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ transcripts: ["book a table"], msPerWord: 100 })
      yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* sttOf(mock).stream()
        const events: Array<SttEvent> = []
        yield* Effect.forkScoped(Stream.runForEach(stream.events, (e) => Effect.sync(() => events.push(e))))
        for (const f of [...tone(300), ...quiet(60)]) yield* stream.push(f)
        yield* eventually(() => events.some((e) => e._tag === "Interim" && e.endOfSpeech === true))
        assert.deepStrictEqual(events.filter((e) => e._tag === "Interim" && e.endOfSpeech === true).map((e) => e.text), ["book a table"])
        assert.isFalse(events.some((e) => e._tag === "Final"), "the Final waits for endUtterance")
        yield* stream.endUtterance
        yield* eventually(() => events.some((e) => e._tag === "Final"))
        assert.deepStrictEqual(events.filter((e) => e._tag === "Final").map((e) => e.text), ["book a table"])
      }))
    }))
})

