/**
 * Draws the timeline pictures of docs/: the seed 002 parallel handoff and the seed 004 task
 * group, on the scripted model with a model think time and user pauses so the time axis reads
 * like a call.
 *   npm run docs:timeline        (writes docs/timeline-seed002.svg, docs/timeline-seed004.svg)
 *   node examples/timeline/main.ts [folder]   (the same pictures in another folder)
 *
 * The runs go on a test clock from time 0, so the same run draws the same bytes: running it
 * leaves the clone's pictures as they are unless the runs changed.
 */
import { NodeFileSystem, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, FileSystem } from "effect"
import { TestClock } from "effect/testing"
import { Timeline } from "@baton-voice/baton"
import { drive } from "@baton-voice/baton/testing"
import { seed002, seed002Model, seed004, seed004Model } from "./runs.ts"

const options = { latency: "420 millis", pause: "1500 millis" } as const

/** A run on its own test clock from time 0: the same events at the same times on every run. */
const onTestClock = <A, E, R>(run: Effect.Effect<A, E, R>) => drive(run).pipe(Effect.provide(TestClock.layer()))

export const main = (folder?: string) => Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const parallel = yield* onTestClock(seed002.pipe(Effect.scoped, Effect.provide(seed002Model(options))))
  const group = yield* onTestClock(seed004(options).pipe(Effect.scoped, Effect.provide(seed004Model(options))))
  const out = folder === undefined ? new URL("../../docs/", import.meta.url).pathname : folder.endsWith("/") ? folder : `${folder}/`
  yield* fs.makeDirectory(out, { recursive: true })
  yield* fs.writeFileString(`${out}timeline-seed002.svg`, Timeline.fromEvents(parallel, { title: "Seed 002: a note and a transfer in one response" }))
  yield* fs.writeFileString(`${out}timeline-seed004.svg`, Timeline.fromEvents(group, { title: "Seed 004: a task group over three user turns" }))
  yield* Console.log(`wrote ${out}timeline-seed002.svg and ${out}timeline-seed004.svg`)
}).pipe(Effect.provide(NodeFileSystem.layer))

if (import.meta.main) NodeRuntime.runMain(main(process.argv[2]))
