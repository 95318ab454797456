/**
 * `npm start` (or `npx node server/main.ts`): the service with the front-desk demo agents. With
 * no OPENAI_API_KEY and no OPENAI_BASE_URL it answers with the built-in demo model, in text;
 * with one of them, with the OpenAI-compatible chat model. Ctrl-C or SIGTERM drains (BATON_DRAIN_S)
 * and exits 0.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Exit, Runtime } from "effect"
import { chooseModel } from "../examples/front-desk/main.ts"
import { greeter, makeFrontDesk } from "../examples/front-desk/agents.ts"
import * as DemoModel from "../examples/front-desk/demoModel.ts"
import { OpenAiChat } from "../layers/openai/OpenAiChat.ts"
import * as Config from "./Config.ts"
import { run } from "./Run.ts"

const main = Effect.gen(function*() {
  const options = yield* Config.fromEnv
  const choice = yield* chooseModel
  const serve = run({
    ...options,
    agent: greeter,
    userdata: makeFrontDesk,
    modelDescription: choice._tag === "Demo"
      ? "Model: the built-in demo model (no API key; it understands the demo phrases: try \"what's the weather in Paris\", \"book an appointment\"). Voice needs a realtime model or the voice pipeline."
      : "Model: the OpenAI-compatible chat model from OPENAI_BASE_URL / OPENAI_MODEL."
  })
  return yield* choice._tag === "Demo" ? serve.pipe(Effect.provide(DemoModel.layer({}))) : serve.pipe(Effect.provide(OpenAiChat.layerConfigFetch))
})

if (import.meta.main) {
  NodeRuntime.runMain(main, {
    disableErrorReporting: false,
    teardown: (exit, onExit) =>
      Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
  })
}
