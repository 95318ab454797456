/**
 * `npm run timeline -- <events.jsonl> [out.svg]`: draws a recorded session (an event log from
 * BATON_RECORD_DIR, or any JSONL of session events) as a handoff timeline SVG, next to the input
 * unless told where. A bad file gets one line saying what is wrong, and exit code 1.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect } from "effect"
import * as Timeline from "../Timeline.ts"

const usage = "usage: npm run timeline -- <events.jsonl> [out.svg]"

const main = Effect.gen(function*() {
  const [input, output, ...rest] = process.argv.slice(2)
  if (input === undefined || input === "--help" || input === "-h" || rest.length > 0) {
    yield* Console.log(usage)
    if (input === undefined || rest.length > 0) process.exitCode = 2
    return
  }
  const written = yield* Timeline.command(input, output)
  yield* Console.log(`wrote ${written}`)
}).pipe(
  Effect.catchTag("TimelineError", (error) => Effect.sync(() => {
    process.stderr.write(`timeline: ${error.message}\n`)
    process.exitCode = 1
  })),
  Effect.provide(NodeFileSystem.layer)
)

if (import.meta.main) NodeRuntime.runMain(main, { disableErrorReporting: false })
