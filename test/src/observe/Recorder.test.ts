/**
 * The event recorder: with BATON_RECORD_DIR set, each session's events land in
 * `<dir>/<session id>.jsonl`, every event once and in order, `close` included, and the file
 * draws the same timeline as the session's own log. Without it, nothing is written. A
 * recorder attached to a running session still writes its start-up.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, FileSystem, Layer } from "effect"
import * as Runs from "../../../examples/timeline/runs.ts"
import { front } from "../../../examples/parallel-handoff/agents.ts"
import { drive } from "../../../layers/testing/Drive.ts"
import * as Recorder from "../../../src/observe/Recorder.ts"
import { AgentSession, type SessionEvent, Timeline } from "../../../src/index.ts"

const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env }))

const readLog = (fs: FileSystem.FileSystem, path: string) =>
  Effect.map(fs.readFileString(path), (text) => text.trim().split("\n").map((line) => JSON.parse(line) as SessionEvent))

describe("Recorder", () => {
  it.effect("BATON_RECORD_DIR: one JSONL file per session, every event once and in order, close included", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = `${yield* fs.makeTempDirectoryScoped()}/calls`
      const { id, log } = yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: front, userdata: { saved: [] as Array<string> } })
        yield* drive(session.run("I have a question about my bill"))
        yield* session.close
        return { id: session.id, log: yield* session.eventLog }
      }).pipe(Effect.scoped, Effect.provide(Recorder.layerConfig.pipe(Layer.provide(withEnv({ BATON_RECORD_DIR: dir })))))

      assert.deepStrictEqual(yield* fs.readDirectory(dir), [`${id}.jsonl`])
      const written = yield* readLog(fs, Recorder.eventLogPath(dir, id))
      assert.deepStrictEqual(written.map((e) => e.seq), log.map((e) => e.seq))
      assert.deepStrictEqual(written.map((e) => e.seq), written.map((_, i) => i))
      assert.strictEqual(written[written.length - 1]!.type, "close")
      assert.deepStrictEqual(written, JSON.parse(JSON.stringify(log)))
      // The file draws the same picture as the session's own log.
      const svg = yield* Timeline.fromJsonlText(yield* fs.readFileString(Recorder.eventLogPath(dir, id)))
      assert.strictEqual(svg, Timeline.fromEvents(log))
    }).pipe(Effect.scoped, Effect.provide([Runs.seed002Model(), NodeFileSystem.layer])))

  it.effect("a session closed by its Scope (not by close) is recorded up to its close event", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped()
      const id = yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: front, userdata: { saved: [] as Array<string> } })
        yield* drive(session.run("I have a question about my bill"))
        return session.id
      }).pipe(Effect.scoped, Effect.provide(Recorder.layer(dir)))
      const written = yield* readLog(fs, Recorder.eventLogPath(dir, id))
      assert.strictEqual(written[written.length - 1]!.type, "close")
      assert.isTrue(written.some((e) => e.type === "agent_handoff" && e.to === "billing"))
    }).pipe(Effect.scoped, Effect.provide([Runs.seed002Model(), NodeFileSystem.layer])))

  it.effect("without BATON_RECORD_DIR nothing is written", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped()
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: front, userdata: { saved: [] as Array<string> } })
        yield* drive(session.run("I have a question about my bill"))
      }).pipe(Effect.scoped, Effect.provide(Recorder.layerConfig.pipe(Layer.provide(withEnv({ OTHER: dir })))))
      assert.deepStrictEqual(yield* fs.readDirectory(dir), [])
    }).pipe(Effect.scoped, Effect.provide([Runs.seed002Model(), NodeFileSystem.layer])))

  it.effect("record() on a session already running writes its start-up too", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = `${yield* fs.makeTempDirectoryScoped()}/late.jsonl`
      const log = yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: front, userdata: { saved: [] as Array<string> } })
        yield* drive(session.run("I have a question about my bill"))
        yield* Recorder.record(session, path)
        yield* session.close
        return yield* session.eventLog
      }).pipe(Effect.scoped)
      const written = yield* readLog(fs, path)
      assert.deepStrictEqual(written.map((e) => e.seq), log.map((e) => e.seq))
      assert.strictEqual(written[0]!.type, "conversation_item_added")
    }).pipe(Effect.scoped, Effect.provide([Runs.seed002Model(), NodeFileSystem.layer])))

  it.effect("a file that cannot be opened is a warning; the session goes on", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: front, userdata: { saved: [] as Array<string> } })
      yield* Recorder.record(session, "/nonexistent-dir/x/y.jsonl")
      const result = yield* drive(session.run("I have a question about my bill"))
      result.expect.containsAgentHandoff({ to: "billing" })
    }).pipe(Effect.scoped, Effect.provide([Runs.seed002Model(), NodeFileSystem.layer])))
})
