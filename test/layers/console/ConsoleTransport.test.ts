import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Layer, Schema } from "effect"
import * as ConsoleTransport from "../../../layers/console/ConsoleTransport.ts"
import { MAX_LINE_CHARS } from "../../../layers/console/Input.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Tool } from "../../../src/index.ts"
import * as FakeStdio from "./fakeStdio.ts"

const lookup = Tool.make("lookup", {
  description: "Weather for a city",
  parameters: Schema.Struct({ city: Schema.String }),
  handler: ({ city }) => Effect.succeed(`${city}: sunny`)
})
const broken = Tool.make("broken", {
  description: "Always fails",
  handler: () => Effect.die(new Error("disk on fire\n    at somewhere (file.ts:1:1)"))
})
const hangUp = Tool.make("hang_up", { description: "End the call", handler: (_, { session }) => session.close })

const front: Agent.Agent = Agent.make({
  name: "front",
  instructions: "You answer.",
  tools: [Tool.handoff("to_helper", () => helper, { reason: "needs help" }), broken, hangUp],
  onEnter: Agent.say("Hello from front.").pipe(Effect.asVoid)
})
const helper: Agent.Agent = Agent.make({
  name: "helper",
  instructions: "You help.",
  tools: [lookup, Tool.handoff("to_front", () => front)],
  onEnter: Agent.reply({ instructions: "introduce yourself" }).pipe(Effect.asVoid)
})

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "help", agent: "front" }, reply: { text: "Passing you on.", toolCalls: [{ name: "to_helper" }] } },
  { when: { instructions: "introduce yourself" }, reply: { text: ["Helper ", "here.\nSecond line."] } },
  { when: { user: "weather", agent: "helper" }, reply: { toolCalls: [{ name: "lookup", arguments: { city: "Oslo" } }] } },
  { when: { user: "bad args", agent: "helper" }, reply: { toolCalls: [{ name: "lookup", arguments: "{not json" }] } },
  { when: { toolOutput: "not valid JSON", agent: "helper" }, reply: { text: "Oops, bad arguments." } },
  { when: { toolOutput: "sunny", agent: "helper" }, reply: { text: "Oslo is sunny." } },
  { when: { user: "back", agent: "helper" }, reply: { toolCalls: [{ name: "to_front" }] } },
  { when: { user: "break", agent: "front" }, reply: { toolCalls: [{ name: "broken" }] } },
  { when: { toolOutput: /./, name: "broken" }, reply: { text: "That tool failed." } },
  { when: { user: "fail", agent: "front" }, reply: { text: "I was saying", error: "model exploded" } },
  { when: { user: "hang up", agent: "front" }, reply: { toolCalls: [{ name: "hang_up" }] } },
  { when: { agent: "front" }, reply: (r) => ({ text: `front heard: ${r.last.kind === "user" ? r.last.text : "?"}` }) }
]

interface Run {
  readonly output: string
  readonly userLines: ReadonlyArray<string>
}

/** Starts a session on `front`, attaches the console to the fake stdio and runs it to the end. */
const runConsole = (
  input: ReadonlyArray<string | Uint8Array>,
  options: { readonly stdio?: FakeStdio.FakeStdioOptions; readonly console?: ConsoleTransport.Options; readonly env?: Record<string, string> } = {}
) =>
  Effect.gen(function*() {
    const fake = FakeStdio.make(input, options.stdio)
    const session = yield* Effect.gen(function*() {
      const console = yield* ConsoleTransport.ConsoleTransport
      const session = yield* AgentSession.start({ agent: front })
      yield* console.attach(session)
      return session
    }).pipe(
      Effect.scoped,
      Effect.provide(ConsoleTransport.layer(options.console).pipe(
        Layer.provide(fake.layer),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: options.env ?? {} })))
      ))
    )
    const history = yield* session.history
    const userLines = history.items.flatMap((item) => (item._tag === "Message" && item.role === "user" ? [item.text] : []))
    return { output: fake.output(), userLines } satisfies Run
  }).pipe(Effect.provide(ScriptedModel.layer(rules)))

const count = (text: string, part: string) => text.split(part).length - 1

/** Each fragment appears, after the previous one. */
const assertInOrder = (output: string, fragments: ReadonlyArray<string>) => {
  let from = 0
  for (const fragment of fragments) {
    const at = output.indexOf(fragment, from)
    assert.isTrue(at >= 0, `expected ${JSON.stringify(fragment)} after position ${from} in:\n${output}`)
    from = at + fragment.length
  }
}

const CLOSED = "── session closed\n"

describe("ConsoleTransport", () => {
  it.effect("renders floor changes, replies, tool calls with arguments and outputs, in session order", () =>
    Effect.gen(function*() {
      const { output, userLines } = yield* runConsole(FakeStdio.lines("help me", "weather please", "back"))
      assertInOrder(output, [
        "── floor: front [start]\n",
        "[front] Hello from front.\n",
        "you> help me\n",
        "[front] Passing you on.\n",
        "  [front] ⚙ to_helper()\n",
        "  [front] ⚙ to_helper ⇒ handoff: ",
        "── floor: front → helper [handoff] reason: needs help\n",
        // A multi-line reply is indented under its label.
        "[helper] Helper here.\n         Second line.\n",
        "you> weather please\n",
        "  [helper] ⚙ lookup({\"city\":\"Oslo\"})\n",
        "  [helper] ⚙ lookup → Oslo: sunny\n",
        "[helper] Oslo is sunny.\n",
        "you> back\n",
        "  [helper] ⚙ to_front()\n",
        "── floor: helper → front [handoff, resumed]\n",
        "you> \n",
        CLOSED
      ])
      assert.isTrue(output.endsWith(CLOSED), "nothing is written after the session closed")
      assert.strictEqual(count(output, "you> "), 4, "one prompt at start and one per line read")
      assert.notInclude(output, "\u001b", "no colours when stdout is not a terminal")
      assert.deepStrictEqual(userLines, ["help me", "weather please", "back"])
    }))

  it.effect("renders errors: a failing tool, a failing model, arguments that are not JSON", () =>
    Effect.gen(function*() {
      const { output } = yield* runConsole(FakeStdio.lines("break", "fail", "help", "bad args", "back", "still here?"))
      assertInOrder(output, [
        "you> break\n",
        "  [front] ⚙ broken()\n",
        "! error (tool, front): broken died: Error: disk on fire\n",
        "  [front] ⚙ broken ✗ error: ",
        "[front] That tool failed.\n",
        "you> fail\n",
        "[front] I was saying …[interrupted]\n",
        "! error (model, front): ",
        "you> bad args\n",
        "  [helper] ⚙ lookup({not json)\n",
        "  [helper] ⚙ lookup ✗ error: Arguments for lookup are not valid JSON",
        "[helper] Oops, bad arguments.\n",
        "you> still here?\n",
        "[front] front heard: still here?\n",
        CLOSED
      ])
      assert.include(output, "model exploded")
      // Only the first line of an error: no stack trace on the console.
      const toolError = output.split("\n").find((line) => line.startsWith("! error (tool, front)"))!
      assert.include(toolError, "disk on fire")
      assert.notInclude(output, "at somewhere")
    }))

  it.effect("bad input: empty lines ignored, control characters stripped, long lines cut, unicode kept", () =>
    Effect.gen(function*() {
      const e = new TextEncoder().encode("é")
      const { output, userLines } = yield* runConsole([
        "\n",
        "   \t \n",
        "hel",
        "lo\r\n",
        "\u001b[31mred\u001b[0m text\u0007\n",
        "tab\there\n",
        "naïve café 日本語 👩‍💻 مرحبا\n",
        "bidi \u202eevil\u202c ok\n",
        "\u0000\u0001\u0002\n",
        "x".repeat(MAX_LINE_CHARS + 500) + "\n",
        "y".repeat(100_000),
        "\n",
        new Uint8Array([0xff, 0x41, 0x0a]),
        e.slice(0, 1),
        e.slice(1),
        " split\n",
        "last line without newline"
      ])
      assert.deepStrictEqual(userLines, [
        "hello",
        "red text",
        "tab here",
        "naïve café 日本語 👩‍💻 مرحبا",
        "bidi evil ok",
        "x".repeat(MAX_LINE_CHARS),
        "y".repeat(MAX_LINE_CHARS),
        "\ufffdA",
        "é split",
        "last line without newline"
      ])
      assert.strictEqual(count(output, "you> "), 14, "one prompt at start and one per line read, empty ones included")
      assert.strictEqual(count(output, `(input cut to ${MAX_LINE_CHARS} characters)`), 2)
      assert.include(output, "you> red text\n  (removed 3 control characters)\n")
      assert.include(output, "you> hello\n[front]", "a CRLF line ending is not reported as a control character")
      assert.include(output, "[front] front heard: last line without newline\n")
      assert.notInclude(output, "\u001b")
      assert.notInclude(output, "\u0000")
      assert.isTrue(output.endsWith(CLOSED))
    }))

  it.effect("colours only when stdout is a terminal and NO_COLOR is unset or empty", () =>
    Effect.gen(function*() {
      const tty = yield* runConsole(FakeStdio.lines("help"), { stdio: { stdoutIsTerminal: true } })
      assert.include(tty.output, "\u001b[")
      const emptyNoColor = yield* runConsole(FakeStdio.lines("help"), { stdio: { stdoutIsTerminal: true }, env: { NO_COLOR: "" } })
      assert.include(emptyNoColor.output, "\u001b[")
      const noColor = yield* runConsole(FakeStdio.lines("help"), { stdio: { stdoutIsTerminal: true }, env: { NO_COLOR: "1" } })
      // no colour codes (erasing the "… thinking" line is not colour)
      assert.notMatch(noColor.output, /\u001b\[[0-9;]*m/)
      const forced = yield* runConsole(FakeStdio.lines("help"), { console: { color: false }, stdio: { stdoutIsTerminal: true } })
      assert.notMatch(forced.output, /\u001b\[[0-9;]*m/)
    }))

  it.effect("a terminal echoes what the person types: no echo, the reply starts after the prompt line", () =>
    Effect.gen(function*() {
      const { output } = yield* runConsole(FakeStdio.lines("hi"), { stdio: { stdinIsTerminal: true } })
      assert.notInclude(output, "you> hi")
      assert.include(output, "you> [front] front heard: hi\n")
    }))

  it.effect("a session that closes itself ends the console, even with stdin still open", () =>
    Effect.gen(function*() {
      const { output } = yield* runConsole(FakeStdio.lines("hang up"), { stdio: { keepOpen: true } })
      assertInOrder(output, ["you> hang up\n", "  [front] ⚙ hang_up()\n", CLOSED])
      assert.isTrue(output.endsWith(CLOSED))
    }))

  it.effect("interrupted while waiting for input (Ctrl-C): the session is closed, the prompt line ended", () =>
    Effect.gen(function*() {
      const fake = FakeStdio.make([], { keepOpen: true })
      const fiber = yield* Effect.gen(function*() {
        const console = yield* ConsoleTransport.ConsoleTransport
        const session = yield* AgentSession.start({ agent: front })
        yield* console.attach(session)
      }).pipe(
        Effect.scoped,
        Effect.provide(ConsoleTransport.layer().pipe(Layer.provide(fake.layer))),
        Effect.provide(ScriptedModel.layer(rules)),
        Effect.forkChild
      )
      while (!fake.output().includes("you> ")) yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
      assert.isTrue(fake.output().endsWith(`you> \n${CLOSED}`), fake.output())
    }))
})
