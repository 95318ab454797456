/**
 * Found by the simulation at 764fb1e (seed 1904211). The user spoke while the holder's answer
 * was a handoff; the transcript came on the holder's connection in the same instant and reached
 * the old holder's mailbox as it passed the floor. It recorded the words as its own user turn
 * while the new holder held the floor (rule 1: one floor). The words now go to the holder: its
 * context records them, and the server's answer to that turn, if the connection moved with the
 * floor, claims them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 1: one floor (simulation regression)", () => {
  it.effect("rule 1: a transcript that reaches the old holder as it passes the floor is the new holder's (seed 1904211)", () =>
    Effect.gen(function*() {
      const result = yield* simulate(1904211, { exclude: DEFAULT_EXCLUDE, programUses: false })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      // the situation happened: the turn the user spoke as a0 handed off to a2 is a2's
      const u101 = result.recording.events.find((e) =>
        e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user" && e.item.text === "u101 please"
      )
      assert.strictEqual(u101?.type === "conversation_item_added" ? u101.agent : undefined, "a2")
    }), 60_000)
})
