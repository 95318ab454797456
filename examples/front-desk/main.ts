/**
 * The front desk in the terminal: `npx node examples/front-desk/main.ts` (`baton console` and
 * `npm run console` run the same program).
 *
 * With no `OPENAI_API_KEY` and no `OPENAI_BASE_URL` it runs on the built-in demo model
 * (`demoModel.ts`); with either set it uses the OpenAI-compatible chat layer
 * (`OPENAI_API_KEY=... npm run console`, or
 * `OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 npm run console` for Ollama).
 *
 * `--timeline out.svg` writes the session's handoff timeline picture when it ends.
 *
 * Type a line and press Enter; Ctrl-D (end of input) or Ctrl-C closes the session and exits 0.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import { Cause, Config, Effect, Exit, Layer, Option, Runtime, Stdio } from "effect"
import { ConsoleApp, ConsoleTransport } from "@baton-voice/baton/console"
import type { Style } from "@baton-voice/baton/console"
import { OpenAiChat } from "@baton-voice/baton/openai"
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

export const TITLE = "baton · front desk"

const demoHeader = (style: Style) => [
  `Model: ${style.cyan("the built-in demo model")} (rules-based, no API key; it understands the demo phrases only).`,
  `  Try: ${DemoModel.demoPhrases.map((phrase) => `"${phrase}"`).join(" · ")}`,
  `  Use a real model:  set ${style.bold("OPENAI_API_KEY=...")} and run again`,
  `  Or Ollama:         set ${style.bold("OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1")} and run again`
].join("\n")

const frontDesk = <R>(describeModel: (style: Style) => Effect.Effect<string, never, R>, timeline: string | undefined) =>
  ConsoleApp.run({ agent: greeter, userdata: makeFrontDesk, title: TITLE, describeModel, timeline })

const runDemo = (timeline: string | undefined) =>
  Effect.gen(function*() {
    const stdio = yield* Stdio.Stdio
    // Word-by-word streaming is for people watching a terminal; a pipe gets whole replies.
    const typing = (yield* stdio.stdoutIsTerminal) ? { chunkDelay: "25 millis" as const } : {}
    return yield* frontDesk((style) => Effect.succeed(demoHeader(style)), timeline).pipe(Effect.provide(DemoModel.layer(typing)))
  })

const runOpenAi = (timeline: string | undefined) =>
  frontDesk((style) =>
    OpenAiChat.use((info) =>
      Effect.succeed(
        `Model: ${style.cyan(info.model)} at ${displayUrl(info.baseUrl)} (${info.hasApiKey ? "OPENAI_API_KEY set" : "no API key"}).`
      )
    ), timeline).pipe(Effect.provide(OpenAiChat.layerConfigFetch))

/** The front desk in the console, on the demo model or the one the environment names. */
export const frontDeskConsole = (options: { readonly timeline?: string | undefined } = {}) =>
  Effect.gen(function*() {
    const choice = yield* chooseModel
    return yield* choice._tag === "Demo" ? runDemo(options.timeline) : runOpenAi(options.timeline)
  }).pipe(Effect.provide(Layer.merge(ConsoleTransport.layerNode(), NodeStdio.layer)))

/** `--timeline out.svg`: the session's handoff timeline, written when it ends. */
const timelinePath = (): string | undefined => {
  const at = process.argv.indexOf("--timeline")
  return at < 0 ? undefined : process.argv[at + 1]
}

export const main = frontDeskConsole({ timeline: timelinePath() })

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
