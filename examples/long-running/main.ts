/**
 * A flight search that takes a minute, reports progress, then hands off to booking.
 *   npx node examples/long-running/main.ts          (the search waits 2 x 30 s: about a minute)
 *   npx node examples/long-running/main.ts --fast   (the same call on a test clock: a second)
 * Each step is printed as it happens, with the seconds since the question (the call's seconds).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Clock, Console, Effect, Stream } from "effect"
import { TestClock } from "effect/testing"
import { drive, ScriptedModel } from "@baton-voice/baton/testing"
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

const call = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: concierge })
  const started = yield* Clock.currentTimeMillis
  const seconds = Effect.map(Clock.currentTimeMillis, (now) => (now - started) / 1000)
  yield* session.events.pipe(
    Stream.runForEach((event) => {
      const line = describe(event)
      return line === undefined ? Effect.void : Effect.flatMap(seconds, (s) => Console.log(`[${s.toFixed(1).padStart(5)} s] ${line}`))
    }),
    Effect.forkScoped
  )
  yield* session.run("Find me a flight to Lisbon", { waitForBackground: true })
  yield* Console.log(`done in ${Math.round(yield* seconds)} s`)
}).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules)))

/** The call in real time (about a minute), or with `fast` on a test clock that skips the waits. */
export const main = (fast: boolean) =>
  fast
    ? Console.log("--fast: the call's minute on a test clock (its seconds are the call's, not yours)").pipe(
      Effect.andThen(drive(call, { step: "100 millis" })),
      Effect.provide(TestClock.layer())
    )
    : Console.log("This takes about a minute of wall time: the flight search waits 2 x 30 s. Run with --fast to skip the waits.").pipe(
      Effect.andThen(call)
    )

if (import.meta.main) NodeRuntime.runMain(main(process.argv.includes("--fast")))
