/**
 * The lease ledger alone (src/internal/realtime/Ledger.ts): which lease each server event is for,
 * what is cancelled, and when the server counts as idle. Rule 8 (nothing reaches an agent that
 * no longer holds the floor) and rule 7's "one response at a time", event by event.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Ledger from "../../../../src/internal/realtime/Ledger.ts"

const holder = { name: "A" }
const next = { name: "B" }
const started = (responseId: string) => ({ _tag: "ResponseStarted", responseId }) as const
const text = (responseId: string) => ({ _tag: "TextDelta", responseId, itemId: "i", delta: "hi" }) as const
const done = (responseId: string) => ({ _tag: "ResponseDone", responseId, status: "completed" }) as const

describe("lease ledger (rule 8)", () => {
  it("a response asked for by the holder reaches it with the ticket that asked", () => {
    const ledger = Ledger.ledger()
    const ticket = { owner: holder, abandoned: false }
    Ledger.asked(ledger, ticket)
    const verdict = Ledger.track(ledger, started("r1"), holder)
    assert.deepStrictEqual(verdict, { deliver: { ...started("r1"), ticket }, cancel: undefined, idle: false })
    assert.strictEqual(Ledger.track(ledger, text("r1"), holder).deliver?._tag, "TextDelta")
    assert.isTrue(Ledger.busy(ledger))
    const end = Ledger.track(ledger, done("r1"), holder)
    assert.strictEqual(end.deliver?._tag, "ResponseDone")
    assert.isTrue(end.idle)
    assert.isFalse(Ledger.busy(ledger))
  })

  it("the server answers in order: each start takes the oldest request", () => {
    const ledger = Ledger.ledger()
    const first = { owner: holder, abandoned: false }
    const second = { owner: holder, abandoned: false }
    Ledger.asked(ledger, first)
    Ledger.asked(ledger, second)
    assert.strictEqual(Ledger.track(ledger, started("r1"), holder).deliver?.ticket, first)
    // Not idle yet: the second request is still to start.
    assert.isFalse(Ledger.track(ledger, done("r1"), holder).idle)
    assert.strictEqual(Ledger.track(ledger, started("r2"), holder).deliver?.ticket, second)
    assert.isTrue(Ledger.track(ledger, done("r2"), holder).idle)
  })

  it("a response asked for by a lease released since is dropped whole and cancelled as it starts", () => {
    const ledger = Ledger.ledger()
    Ledger.asked(ledger, { owner: holder, abandoned: false })
    const verdict = Ledger.track(ledger, started("r1"), next)
    assert.deepStrictEqual(verdict, { deliver: undefined, cancel: "r1", idle: false })
    assert.isUndefined(Ledger.track(ledger, text("r1"), next).deliver)
    const end = Ledger.track(ledger, done("r1"), next)
    assert.isUndefined(end.deliver)
    assert.isTrue(end.idle)
  })

  it("an abandoned ticket's response is stale even for the lease that asked", () => {
    const ledger = Ledger.ledger()
    const ticket = { owner: holder, abandoned: false }
    Ledger.asked(ledger, ticket)
    ticket.abandoned = true
    assert.strictEqual(Ledger.track(ledger, started("r1"), holder).cancel, "r1")
  })

  it("a response the server starts by itself has no ticket and reaches the holder", () => {
    const ledger = Ledger.ledger()
    const verdict = Ledger.track(ledger, started("s1"), holder)
    assert.isUndefined(verdict.deliver?.ticket)
    assert.strictEqual(verdict.deliver?._tag, "ResponseStarted")
    assert.isUndefined(verdict.cancel)
  })

  it("a cut names its own response: a late cut does not touch the next one", () => {
    const ledger = Ledger.ledger()
    Ledger.track(ledger, started("r1"), holder)
    Ledger.track(ledger, done("r1"), holder)
    Ledger.track(ledger, started("r2"), holder)
    assert.deepStrictEqual(Ledger.cut(ledger, "r1"), { send: false, id: undefined })
    assert.strictEqual(Ledger.track(ledger, text("r2"), holder).deliver?._tag, "TextDelta")
    assert.deepStrictEqual(Ledger.cut(ledger, "r2"), { send: true, id: "r2" })
    assert.isUndefined(Ledger.track(ledger, text("r2"), holder).deliver)
  })

  it("an unnamed cut with nothing running cancels whatever the server starts next", () => {
    const ledger = Ledger.ledger()
    assert.deepStrictEqual(Ledger.cut(ledger), { send: true, id: undefined })
  })

  it("a request that could not be sent is withdrawn: the next start is not taken for it", () => {
    const ledger = Ledger.ledger()
    const failed = { owner: holder, abandoned: false }
    Ledger.asked(ledger, failed)
    Ledger.withdrawn(ledger, failed)
    assert.isFalse(Ledger.busy(ledger))
    assert.isUndefined(Ledger.track(ledger, started("s1"), holder).deliver?.ticket)
  })

  it("a release abandons everything asked for and names the running response to cancel", () => {
    const ledger = Ledger.ledger()
    const running = { owner: holder, abandoned: false }
    const queued = { owner: holder, abandoned: false }
    Ledger.asked(ledger, running)
    Ledger.asked(ledger, queued)
    Ledger.track(ledger, started("r1"), holder)
    assert.strictEqual(Ledger.abandonAll(ledger), "r1")
    assert.isTrue(queued.abandoned)
    assert.isUndefined(Ledger.track(ledger, text("r1"), holder).deliver)
    // The queued request's response, when it comes, is cancelled for whoever holds it now.
    Ledger.track(ledger, done("r1"), next)
    assert.strictEqual(Ledger.track(ledger, started("r2"), next).cancel, "r2")
  })

  it("the server's interruption ends the running response; the user's events always pass", () => {
    const ledger = Ledger.ledger()
    Ledger.track(ledger, started("r1"), holder)
    const cut = Ledger.track(ledger, { _tag: "Interrupted", responseId: "r1" }, holder)
    assert.isTrue(cut.idle)
    assert.isFalse(Ledger.busy(ledger))
    for (const event of [{ _tag: "SpeechStarted" }, { _tag: "InputTranscript", itemId: "u1", text: "hi", final: true }] as const) {
      assert.strictEqual(Ledger.track(ledger, event, undefined).deliver, event)
    }
  })
})
