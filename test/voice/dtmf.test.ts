/**
 * Keypad presses gathered into turns: ended by the finish digit, a pause or the length limit.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as Dtmf from "../../src/voice/Dtmf.ts"

const collect = (options?: Dtmf.Options) =>
  Effect.gen(function*() {
    const turns: Array<string> = []
    const collector = yield* Dtmf.collector((text) => Effect.sync(() => void turns.push(text)), options)
    const press = (keys: string) => Effect.forEach([...keys], collector.press, { discard: true })
    return { turns, press, collector }
  })

describe("Dtmf.collector", () => {
  it.effect("digits end at the finish digit (not part of the turn), or after a pause; each press restarts the pause", () =>
    Effect.scoped(Effect.gen(function*() {
      const { turns, press } = yield* collect()
      yield* press("12")
      yield* TestClock.adjust("1500 millis")
      yield* press("3")
      yield* TestClock.adjust("1500 millis")
      assert.deepStrictEqual(turns, [])
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(turns, ["DTMF: 123"])
      yield* press("45#")
      assert.deepStrictEqual(turns, ["DTMF: 123", "DTMF: 45"])
      // The finish digit alone is a turn; nothing is left to time out.
      yield* press("#")
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(turns, ["DTMF: 123", "DTMF: 45", "DTMF: #"])
    })))

  it.effect("maxDigits ends a turn; keys that are not keys are ignored; flush ends what was pressed", () =>
    Effect.scoped(Effect.gen(function*() {
      const { turns, press, collector } = yield* collect({ maxDigits: 4, prefix: "keys " })
      yield* press("12x3*9")
      assert.deepStrictEqual(turns, ["keys 123*"])
      yield* collector.flush
      assert.deepStrictEqual(turns, ["keys 123*", "keys 9"])
      yield* collector.flush
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(turns, ["keys 123*", "keys 9"])
    })))
})
