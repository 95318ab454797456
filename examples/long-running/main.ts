/**
 * A flight search that takes a minute, reports progress, then hands off to booking.
 *   npx node examples/long-running/main.ts     (the search waits 2 x 30 s of real time)
 * Each step is printed as it happens, with the seconds since the question.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Stream } from "effect"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession, type SessionEvent } from "@baton-voice/baton"
import { concierge } from "./agents.ts"
import { rules } from "./script.ts"

const seenCalls = new Set<string>()

/** One line for what entered the conversation, or nothing (a progress report repeats its call: said once). */
const describe = (event: SessionEvent): string | undefined => {
  if (event.type === "agent_handoff" && event.from) return `${event.from} hands the call to ${event.to}`
  if (event.type !== "conversation_item_added") return undefined
  const item = event.item
  switch (item._tag) {
    case "Message":
      return `${item.role === "user" ? "caller" : item.agent ?? "agent"}: "${item.text}"`
    case "FunctionCall": {
      const first = item.callId.split(":")[0]!
      if (seenCalls.has(first)) return undefined
      seenCalls.add(first)
      return `${item.agent ?? "agent"} calls ${item.name}(${item.arguments})`
    }
    case "FunctionCallOutput":
      return `  ${item.name} reports: ${item.output}`
    default:
      return undefined
  }
}

const main = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: concierge })
  const started = Date.now()
  yield* session.events.pipe(
    Stream.runForEach((event) => {
      const line = describe(event)
      return line === undefined ? Effect.void : Console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}`)
    }),
    Effect.forkScoped
  )
  yield* session.run("Find me a flight to Lisbon", { waitForBackground: true })
  yield* Console.log(`done in ${Math.round((Date.now() - started) / 1000)} s`)
}).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules)))

if (import.meta.main) NodeRuntime.runMain(main)
