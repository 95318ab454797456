/**
 * `--agents ./my-agents.ts`: the user's own agents for `baton console` and `baton serve`.
 *
 * The module exports its entry agent as `agent` (or as its default export), and may export
 * `userdata` (a function making each session's userdata), `userdataSchema` (its Schema, needed with
 * a durable `BATON_STORE`), `agents` (every agent and task a session may run, for resuming one
 * from the store) and `model` (a Layer providing the
 * `LanguageModel` or the `RealtimeModel` its agents use). Without `model`, the OpenAI-compatible
 * chat model is used when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set.
 */
import { Data, Effect, Layer, Schema } from "effect"
import { existsSync } from "node:fs"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { Agent } from "../src/index.ts"

export interface AgentsModule {
  readonly path: string
  readonly agent: Agent.Agent
  readonly userdata?: () => unknown
  readonly userdataSchema?: Schema.Codec<any, any>
  readonly agents?: ReadonlyArray<Agent.Agent>
  readonly model?: Layer.Layer<never, unknown, never>
}

export class AgentsModuleError extends Data.TaggedError("AgentsModuleError")<{ readonly message: string }> {}

const refuse = (path: string, what: string) => new AgentsModuleError({ message: `--agents ${path}: ${what}` })

export const load = (path: string): Effect.Effect<AgentsModule, AgentsModuleError> =>
  Effect.gen(function*() {
    const absolute = resolve(path)
    if (!existsSync(absolute)) return yield* refuse(path, `no such file (${absolute})`)
    const module = yield* Effect.tryPromise({
      try: () => import(pathToFileURL(absolute).href) as Promise<Record<string, unknown>>,
      catch: (e) => refuse(path, `cannot be loaded: ${(e as Error).message?.split("\n")[0] ?? String(e)}`)
    })
    const agent = module["agent"] ?? module["default"]
    if (!Agent.isAgent(agent)) {
      return yield* refuse(path, "export the entry agent as `agent` (or as the default export), made with Agent.make")
    }
    const userdata = module["userdata"]
    if (userdata !== undefined && typeof userdata !== "function") {
      return yield* refuse(path, "`userdata` must be a function returning each session's userdata")
    }
    const model = module["model"]
    if (model !== undefined && !Layer.isLayer(model)) {
      return yield* refuse(path, "`model` must be a Layer (for example OpenAiChat.layerConfig or ScriptedModel.layer(...))")
    }
    const userdataSchema = module["userdataSchema"]
    if (userdataSchema !== undefined && !Schema.isSchema(userdataSchema)) {
      return yield* refuse(path, "`userdataSchema` must be a Schema of the userdata")
    }
    const agents = module["agents"]
    if (agents !== undefined && !(Array.isArray(agents) && agents.every(Agent.isAgent))) {
      return yield* refuse(path, "`agents` must be an array of every agent and task a session may run")
    }
    return {
      path,
      agent,
      ...(userdataSchema ? { userdataSchema: userdataSchema as Schema.Codec<any, any> } : {}),
      ...(agents ? { agents: agents as ReadonlyArray<Agent.Agent> } : {}),
      ...(userdata ? { userdata: userdata as () => unknown } : {}),
      ...(model ? { model: model as unknown as Layer.Layer<never, unknown, never> } : {})
    }
  })
