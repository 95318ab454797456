/**
 * `baton worker`: a LiveKit agent worker for the front desk demo, or the entry agent of
 * `--agents`, with the server from `LIVEKIT_URL`, `LIVEKIT_API_KEY` and `LIVEKIT_API_SECRET`.
 * Each job joins its room through @livekit/rtc-node. SIGTERM or Ctrl-C drains (BATON_DRAIN_S).
 */
import { Config, Effect, Layer, Option } from "effect"
import { greeter, makeFrontDesk } from "../examples/front-desk/agents.ts"
import * as DemoModel from "../examples/front-desk/demoModel.ts"
import * as RtcRoom from "../layers/livekit/RtcRoom.ts"
import * as Worker from "../layers/livekit/Worker.ts"
import { RtcNode } from "../layers/rtc/RtcNode.ts"
import * as Agents from "./Agents.ts"
import * as Models from "./Models.ts"
import { voiceLayer, type VoiceMode } from "./Serve.ts"

export interface WorkerFlags {
  readonly agents: Option.Option<string>
  readonly agentName: Option.Option<string>
  readonly maxJobs: Option.Option<number>
  readonly voice: VoiceMode
}

const settings = Effect.gen(function*() {
  const url = yield* Config.NonEmptyString("LIVEKIT_URL")
  const apiKey = yield* Config.NonEmptyString("LIVEKIT_API_KEY")
  const apiSecret = yield* Config.Redacted("LIVEKIT_API_SECRET")
  const drainSeconds = yield* Config.Int("BATON_DRAIN_S").pipe(Config.withDefault(30))
  return { url, apiKey, apiSecret, drainSeconds }
}).pipe(
  Effect.mapError(() => ({
    _tag: "WorkerConfig" as const,
    message: "set LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET (for a local server: livekit-server --dev, with devkey / secret)"
  }))
)

export const worker = (flags: WorkerFlags) =>
  Effect.gen(function*() {
    const server = yield* settings
    const { agent, userdata, model } = yield* Option.match(flags.agents, {
      onNone: () =>
        Effect.map(Models.openAiConfigured, (real) => ({
          agent: greeter,
          userdata: makeFrontDesk as () => unknown,
          model: real ? Models.openAi.layer : DemoModel.layer({}) as unknown as Layer.Layer<never, unknown, never>
        })),
      onSome: (path) =>
        Effect.gen(function*() {
          const module = yield* Agents.load(path)
          return { agent: module.agent, userdata: module.userdata ?? (() => undefined), model: (yield* Models.forModule(module)).layer }
        })
    })
    // built in the worker's Scope: every job's session uses it for as long as the worker runs
    const models = yield* Layer.build(model)
    const running = yield* Worker.make({
      ...server,
      agentName: Option.getOrElse(flags.agentName, () => ""),
      ...(Option.isSome(flags.maxJobs) ? { maxJobs: flags.maxJobs.value } : {}),
      job: { agent, userdata }
    }).pipe(Effect.provide(models))
    yield* running.registered
    yield* Effect.logInfo(`baton worker ready for ${server.url}${Option.isSome(flags.agentName) ? ` as "${flags.agentName.value}"` : " (automatic dispatch)"}`)
    return yield* Effect.never
  }).pipe(
    Effect.scoped,
    Effect.provide(Layer.mergeAll(RtcRoom.layer.pipe(Layer.provide(RtcNode.layer)))),
    Effect.provide(voiceLayer(flags.voice))
  )
