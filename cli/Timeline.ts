/**
 * `baton timeline <events.jsonl> [out.svg]`: draws a recorded session (an event log from
 * BATON_RECORD_DIR, or any JSONL of session events) as a handoff timeline SVG, next to the input
 * unless told where.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Console, Effect, Option } from "effect"
import * as Timeline from "../src/Timeline.ts"

export const timeline = (input: string, output: Option.Option<string>) =>
  Effect.gen(function*() {
    const written = yield* Timeline.command(input, Option.getOrUndefined(output))
    yield* Console.log(`wrote ${written}`)
  }).pipe(Effect.provide(NodeFileSystem.layer))
