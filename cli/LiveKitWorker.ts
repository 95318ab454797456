/**
 * `baton worker`: a LiveKit agent worker for the front desk demo, or the entry agent of
 * `--agents`, with the server from `LIVEKIT_URL`, `LIVEKIT_API_KEY` and `LIVEKIT_API_SECRET`.
 * Each job joins its room through @livekit/rtc-node. SIGTERM or Ctrl-C drains (BATON_DRAIN_S).
 * Loaded by `cli/main.ts` only when the settings are there: it imports the optional LiveKit peers.
 */
import { Effect, Layer, Option } from "effect"
import { greeter, makeFrontDesk } from "../examples/front-desk/agents.ts"
import * as DemoModel from "../examples/front-desk/demoModel.ts"
import * as RtcRoom from "../layers/livekit/RtcRoom.ts"
import * as Worker from "../layers/livekit/Worker.ts"
import { RtcNode } from "../layers/rtc/RtcNode.ts"
import * as Agents from "./Agents.ts"
import * as Models from "./Models.ts"
import { voiceLayer, type VoiceMode } from "./Serve.ts"
import type { WorkerSettings } from "./WorkerSettings.ts"

export interface WorkerFlags {
  readonly agents: Option.Option<string>
  readonly agentName: Option.Option<string>
  readonly maxJobs: Option.Option<number>
  readonly voice: VoiceMode
}

/** Runs the worker on `server` (read by `WorkerSettings.settings` before this module is loaded). */
export const worker = (flags: WorkerFlags, server: WorkerSettings) =>
  Effect.gen(function*() {
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
