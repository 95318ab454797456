/**
 * The event recorder: each session's events as a JSON Lines file (`<dir>/<session id>.jsonl`,
 * one event a line, appended as they happen), so a call can be read, replayed in a test, or
 * drawn later (`Timeline.fromJsonl`, `baton timeline`). On with `BATON_RECORD_DIR`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Config, Effect, FileSystem, Layer, Option } from "effect"
import type { AgentSession } from "../AgentSession.ts"
import * as SessionObserver from "../SessionObserver.ts"
import { encodeLine } from "../timeline/Jsonl.ts"
import { follow } from "./Follow.ts"

/**
 * Where a session's event log goes in `dir`.
 *
 * @since 0.1.0
 * @category utils
 */
export const eventLogPath = (dir: string, sessionId: string): string => `${dir.replace(/\/+$/, "")}/${sessionId}.jsonl`

const encoder = new TextEncoder()

/**
 * Appends `session`'s events to the file at `path` until it closes (or the Scope does). A file
 * that cannot be opened or written is logged once as a warning; the session goes on.
 *
 * @since 0.1.0
 * @category combinators
 */
export const record = Effect.fn("Recorder.record")(function*(session: AgentSession<unknown>, path: string) {
  const fs = yield* FileSystem.FileSystem
  const file = yield* fs.open(path, { flag: "a" }).pipe(Effect.option)
  if (Option.isNone(file)) return yield* Effect.logWarning(`event recorder: cannot open ${path}; session ${session.id} is not recorded`)
  let failed = false
  yield* follow(session, (events) =>
    failed ? Effect.void : file.value.writeAll(encoder.encode(events.map((e) => `${encodeLine(e)}\n`).join(""))).pipe(
      Effect.catch((error) =>
        Effect.suspend(() => {
          failed = true
          return Effect.logWarning(`event recorder: writing ${path} failed (${error.message}); recording stopped`)
        })
      )
    ))
})

/**
 * An observer that records every session to `dir` (created if missing).
 *
 * @since 0.1.0
 * @category constructors
 */
export const observer = (dir: string, fs: FileSystem.FileSystem): SessionObserver.SessionObserver => ({
  name: "recorder",
  observe: (session) =>
    record(session, eventLogPath(dir, session.id)).pipe(Effect.provideService(FileSystem.FileSystem, fs))
})

/**
 * Records every session of the context to `dir`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (dir: string): Layer.Layer<never, never, FileSystem.FileSystem> =>
  Layer.unwrap(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    yield* fs.makeDirectory(dir, { recursive: true }).pipe(
      Effect.catch((error) => Effect.logWarning(`event recorder: cannot create ${dir}: ${error.message}`))
    )
    return SessionObserver.layer(observer(dir, fs))
  }))

/**
 * `layer(BATON_RECORD_DIR)` when the variable is set; nothing otherwise.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<never, Config.ConfigError, FileSystem.FileSystem> = Layer.unwrap(
  Effect.map(Config.option(Config.String("BATON_RECORD_DIR")), (dir) =>
    Option.isSome(dir) && dir.value.trim() !== "" ? layer(dir.value.trim()) : Layer.empty)
)
