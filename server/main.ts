/**
 * `npm start` (or `npx node server/main.ts`): the service with the front-desk demo agents. With
 * no OPENAI_API_KEY and no OPENAI_BASE_URL it answers with the built-in demo model, in text;
 * with one of them, with the OpenAI-compatible chat model. Ctrl-C or SIGTERM drains (BATON_DRAIN_S)
 * and exits 0.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Cause, type Config, Effect, Exit, Layer, Runtime } from "effect"
import type { LanguageModel } from "effect/ai"
import * as Observe from "../src/observe/Observe.ts"
import { chooseModel } from "../examples/front-desk/main.ts"
import { greeter, makeFrontDesk } from "../examples/front-desk/agents.ts"
import * as DemoModel from "../examples/front-desk/demoModel.ts"
import { OpenAiChat } from "../layers/openai/OpenAiChat.ts"
import * as ServerConfig from "./Config.ts"
import { run } from "./Run.ts"

const main = Effect.gen(function*() {
  const options = yield* ServerConfig.fromEnv
  const choice = yield* chooseModel
  const serve = run({
    ...options,
    agent: greeter,
    userdata: makeFrontDesk,
    modelDescription: choice._tag === "Demo"
      ? "Model: the built-in demo model (no API key; it understands the demo phrases: try \"what's the weather in Paris\", \"book an appointment\"). Voice needs a realtime model or the voice pipeline."
      : "Model: the OpenAI-compatible chat model from OPENAI_BASE_URL / OPENAI_MODEL."
  })
  const model: Layer.Layer<LanguageModel.LanguageModel, Config.ConfigError> = choice._tag === "Demo"
    ? DemoModel.layer({})
    : OpenAiChat.layerConfigFetch
  // metrics of every session for /metrics; event logs with BATON_RECORD_DIR; OTLP with OTEL_EXPORTER_OTLP_ENDPOINT
  return yield* serve.pipe(Effect.provide(Layer.merge(model, Observe.layerConfig.pipe(Layer.provide(NodeFileSystem.layer)))))
})

/** What cannot start the service ends the process with one line saying why, and exit code 1. */
let failedToStart = false
const program = main.pipe(
  Effect.catchTags({
    UnsafeHost: (e) => Effect.sync(() => void (failedToStart = true, process.stderr.write(`baton: ${e.message}\n`))),
    ServeError: (e) =>
      Effect.sync(() =>
        void (failedToStart = true, process.stderr.write(`baton: cannot listen: ${String((e.cause as Error)?.message ?? e.cause)} (is PORT taken?)\n`))
      )
  })
)

if (import.meta.main) {
  NodeRuntime.runMain(program, {
    disableErrorReporting: false,
    teardown: (exit, onExit) =>
      failedToStart
        ? onExit(1)
        : Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
        ? onExit(0)
        : Runtime.defaultTeardown(exit, onExit)
  })
}
