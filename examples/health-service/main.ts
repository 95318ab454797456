/**
 * Runs the health-service flow on the scripted model and prints each turn's events.
 *   npx node examples/health-service/main.ts
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession } from "@baton-voice/baton"
import { frontDesk } from "./agents.ts"
import { rules } from "./script.ts"

export const turns = [
  "Hi, I'd like to schedule a visit",
  "Jane Doe, born 1990-04-02",
  "Tuesday at 10am would be great"
]

const main = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: frontDesk })
  yield* session.idle
  for (const turn of turns) {
    const result = yield* session.run(turn)
    yield* Console.log(`\n> ${turn}\n${result.toString()}`)
  }
}).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules)))

if (import.meta.main) NodeRuntime.runMain(main)
