/**
 * Ready-made tasks: a desk collects an email address and a date of birth (each read back and
 * confirmed), then ends the call.
 *   npx node examples/collect/main.ts                   (a scripted demo model)
 *   OPENAI_API_KEY=sk-... npx node examples/collect/main.ts
 */
import { Config, Console, Effect, Layer, Option } from "effect"
import type { LanguageModel } from "effect/ai"
import { OpenAiChat } from "@baton-voice/baton/openai"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession, CallTools } from "@baton-voice/baton"
import { desk } from "./agents.ts"
import { rules } from "./script.ts"

/** A terminal stands in for the phone line: hanging up ends the session. */
const line = Layer.succeed(CallTools.CallControl, {
  transport: "this terminal",
  hangUp: (reason) => Console.log(`[the line hangs up: ${reason}]`),
  sendDtmf: (digits) => Console.log(`[keys pressed: ${digits}]`)
})

export const main = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: desk })
  for (const turn of ["Please sign me up", "It's jane dot doe at example dot com", "yes", "The third of May 1990", "yes", "that's all, thanks"]) {
    console.log(`> ${turn}`)
    const result = yield* session.run(turn)
    for (const event of result.events) if (event.type === "message" && event.role === "assistant") console.log(`${event.agent}: ${event.content}`)
  }
}).pipe(Effect.scoped, Effect.provide(line))

export const model: Layer.Layer<LanguageModel.LanguageModel, Config.ConfigError> = Layer.unwrap(Effect.gen(function*() {
  const configured = Option.isSome(yield* Config.option(Config.NonEmptyString("OPENAI_API_KEY"))) ||
    Option.isSome(yield* Config.option(Config.NonEmptyString("OPENAI_BASE_URL")))
  if (configured) return OpenAiChat.layerConfigFetch as Layer.Layer<LanguageModel.LanguageModel, Config.ConfigError>
  yield* Console.log("No OPENAI_API_KEY or OPENAI_BASE_URL: running on a scripted demo model.\n")
  return ScriptedModel.layer(rules)
}))

if (import.meta.main) {
  Effect.runPromise(main.pipe(Effect.provide(model))).catch((e) => {
    console.error(String(e))
    process.exitCode = 1
  })
}
