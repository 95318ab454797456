/**
 * The README's example: two agents handing off.
 *   npx node examples/quickstart/main.ts                                  (a scripted demo model)
 *   OPENAI_API_KEY=sk-... npx node examples/quickstart/main.ts
 *   OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 npx node examples/quickstart/main.ts
 */
import { Config, Console, Effect, Layer, Option } from "effect"
import type { LanguageModel } from "effect/ai"
import { OpenAiChat } from "@baton-voice/baton/openai"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession } from "@baton-voice/baton"
import { greeter } from "./agents.ts"
import { rules } from "./script.ts"

export const main = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: greeter })
  const result = yield* session.run("What's the weather in Paris?")
  console.log(result.toString()) // every item and handoff of the whole cascade
  return result
}).pipe(Effect.scoped)

/** The OpenAI-compatible model when OPENAI_API_KEY or OPENAI_BASE_URL is set; else a scripted one, said so. */
export const model: Layer.Layer<LanguageModel.LanguageModel, Config.ConfigError> = Layer.unwrap(Effect.gen(function*() {
  const configured = Option.isSome(yield* Config.option(Config.NonEmptyString("OPENAI_API_KEY"))) ||
    Option.isSome(yield* Config.option(Config.NonEmptyString("OPENAI_BASE_URL")))
  if (configured) return OpenAiChat.layerConfigFetch as Layer.Layer<LanguageModel.LanguageModel, Config.ConfigError>
  yield* Console.log("No OPENAI_API_KEY or OPENAI_BASE_URL: running on a scripted demo model.\n")
  return ScriptedModel.layer(rules)
}))

if (import.meta.main) {
  Effect.runPromise(main.pipe(Effect.provide(model))).catch((e) => {
    console.error(String(e)) // one line: what failed (an invalid key, a refused request, ...)
    process.exitCode = 1
  })
}
