/**
 * The handoff timeline picture: a run's events drawn as an SVG, one lane per agent, the floor as
 * a band moving between lanes, speeches, tool calls (parallel ones stacked), user turns,
 * interruptions, realtime connection moves and times.
 *
 * `fromEvents` is pure (a string from events); `fromJsonl` reads an event log written by the
 * recorder; `command` is the CLI's `baton timeline in.jsonl -o out.svg`. `RunResult.timeline()`
 * draws one run. The layout lives in `timeline/Layout.ts`, the drawing in `timeline/Svg.ts`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, FileSystem } from "effect"
import type { SessionEvent } from "./Events.ts"
import { decode, TimelineError } from "./timeline/Jsonl.ts"
import { layout } from "./timeline/Layout.ts"
import { render } from "./timeline/Svg.ts"

export { decode as decodeJsonl, encodeLine, TimelineError } from "./timeline/Jsonl.ts"
export type { Layout } from "./timeline/Layout.ts"
export { layout } from "./timeline/Layout.ts"

/**
 * Options of the timeline picture.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The picture's heading (default "baton timeline"). */
  readonly title?: string
}

/**
 * The SVG of `events` (in any order; drawn by sequence number).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEvents = (events: ReadonlyArray<SessionEvent>, options: Options = {}): string =>
  render(layout(events), options)

/**
 * The SVG of a JSONL event log's text.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromJsonlText = (text: string, options: Options = {}): Effect.Effect<string, TimelineError> =>
  Effect.suspend(() => {
    const events = decode(text)
    return events instanceof TimelineError ? Effect.fail(events) : Effect.succeed(fromEvents(events, options))
  })

/**
 * The SVG of the JSONL event log at `path`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromJsonl = Effect.fn("Timeline.fromJsonl")(function*(path: string, options: Options = {}) {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(path).pipe(
    Effect.mapError((cause) => new TimelineError({ reason: "read_failed", message: `cannot read ${path}: ${cause.message}`, cause }))
  )
  const events = decode(text, path)
  if (events instanceof TimelineError) return yield* events
  return fromEvents(events, { title: options.title ?? `baton timeline · ${path.split("/").pop()}` })
})

/**
 * `baton timeline <input.jsonl> [-o output.svg]`: writes the picture next to the input (same
 * name, `.svg`) unless told where, and returns the path written.
 *
 * @since 0.1.0
 * @category utils
 */
export const command = Effect.fn("Timeline.command")(function*(input: string, output?: string) {
  const svg = yield* fromJsonl(input)
  const target = output ?? `${input.replace(/\.jsonl?$/i, "")}.svg`
  const fs = yield* FileSystem.FileSystem
  yield* fs.writeFileString(target, svg).pipe(
    Effect.mapError((cause) => new TimelineError({ reason: "write_failed", message: `cannot write ${target}: ${cause.message}`, cause }))
  )
  return target
})
