/**
 * A person takes over from the agents, and gives the call back (issue 35): the front desk served
 * with its operator's desk. `npx node examples/human-handoff/main.ts`, then open two tabs:
 *
 * - the caller, on `/`: type to the front desk;
 * - the operator, on `/operator`: the live sessions, who holds the floor and the last words; open
 *   one to read it as it goes, whisper to the agent, take over (the agent stops at once and the
 *   operator types to the caller), and hand back to an agent with a note for its next reply. On
 *   a voice call the operator listens in and, holding the floor, speaks through the microphone;
 *   `/operator?name=ada` is Ada, whom a `Transfer` to "ada" (or "any") rings (docs/operator.md).
 *
 * With no `OPENAI_API_KEY` it runs on the front desk's built-in demo model. With `BATON_TOKEN`
 * set, each tab needs its own token: `POST /token` for the caller (`?token=` on `/`), `POST
 * /token?route=operator` for the operator (`?token=` on `/operator`); one does not open the other.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer } from "effect"
import { Config, run } from "@baton-voice/baton/node"
import { OpenAiChat } from "@baton-voice/baton/openai"
import { chooseModel } from "../front-desk/main.ts"
import { FrontDeskSchema, frontDeskAgents, greeter, makeFrontDesk } from "../front-desk/agents.ts"
import * as DemoModel from "../front-desk/demoModel.ts"

const main = Effect.gen(function*() {
  const options = yield* Config.fromEnv
  const demo = (yield* chooseModel)._tag === "Demo"
  yield* Effect.log("Two tabs: the caller on / and the operator on /operator (take over, whisper, hand back).")
  return yield* run({
    ...options,
    agent: greeter,
    agents: frontDeskAgents,
    userdata: makeFrontDesk,
    userdataSchema: FrontDeskSchema,
    modelDescription: demo ? "Model: the front desk's built-in demo model." : "Model: OpenAI-compatible chat (OPENAI_API_KEY / OPENAI_BASE_URL).",
    ...(demo ? { modelPhrases: DemoModel.demoFlows } : {})
  }).pipe(Effect.provide(demo ? DemoModel.layer({}) as unknown as Layer.Layer<never> : OpenAiChat.layerConfigFetch))
})

NodeRuntime.runMain(main)
