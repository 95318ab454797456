/**
 * A note saved and a transfer made in one model response.
 *   npx node examples/parallel-handoff/main.ts
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession } from "@baton-voice/baton"
import { front, type Notes } from "./agents.ts"
import { rules } from "./script.ts"

const main = Effect.gen(function*() {
  const session = yield* AgentSession.start<Notes>({ agent: front, userdata: { saved: [] } })
  const result = yield* session.run("I have a question about my bill")
  yield* Console.log(result.toString())
  yield* Console.log(`\nnotes saved: ${JSON.stringify(session.userdata.saved)}`)
}).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules)))

if (import.meta.main) NodeRuntime.runMain(main)
