/**
 * Found by the simulation (seed 219730, a Gemini-like model whose every second update is
 * refused).
 *
 * A reply to typed text was retried on a fresh connection after its own had fallen back, while
 * the user spoke a newer turn into that fresh connection and the server began answering it by
 * itself. The retry's sync then had to delete the server's in-flight items, which such a model
 * cannot do: the lease fell back again and the older reply failed with a model error. A response
 * the server starts by itself is now the user's newer turn: it supersedes older replies, as
 * typed input does (Gemini sends no speech events, so nothing else tells of that turn).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 7: realtime connection reuse and fallback (simulation regression)", () => {
  it.effect("rule 7: a server-started answer to a newer spoken turn supersedes a reply retried after a fallback", () =>
    Effect.gen(function*() {
      const result = yield* simulate(219730, { exclude: DEFAULT_EXCLUDE, programUses: false })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
      const events = result.recording.events
      // the situation happened: a0's connection fell back and the spoken turn was answered
      assert.isTrue(events.some((e) => e.type === "realtime_connection" && e.agent === "a0" && e.action === "fell_back"))
      assert.isTrue(events.some((e) => e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user" && e.item.text.startsWith("u100")))
      assert.isFalse(events.some((e) => e.type === "error" && e.message.includes("cannot be deleted")))
    }), 60_000)
})
