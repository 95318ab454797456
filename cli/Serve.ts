/**
 * `baton serve`: the Node service (HTTP, WebSocket sessions, the phone bridge, metrics) with the
 * front desk demo, or the entry agent of `--agents`. Options come from the environment (PORT,
 * HOST, BATON_TOKEN, ...; the README's "The service"); `--port` and `--host` override. SIGTERM or Ctrl-C
 * drains and exits 0.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Cause, Effect, Layer, Option, type Schema } from "effect"
import { FrontDeskSchema, frontDeskAgents, greeter, makeFrontDesk } from "../examples/front-desk/agents.ts"
import * as DemoModel from "../examples/front-desk/demoModel.ts"
import * as FliteTts from "../layers/local/FliteTts.ts"
import * as PocketsphinxStt from "../layers/local/PocketsphinxStt.ts"
import * as WebRtcVad from "../layers/local/WebRtcVad.ts"
import * as ServerConfig from "../server/Config.ts"
import { run } from "../server/Run.ts"
import * as Observe from "../src/observe/Observe.ts"
import * as Agents from "./Agents.ts"
import * as Models from "./Models.ts"

export interface ServeFlags {
  readonly agents: Option.Option<string>
  /** `auto`: the offline voice engines when their Debian packages are there; `local`: required; `off`. */
  readonly voice: VoiceMode
  readonly port: Option.Option<number>
  readonly host: Option.Option<string>
}

const DEMO_DESCRIPTION = "Model: the built-in demo model (no API key; it understands the demo's three flows, and phrasings like them)."

/** `auto`: the offline voice engines when their Debian packages are there; `local`: required; `off`. */
export type VoiceMode = "auto" | "local" | "off"

/** The offline engines (WebRTC VAD, pocketsphinx, flite) for cascaded voice sessions. */
const localVoice = Layer.mergeAll(WebRtcVad.layer(), PocketsphinxStt.layer(), FliteTts.layer({ voice: "rms" }))

export const voiceLayer = (mode: VoiceMode): Layer.Layer<never, unknown> =>
  mode === "off"
    ? Layer.empty
    : mode === "local"
    ? localVoice as Layer.Layer<never, unknown>
    : (localVoice as Layer.Layer<never, unknown>).pipe(
      Layer.catchCause((cause) =>
        Layer.effectDiscard(Effect.logWarning(`voice off (text only): ${Cause.squash(cause) instanceof Error ? (Cause.squash(cause) as Error).message : String(Cause.squash(cause))}`))
      )
    )

export const serve = (flags: ServeFlags) =>
  Effect.gen(function*() {
    const fromEnv = yield* ServerConfig.fromEnv
    const options = {
      ...fromEnv,
      ...(Option.isSome(flags.port) ? { port: flags.port.value } : {}),
      ...(Option.isSome(flags.host) ? { host: flags.host.value } : {})
    }
    const { agent, agents, userdata, userdataSchema, model, description, phrases } = yield* Option.match(flags.agents, {
      onNone: () =>
        Effect.map(Models.openAiConfigured, (real) => ({
          agent: greeter,
          agents: frontDeskAgents,
          userdata: makeFrontDesk as () => unknown,
          userdataSchema: FrontDeskSchema as Schema.Codec<any, any> | undefined,
          model: real ? Models.openAi.layer : DemoModel.layer({}) as unknown as Layer.Layer<never, unknown, never>,
          description: real ? `Model: ${Models.openAi.description}.` : DEMO_DESCRIPTION,
          phrases: real ? undefined : DemoModel.demoFlows
        })),
      onSome: (path) =>
        Effect.gen(function*() {
          const module = yield* Agents.load(path)
          const choice = yield* Models.forModule(module)
          if (ServerConfig.storeIsDurable(options) && module.userdata && !module.userdataSchema) {
            return yield* new Agents.AgentsModuleError({
              message: `--agents ${path}: BATON_STORE journals each session's userdata: export its Schema as \`userdataSchema\``
            })
          }
          return {
            agent: module.agent,
            agents: module.agents ?? [module.agent],
            userdata: module.userdata ?? (() => undefined),
            userdataSchema: module.userdataSchema,
            model: choice.layer,
            description: `Agents: ${path}. Model: ${choice.description}.`,
            phrases: undefined
          }
        })
    })
    // metrics of every session for /metrics; event logs with BATON_RECORD_DIR; OTLP with OTEL_EXPORTER_OTLP_ENDPOINT
    const observe = Observe.layerConfig.pipe(Layer.provide(NodeFileSystem.layer))
    return yield* run({ ...options, agent, agents, ...(userdataSchema ? { userdataSchema } : {}), userdata, modelDescription: description, ...(phrases ? { modelPhrases: phrases } : {}) }).pipe(
      Effect.provide(Layer.mergeAll(model, observe, voiceLayer(flags.voice)))
    )
  })
