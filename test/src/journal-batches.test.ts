/**
 * A journal reads as whole appends (src/internal/Journal.ts, `batch` entries): a store that
 * kept only a prefix of an append (breaking its contract of atomic appends) leaves a journal
 * whose fold is the session as of its last whole append, and a later writer's appends after
 * that torn tail are read.
 */
import { assert, describe, it } from "@effect/vitest"
import type { JournalEntry } from "../../services/SessionStore.ts"
import * as Journal from "../../src/internal/Journal.ts"

const message = (id: string) => ({ _tag: "Message", id, role: "user", text: id, agent: "a", interrupted: false })

const numbered = (entries: ReadonlyArray<Omit<JournalEntry, "seq">>): Array<JournalEntry> => entries.map((entry, seq) => ({ ...entry, seq }))

const batch = (n: number) => ({ at: 0, kind: "batch", data: { entries: n } })
const history = (from: number, ...ids: Array<string>) => ({ at: 0, kind: "history", data: { from, items: ids.map(message) } })
const floor = (holder: number) => ({ at: 0, kind: "floor", data: { holder, actors: [[holder, "Active"]] } })
const actor = (key: number, agent: string) => ({ at: 0, kind: "actor", data: { key, agent } })

const ids = (folded: Journal.Folded) => folded.history.map((item) => item.id)

describe("journal batches", () => {
  it("a torn append (a prefix of its entries) is dropped: the fold is the last whole append's", () => {
    const whole = [batch(3), actor(0, "a"), history(0, "m1"), floor(0)]
    const torn = [batch(3), actor(1, "b"), history(1, "m2")]
    const folded = Journal.fold(numbered([...whole, ...torn]))
    assert.deepStrictEqual(ids(folded), ["m1"])
    assert.deepStrictEqual(folded.floor?.holder, 0)
    assert.deepStrictEqual([...folded.actors.keys()], [0])
  })

  it("a writer's appends after a torn tail are read (each writer's first append is led by its batch entry)", () => {
    const entries = [batch(3), actor(0, "a"), history(0, "m1"), floor(0), batch(3), actor(1, "b"), batch(1), history(1, "m3")]
    const folded = Journal.fold(numbered(entries))
    assert.deepStrictEqual(ids(folded), ["m1", "m3"])
    assert.deepStrictEqual([...folded.actors.keys()], [0])
  })

  it("whole appends, with and without their batch entry (one-entry appends and journals written before it), fold in full", () => {
    const entries = [batch(3), actor(0, "a"), history(0, "m1"), floor(0), history(1, "m2"), batch(2), history(2, "m3"), floor(0)]
    assert.deepStrictEqual(ids(Journal.fold(numbered(entries))), ["m1", "m2", "m3"])
    assert.deepStrictEqual(ids(Journal.fold(numbered([actor(0, "a"), history(0, "m1"), floor(0)]))), ["m1"])
  })
})
