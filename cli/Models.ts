/**
 * Which model answers in `baton console` and `baton serve`: the agents module's own `model`
 * layer; else the OpenAI-compatible chat model when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is
 * set; else, for the built-in front desk only, its rules-based demo model.
 */
import { Config, Data, Effect, Layer, Option } from "effect"
import { OpenAiChat } from "../layers/openai/OpenAiChat.ts"
import type { AgentsModule } from "./Agents.ts"

export class NoModel extends Data.TaggedError("NoModel")<{ readonly message: string }> {}

const isSet = (value: Option.Option<string>) => Option.isSome(value) && value.value.trim() !== ""

/** `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set (to something other than blanks). */
export const openAiConfigured: Effect.Effect<boolean> = Effect.gen(function*() {
  const key = yield* Config.option(Config.String("OPENAI_API_KEY"))
  const baseUrl = yield* Config.option(Config.String("OPENAI_BASE_URL"))
  return isSet(key) || isSet(baseUrl)
}).pipe(Effect.orElseSucceed(() => false))

export interface ModelChoice {
  readonly layer: Layer.Layer<never, unknown, never>
  readonly description: string
}

export const openAi: ModelChoice = {
  layer: OpenAiChat.layerConfigFetch as unknown as Layer.Layer<never, unknown, never>,
  description: "the OpenAI-compatible chat model from OPENAI_BASE_URL / OPENAI_MODEL"
}

/** The model for a user's agents module. */
export const forModule = (module: AgentsModule): Effect.Effect<ModelChoice, NoModel> =>
  Effect.gen(function*() {
    if (module.model) return { layer: module.model, description: `the model layer exported by ${module.path}` }
    if (yield* openAiConfigured) return openAi
    return yield* new NoModel({
      message: `--agents ${module.path}: no model: export a \`model\` Layer from it, or set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)`
    })
  })
