/**
 * The Deepgram, Cartesia and OpenAI-chat mocks driven by agents-js 1.9's own plugins
 * (`@livekit/agents-plugin-deepgram`, `-cartesia`, `-openai`, with `-silero` for the VAD), pointed
 * at them by their base-URL options: bench/agents-js/voice.mjs runs one voice turn with a handoff
 * (a caller's flite WAV in, the greeter's tool hands off, the weather agent answers on entering),
 * and what came back is what the mocks said. The plugins cannot be installed in the project (their
 * peer is rtc-node 0.13): they come from bench/agents-js (`npm ci --prefix bench/agents-js`, done
 * by `npm run setup`); without them, or without flite, the test is skipped and says why.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as FliteTts from "../../layers/local/FliteTts.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Tts } from "../../services/Tts.ts"
import * as Wav from "../../services/Wav.ts"
import * as CartesiaMock from "./cartesia/server.ts"
import * as DeepgramMock from "./deepgram/server.ts"
import * as ChatMock from "./openai-chat/server.ts"

const BENCH = resolve(import.meta.dirname, "../../bench/agents-js")
const installed = existsSync(join(BENCH, "node_modules/@livekit/agents-plugin-deepgram"))
if (!installed) {
  console.warn(
    "\n*** SKIPPED test/mocks/agents-js-plugins-official.test.ts: bench/agents-js/node_modules is missing; run `npm ci --prefix bench/agents-js` (npm run setup does) ***\n"
  )
}

const QUESTION = "What is the weather in Paris?"
const ANSWER = "It will be sunny."

/** voice.mjs to its end: its JSON lines and its stderr. */
const runVoice = (args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    new Promise<{ readonly code: number | null; readonly lines: Array<Record<string, any>>; readonly stderr: string }>((done) => {
      const child = spawn(process.execPath, [join(BENCH, "voice.mjs"), ...args], { stdio: ["ignore", "pipe", "pipe"] })
      let out = ""
      let stderr = ""
      child.stdout.on("data", (c: Buffer) => void (out += c.toString("utf8")))
      child.stderr.on("data", (c: Buffer) => void (stderr += c.toString("utf8")))
      const limit = setTimeout(() => child.kill("SIGKILL"), 60_000)
      child.on("exit", (code) => {
        clearTimeout(limit)
        done({ code, lines: out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)), stderr })
      })
    })
  )

describe("Deepgram, Cartesia and OpenAI chat mocks", () => {
  it.live.skipIf(!installed)(
    "official clients: agents-js 1.9's deepgram, cartesia and openai plugins hear the caller, hand off and answer with the mocks' audio",
    () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "agents-js-plugins-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const wav = join(dir, "caller.wav")
        const speech = yield* Effect.gen(function*() {
          const tts = yield* Tts
          return AudioFrame.concat(yield* Stream.runCollect(tts.synthesize(QUESTION)))
        }).pipe(Effect.provide(FliteTts.layer({ voice: "rms" })))
        yield* Wav.writeFile(wav, speech)

        const dg = yield* DeepgramMock.make({ transcripts: [QUESTION], msPerWord: 150 })
        const ct = yield* CartesiaMock.make()
        const chat = yield* ChatMock.make({
          respond: (r) =>
            ChatMock.toolNames(r).includes("transfer_to_weather") && r.messages.at(-1)?.role === "user"
              ? { toolCall: { name: "transfer_to_weather" } }
              : { text: ANSWER }
        })
        const { code, lines, stderr } = yield* runVoice([
          "--wav", wav,
          "--deepgram", dg.url.replace(/\/v1\/listen$/, ""),
          "--cartesia", ct.url.replace(/^ws/, "http").replace(/\/tts\/websocket$/, ""),
          "--openai", chat.baseUrl,
          "--turns", "1",
          "--warmup", "0",
          "--handoff", "1",
          "--tail-ms", "8000"
        ])
        assert.strictEqual(code, 0, `voice.mjs failed: ${JSON.stringify(lines.at(-1))} ${stderr.slice(-2000)}`)
        const turn = lines.find((l) => l["type"] === "turn")!
        // Deepgram's words through the plugin, the handoff through the openai plugin, audio through cartesia's
        assert.deepStrictEqual([turn["transcript"], turn["agent"]], [QUESTION, "weather"])
        assert.isAbove(turn["firstSoundAt"], turn["speechEndAt"])
        assert.strictEqual(dg.connections[0]!.authorization, "Token dg-test")
        assert.isAbove(dg.connections[0]!.audioBytes, 0)
        assert.deepStrictEqual(ct.auth, ["x-api-key"])
        const heard = ct.messages.filter((m) => typeof m.message["transcript"] === "string").map((m) => m.message["transcript"] as string).join("")
        assert.include(heard, ANSWER)
        assert.isTrue(ct.sent.some((s) => s.message.type === "chunk"))
        const asked = chat.requests.map((r) => ChatMock.toolNames(r.body))
        assert.isTrue(asked.some((tools) => tools.includes("transfer_to_weather")), "the greeter was asked")
        assert.isTrue(asked.some((tools) => tools.length === 0), "the weather agent was asked")
        assert.strictEqual(dg.refused() + ct.refused + chat.refused, 0)
      }),
    90_000
  )
})
