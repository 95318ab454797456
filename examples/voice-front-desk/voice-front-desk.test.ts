/**
 * The voice front desk as a user runs it: `npx node examples/voice-front-desk/main.ts - call.wav`
 * on the offline pipeline. The caller's spoken question is heard, the floor passes to the
 * weather agent, its answer is spoken, and the call is written as a WAV. (About 25 s: the
 * agents' speech plays in real time.)
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import * as Wav from "../../services/Wav.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url))

describe("examples/voice-front-desk", () => {
  it("a spoken weather question in, the front desk's spoken answers out, as a WAV", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-voice-desk-"))
    try {
      const out = join(dir, "call.wav")
      const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [MAIN, "-", out], { env: { ...process.env, OPENAI_API_KEY: "" } })
        let stdout = ""
        let stderr = ""
        child.stdout.on("data", (d) => (stdout += String(d)))
        child.stderr.on("data", (d) => (stderr += String(d)))
        child.on("exit", (code) => resolve({ code, stdout, stderr }))
      })
      assert.strictEqual(code, 0, stdout + stderr)
      const lines = stdout.split("\n")
      assert.include(lines, "caller: what is the weather in paris")
      assert.include(lines, "── floor: greeter → weather")
      assert.isTrue(lines.some((l) => l.startsWith("weather: In Paris it's")), stdout)
      const call = Wav.decodeSync(readFileSync(out))
      assert.notTypeOf(call, "string")
      const seconds = AudioFrame.durationMs(call as AudioFrame.AudioFrame) / 1000
      assert.isAbove(seconds, 12, "greeting, question, handoff and answer on one timeline")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 90_000)
})
