/**
 * A flight search that takes a minute, reports progress, then hands off to booking.
 *   npx node examples/long-running/main.ts     (the search waits 2 x 30 s of real time)
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession } from "@baton-voice/baton"
import { concierge } from "./agents.ts"
import { rules } from "./script.ts"

const main = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: concierge })
  const result = yield* session.run("Find me a flight to Lisbon", { waitForBackground: true })
  yield* Console.log(result.toString())
}).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules)))

if (import.meta.main) NodeRuntime.runMain(main)
