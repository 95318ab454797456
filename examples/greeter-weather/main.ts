/**
 * The greeter and the weather specialist handing the conversation back and forth.
 *   npx node examples/greeter-weather/main.ts
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession } from "@baton-voice/baton"
import { greeter } from "./agents.ts"
import { rules } from "./script.ts"

export const turns = ["What's the weather like?", "in Paris", "thanks!", "What's the weather like?", "in Oslo", "thanks!"]

const main = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: greeter })
  yield* session.idle
  for (const turn of turns) {
    const result = yield* session.run(turn)
    yield* Console.log(`\n> ${turn}\n${result.toString()}`)
  }
}).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules)))

if (import.meta.main) NodeRuntime.runMain(main)
