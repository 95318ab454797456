/**
 * The picture script's runs draw: both pictures are well-formed SVG documents with their titles
 * (the structure of each is checked in test/src/Timeline.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "@baton-voice/baton/testing"
import { Timeline } from "@baton-voice/baton"
import { byClass, parse, textOf } from "../../test/src/timeline/svgTree.ts"
import { seed002, seed002Model, seed004, seed004Model } from "./runs.ts"

describe("example: timeline pictures", () => {
  it.effect("draws seed 002 and seed 004 with model latency and user pauses", () =>
    Effect.gen(function*() {
      const options = { latency: "420 millis", pause: "1500 millis" } as const
      const parallel = yield* drive(seed002.pipe(Effect.provide(seed002Model(options))))
      const group = yield* drive(seed004(options).pipe(Effect.provide(seed004Model(options))))
      const a = parse(Timeline.fromEvents(parallel, { title: "Seed 002" }))
      const b = parse(Timeline.fromEvents(group, { title: "Seed 004" }))
      assert.include(textOf(a), "Seed 002")
      assert.include(textOf(b), "Seed 004")
      // The axis reaches past 7 s: three 1.5 s pauses and eight replies of 420 ms.
      const ticks = byClass(b, "tick").map((t) => Number(t.attributes["data-ms"]))
      assert.isAtLeast(ticks[ticks.length - 1]!, 3 * 1500 + 6 * 420)
    }))
})
