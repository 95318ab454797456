/**
 * `baton console`: one session in the terminal. Without `--agents` it is the front desk demo
 * (the demo model with no key); with `--agents ./my-agents.ts`, the module's entry agent.
 */
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import { Effect, Layer, Option } from "effect"
import { basename } from "node:path"
import { frontDeskConsole } from "../examples/front-desk/main.ts"
import * as ConsoleApp from "../layers/console/App.ts"
import * as ConsoleTransport from "../layers/console/ConsoleTransport.ts"
import * as Agents from "./Agents.ts"
import * as Models from "./Models.ts"

export interface ConsoleFlags {
  readonly agents: Option.Option<string>
  readonly timeline: Option.Option<string>
}

export const console = (flags: ConsoleFlags) => {
  const timeline = Option.getOrUndefined(flags.timeline)
  return Option.match(flags.agents, {
    onNone: () => frontDeskConsole({ timeline }),
    onSome: (path) =>
      Effect.gen(function*() {
        const module = yield* Agents.load(path)
        const model = yield* Models.forModule(module)
        return yield* ConsoleApp.run({
          agent: module.agent,
          ...(module.userdata ? { userdata: module.userdata } : {}),
          title: `baton · ${basename(path)}`,
          describeModel: (style) => Effect.succeed(`Model: ${style.cyan(model.description)}.`),
          timeline
        }).pipe(Effect.provide(model.layer))
      }).pipe(Effect.provide(Layer.merge(ConsoleTransport.layerNode(), NodeStdio.layer)))
  })
}
