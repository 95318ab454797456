/**
 * The front desk in the terminal: `npm run console` (or `npx node examples/front-desk/main.ts`).
 *
 * With no `OPENAI_API_KEY` and no `OPENAI_BASE_URL` it runs on the built-in demo model
 * (`demoModel.ts`); with either set it uses the OpenAI-compatible chat layer
 * (`OPENAI_API_KEY=... npm start`, or
 * `OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 npm start` for Ollama).
 *
 * `--timeline out.svg` writes the session's handoff timeline picture when it ends.
 *
 * Type a line and press Enter; Ctrl-D (end of input) or Ctrl-C closes the session and exits 0.
 */
// Sub-path imports: the package index also loads the HTTP server, Redis, workers, ... (over a second).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import { Cause, Config, Effect, Exit, Layer, Option, Runtime, Stdio } from "effect"
import * as ConsoleTransport from "../../layers/console/ConsoleTransport.ts"
import type { Style } from "../../layers/console/Style.ts"
import { OpenAiChat } from "../../layers/openai/OpenAiChat.ts"
import { AgentSession } from "../../src/index.ts"
import * as Timeline from "../../src/Timeline.ts"
import { writeFile } from "node:fs/promises"
import { greeter, makeFrontDesk } from "./agents.ts"
import * as DemoModel from "./demoModel.ts"

export type ModelChoice = { readonly _tag: "Demo" } | { readonly _tag: "OpenAi" }

const isSet = (value: Option.Option<string>) => Option.isSome(value) && value.value.trim() !== ""

/** The real model when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set, else the demo model. */
export const chooseModel: Effect.Effect<ModelChoice> = Effect.gen(function*() {
  const key = yield* Config.option(Config.String("OPENAI_API_KEY"))
  const baseUrl = yield* Config.option(Config.String("OPENAI_BASE_URL"))
  return isSet(key) || isSet(baseUrl) ? { _tag: "OpenAi" as const } : { _tag: "Demo" as const }
}).pipe(Effect.orElseSucceed((): ModelChoice => ({ _tag: "Demo" })))

/** A URL without credentials, for display. */
const displayUrl = (url: string) => {
  if (!URL.canParse(url)) return url
  const parsed = new URL(url)
  parsed.username = ""
  parsed.password = ""
  return parsed.toString().replace(/\/$/, "")
}

export const header = (style: Style, model: string): ReadonlyArray<string> => [
  style.bold("baton · front desk"),
  model,
  style.dim("Type a line and press Enter. Ctrl-D or Ctrl-C to leave."),
  ""
]

const demoHeader = (style: Style) => [
  `Model: ${style.cyan("the built-in demo model")} (rules-based, no API key; it understands the demo phrases only).`,
  `  Try: ${DemoModel.demoPhrases.map((phrase) => `"${phrase}"`).join(" · ")}`,
  `  Use a real model:  ${style.bold("OPENAI_API_KEY=... npm start")}`,
  `  Or Ollama:         ${style.bold("OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 npm start")}`
].join("\n")

/** The conversation itself, once the console and the model are provided. */
const frontDesk = <R>(describeModel: (style: Style) => Effect.Effect<string, never, R>) =>
  Effect.gen(function*() {
    const console = yield* ConsoleTransport.ConsoleTransport
    yield* console.print(...header(console.style, yield* describeModel(console.style)))
    const session = yield* AgentSession.start({ agent: greeter, userdata: makeFrontDesk() })
    yield* console.attach(session).pipe(Effect.ensuring(writeTimeline(session)))
  }).pipe(Effect.scoped)

/** `--timeline out.svg`: the session's handoff timeline, written when it ends. */
const timelinePath = (): string | undefined => {
  const at = process.argv.indexOf("--timeline")
  return at < 0 ? undefined : process.argv[at + 1]
}

const writeTimeline = (session: AgentSession.AgentSession) =>
  Effect.gen(function*() {
    const path = timelinePath()
    if (path === undefined) return
    const svg = Timeline.fromEvents(yield* session.eventLog, { title: "baton · front desk" })
    yield* Effect.tryPromise(() => writeFile(path, svg)).pipe(
      Effect.matchEffect({
        onFailure: (e) => Effect.sync(() => process.stderr.write(`could not write the timeline to ${path}: ${String(e.cause)}\n`)),
        onSuccess: () => Effect.sync(() => process.stderr.write(`timeline written to ${path}\n`))
      })
    )
  })

const runDemo = Effect.gen(function*() {
  const stdio = yield* Stdio.Stdio
  // Word-by-word streaming is for people watching a terminal; a pipe gets whole replies.
  const typing = (yield* stdio.stdoutIsTerminal) ? { chunkDelay: "25 millis" as const } : {}
  return yield* frontDesk((style) => Effect.succeed(demoHeader(style))).pipe(Effect.provide(DemoModel.layer(typing)))
})

const runOpenAi = frontDesk((style) =>
  OpenAiChat.use((info) =>
    Effect.succeed(
      `Model: ${style.cyan(info.model)} at ${displayUrl(info.baseUrl)} (${info.hasApiKey ? "OPENAI_API_KEY set" : "no API key"}).`
    )
  )
).pipe(Effect.provide(OpenAiChat.layerConfigFetch))

export const main = Effect.gen(function*() {
  const choice = yield* chooseModel
  return yield* choice._tag === "Demo" ? runDemo : runOpenAi
}).pipe(Effect.provide(Layer.provideMerge(ConsoleTransport.layer(), NodeStdio.layer)))

if (import.meta.main) {
  // A model that refuses the configuration (key, URL, request) ends the console with one line
  // saying what to do, and exit code 1; no stack trace.
  let fatal = false
  const program = main.pipe(
    Effect.catchTag("FatalModelError", (error) =>
      Effect.sync(() => {
        fatal = true
        process.stderr.write(`${error.message}\n`)
      }))
  )
  NodeRuntime.runMain(program, {
    // Ctrl-C is the normal way to leave: the session is closed cleanly and the exit code is 0.
    teardown: (exit, onExit) =>
      fatal
        ? onExit(1)
        : Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
        ? onExit(0)
        : Runtime.defaultTeardown(exit, onExit)
  })
}
