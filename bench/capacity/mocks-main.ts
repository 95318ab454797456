/**
 * The providers of the capacity bench in a process of their own (so their CPU is not counted as
 * the framework's): the Deepgram, Cartesia and OpenAI chat mocks of test/mocks on 127.0.0.1.
 * Prints one JSON line `{ deepgram, cartesia, openai }` (their URLs) on stdout once listening,
 * then serves until stdin closes or SIGTERM.
 *
 * The chat mock answers every request with the same sentence (`REPLY`); the Deepgram mock hears
 * the caller's words (`TRANSCRIPT`). Latency injection, as bench/voice-side-by-side.ts has it:
 * STT_LATENCY_MS, LLM_FIRST_TOKEN_MS, TTS_FIRST_BYTE_MS (default 0: the bench measures the
 * latency added over one call, so a constant provider latency cancels out).
 *
 * The mocks record what they hear for tests; here those records are emptied every few seconds so
 * a long run does not grow them.
 */
import { Effect } from "effect"
import * as CartesiaMock from "../../test/mocks/cartesia/server.ts"
import * as DeepgramMock from "../../test/mocks/deepgram/server.ts"
import * as ChatMock from "../../test/mocks/openai-chat/server.ts"

export const REPLY = "It will be sunny and warm all day."
export const TRANSCRIPT = "what is the weather in paris"
const ms = (name: string) => Number(process.env[name] ?? 0)

const program = Effect.gen(function*() {
  const deepgram = yield* DeepgramMock.make({ transcripts: [TRANSCRIPT], msPerWord: 150, latencyMs: ms("STT_LATENCY_MS") })
  const cartesia = yield* CartesiaMock.make({ firstChunkMs: ms("TTS_FIRST_BYTE_MS") })
  const chat = yield* ChatMock.make({ respond: () => ({ text: REPLY }), firstTokenMs: ms("LLM_FIRST_TOKEN_MS") })
  const forget = setInterval(() => {
    chat.requests.length = 0
    for (const c of deepgram.connections) (c.sent as Array<unknown>).length = 0, c.control.length = 0, c.received.length = 0
    deepgram.connections.length = 0
    cartesia.messages.length = 0
    cartesia.sent.length = 0
  }, 5000)
  yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(forget)))
  process.stdout.write(JSON.stringify({ deepgram: deepgram.url, cartesia: cartesia.url, openai: chat.baseUrl }) + "\n")
  yield* Effect.callback<void>((resume) => {
    process.stdin.on("end", () => resume(Effect.void))
    process.stdin.on("close", () => resume(Effect.void))
    process.on("SIGTERM", () => resume(Effect.void))
    process.stdin.resume()
  })
}).pipe(Effect.scoped)

if (import.meta.main) {
  await Effect.runPromise(program)
  process.exit(0)
}
