/**
 * The console on a terminal (a pseudo-terminal's streams: keystrokes in, screen bytes out):
 * typing while an agent speaks stays out of its sentence and comes back after the prompt,
 * history with the up arrow, "… thinking" until the first words, Ctrl-D ends the session.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Layer } from "effect"
import { PassThrough, Writable } from "node:stream"
import * as ConsoleTransport from "../../../layers/console/ConsoleTransport.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Tool } from "../../../src/index.ts"
import * as FakeStdio from "./fakeStdio.ts"

const helper: Agent.Agent = Agent.make({ name: "helper", instructions: "You help." })
const front = Agent.make({ name: "front", instructions: "You answer.", tools: [Tool.handoff("to_helper", () => helper)] })

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "help" }, reply: { toolCalls: [{ name: "to_helper" }] } },
  // a slow sentence, so that keys arrive while it streams
  { when: { toolOutput: /./, agent: "helper" }, reply: { text: ["Helper ", "here, ", "at ", "your ", "service."], chunkDelay: "60 millis" } },
  { when: { user: "weather", agent: "helper" }, reply: { text: "Sunny.", delay: "150 millis" } }
]

const UP = "\u001b[A"

/** What a terminal shows for these bytes: lines, with \r, erase-line and cursor moves applied. */
const render = (bytes: string): string => {
  const lines: Array<Array<string>> = [[]]
  let row = 0
  let col = 0
  const tokens = bytes.match(/\u001b\[[0-9;]*[A-Za-z]|[\s\S]/gu) ?? []
  for (const token of tokens) {
    if (token === "\n") {
      row++
      col = 0
      lines[row] ??= []
    } else if (token === "\r") col = 0
    else if (token.startsWith("\u001b[")) {
      const n = Number(token.slice(2, -1) || "0")
      const op = token.at(-1)
      if (op === "K") lines[row]!.length = Math.min(lines[row]!.length, col)
      else if (op === "G") col = Math.max(0, n - 1)
      else if (op === "C") col += n || 1
      else if (op === "D") col = Math.max(0, col - (n || 1))
    } else {
      lines[row]![col++] = token
    }
  }
  return lines.map((line) => Array.from(line, (c) => c ?? " ").join("")).join("\n")
}

describe("ConsoleTransport on a terminal (line editing)", () => {
  it.live("keys typed while an agent speaks appear after the next prompt, not in its sentence; up arrow recalls; Ctrl-D ends", () =>
    Effect.gen(function*() {
      // one screen: the console's output and the editor's echo, interleaved as a terminal gets them
      const screen: Array<string> = []
      const keys = new PassThrough()
      const output = new Writable({
        write(chunk, _e, done) {
          screen.push(String(chunk))
          done()
        }
      })
      const stdio = FakeStdio.make([], { stdinIsTerminal: true, stdoutIsTerminal: true, keepOpen: true, onWrite: (text) => screen.push(text) })
      const shown = () => render(screen.join(""))
      const until = (what: string, check: () => boolean) =>
        Effect.promise(async () => {
          for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10))
          if (!check()) throw new Error(`never: ${what}\n${shown()}`)
        })
      const type = (text: string) => Effect.sync(() => keys.write(text))

      const session = yield* Effect.gen(function*() {
        const console = yield* ConsoleTransport.ConsoleTransport
        const session = yield* AgentSession.start({ agent: front })
        const attached = yield* Effect.forkChild(console.attach(session))
        yield* until("the first prompt", () => shown().includes("you> "))
        yield* type("help\r")
        yield* until("the helper starts its sentence", () => shown().includes("[helper] Helper "))
        yield* type("wea")
        yield* until("the second prompt", () => shown().split("you> ").length === 3)
        yield* type("ther\r")
        yield* until("the answer", () => shown().includes("Sunny."))
        yield* until("the third prompt", () => shown().split("you> ").length === 4)
        yield* type(`${UP}\r`)
        yield* until("the second answer", () => shown().split("Sunny.").length === 3)
        yield* until("the fourth prompt", () => shown().split("you> ").length === 5)
        yield* type("\u0004")
        yield* Fiber.join(attached)
        return session
      }).pipe(
        Effect.scoped,
        Effect.provide(ConsoleTransport.layer({ terminal: { input: keys, output }, color: false }).pipe(
          Layer.provide(stdio.layer),
          Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} })))
        ))
      )
      const text = shown()
      // the sentence is whole: the keys typed meanwhile are not inside it
      assert.include(text, "[helper] Helper here, at your service.\n")
      // they came back after the prompt, and the line sent was the whole of it
      assert.include(text, "you> weather")
      const history = yield* session.history
      const userLines = history.items.flatMap((item) => (item._tag === "Message" && item.role === "user" ? [item.text] : []))
      assert.deepStrictEqual(userLines, ["help", "weather", "weather"])
      // "… thinking" showed while the answer was delayed, and was erased before it
      assert.include(screen.join(""), "… thinking")
      assert.notInclude(text, "… thinking")
      assert.match(text, /── session closed/)
    }).pipe(Effect.provide(ScriptedModel.layer(rules))), 20_000)
})
