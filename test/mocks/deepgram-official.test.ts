/**
 * The Deepgram mock driven by Deepgram's own client (`@deepgram/sdk` live transcription), pointed
 * at 127.0.0.1: what the SDK sends is what the mock understands, and what the mock sends is what
 * the SDK's wire types describe (checked by the compiler on the frames the mock recorded).
 */
import { DeepgramClient, type listen } from "@deepgram/sdk"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { chunkAudio, concatBytes, PCM16_16K, synthesize } from "./shared/audio.ts"
import * as Mock from "./deepgram/server.ts"

/** Every server message of `/v1/listen`, as the SDK declares it. */
type SdkMessage = listen.ListenV1Results | listen.ListenV1Metadata | listen.ListenV1UtteranceEnd | listen.ListenV1SpeechStarted

const baseUrl = (mock: Mock.DeepgramMock) => mock.url.replace(/\/v1\/listen$/, "")

interface Session {
  readonly messages: Array<SdkMessage>
  readonly errors: Array<Error>
  readonly closed: Promise<{ readonly code: number; readonly reason: string }>
  readonly socket: Awaited<ReturnType<DeepgramClient["listen"]["v1"]["connect"]>>
}

/** Opens a live transcription through the SDK, recording what it hands to its `message` listeners. */
const open = (mock: Mock.DeepgramMock, apiKey: string) =>
  Effect.tryPromise(async (): Promise<Session> => {
    const client = new DeepgramClient({ apiKey, baseUrl: baseUrl(mock) })
    const socket = await client.listen.v1.connect({
      model: "nova-3",
      encoding: "linear16",
      sample_rate: 16000,
      interim_results: "true",
      endpointing: 300,
      utterance_end_ms: 1000,
      vad_events: "true",
      reconnectAttempts: 0
    })
    const messages: Array<SdkMessage> = []
    const errors: Array<Error> = []
    socket.on("message", (message) => messages.push(message))
    socket.on("error", (error) => errors.push(error))
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.on("close", (event) => resolve({ code: event.code, reason: event.reason }))
    )
    socket.connect()
    await socket.waitForOpen()
    return { messages, errors, closed, socket }
  })

const until = (check: () => boolean) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const poll = () => (check() ? resolve() : setTimeout(poll, 5))
      poll()
    })
  )

const speech = concatBytes([synthesize(PCM16_16K, 600), synthesize(PCM16_16K, 1300, { kind: "silence" })])

describe("Deepgram mock", () => {
  it.live("official client: @deepgram/sdk streams audio and gets SpeechStarted, interims, an endpointing final, UtteranceEnd, a Finalize answer and Metadata on CloseStream", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ transcripts: ["book a table", "for two"], msPerWord: 200 })
      const { closed, errors, messages, socket } = yield* open(mock, "dg-test")
      for (const chunk of chunkAudio(PCM16_16K, speech, 20)) socket.sendMedia(chunk)
      yield* until(() => messages.some((m) => m.type === "UtteranceEnd"))
      socket.sendFinalize({ type: "Finalize" }) // every word is final: Deepgram need not answer
      for (const chunk of chunkAudio(PCM16_16K, synthesize(PCM16_16K, 300), 20)) socket.sendMedia(chunk)
      yield* until(() => messages.some((m) => m.type === "Results" && m.channel.alternatives[0]!.transcript === "for"))
      socket.sendFinalize({ type: "Finalize" })
      yield* until(() => messages.some((m) => m.type === "Results" && m.from_finalize === true))
      socket.sendCloseStream({ type: "CloseStream" })
      const close = yield* Effect.promise(() => closed)

      assert.deepStrictEqual([close.code, errors], [1000, []])
      const sent: ReadonlyArray<SdkMessage> = mock.connections[0]!.sent // the type-level check
      assert.deepStrictEqual(messages, [...sent])
      const summary = messages.map((m) =>
        m.type === "Results"
          ? `${m.is_final ? (m.from_finalize ? "finalize" : m.speech_final ? "speech_final" : "final") : "interim"}:${m.channel.alternatives[0]!.transcript}`
          : m.type
      )
      assert.deepStrictEqual(summary, [
        "SpeechStarted",
        "interim:book",
        "interim:book a",
        "interim:book a table",
        "speech_final:book a table",
        "UtteranceEnd",
        "SpeechStarted",
        "interim:for",
        "finalize:for two",
        "Metadata"
      ])
      const control = mock.connections[0]!.control.map((c) => JSON.parse(c).type)
      assert.deepStrictEqual(control, ["Finalize", "Finalize", "CloseStream"])
      const query = mock.connections[0]!.query
      assert.deepStrictEqual([query.get("endpointing"), query.get("utterance_end_ms"), query.get("vad_events")], ["300", "1000", "true"])
      assert.strictEqual(mock.connections[0]!.authorization, "Token dg-test")
    }))

  it.live("official client: @deepgram/sdk sees a refused key and an error close frame (DATA-0000) as Deepgram sends them", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make()
      const refused = yield* open(mock, "dg-wrong").pipe(Effect.flip)
      assert.strictEqual(mock.refused(), 1)
      // waitForOpen rejects with the socket's error event, whose message carries the HTTP status
      assert.include((refused.cause as { readonly message?: string }).message, "401")
      mock.faults.closeAfterBytes = { bytes: 6400, code: 1008, reason: "DATA-0000" }
      const { closed, socket } = yield* open(mock, "dg-test")
      for (const chunk of chunkAudio(PCM16_16K, speech, 20)) socket.sendMedia(chunk)
      const close = yield* Effect.promise(() => closed)
      assert.deepStrictEqual(close, { code: 1008, reason: "DATA-0000" })
    }))
})
