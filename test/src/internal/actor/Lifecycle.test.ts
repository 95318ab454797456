/**
 * The actor's lifecycle transitions (src/internal/actor/Lifecycle.ts): each applies only where
 * it makes sense, so no sequence of writers can leave an actor passing a floor it cannot hold, or
 * bring a closed actor back.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Lifecycle from "../../../../src/internal/actor/Lifecycle.ts"

const actor = (): { lifecycle: Lifecycle.Lifecycle } => ({ lifecycle: Lifecycle.initial })
/** Read through a function: each transition may change it (no narrowing across calls). */
const now = (a: { lifecycle: Lifecycle.Lifecycle }): Lifecycle.Lifecycle => a.lifecycle

describe("actor lifecycle", () => {
  it("starting → active → passing → active (a refused handoff) → paused → active (resumed)", () => {
    const a = actor()
    assert.isFalse(Lifecycle.isActive(a))
    Lifecycle.activate(a)
    assert.isTrue(Lifecycle.isActive(a))
    Lifecycle.startPassing(a)
    assert.isTrue(Lifecycle.isPassing(a))
    assert.isFalse(Lifecycle.isActive(a))
    Lifecycle.stopPassing(a)
    assert.isTrue(Lifecycle.isActive(a))
    Lifecycle.startPassing(a)
    Lifecycle.deactivate(a, false)
    assert.strictEqual(now(a)._tag, "Paused")
    Lifecycle.activate(a)
    assert.isTrue(Lifecycle.isActive(a))
  })

  it("only an active actor starts passing; stopping applies only to one that passes", () => {
    const a = actor()
    Lifecycle.startPassing(a)
    assert.strictEqual(now(a)._tag, "Starting")
    Lifecycle.activate(a)
    Lifecycle.deactivate(a, false)
    Lifecycle.startPassing(a)
    assert.strictEqual(now(a)._tag, "Paused")
    Lifecycle.stopPassing(a)
    assert.strictEqual(now(a)._tag, "Paused")
  })

  it("a closed actor is never activated again; its Scope's close terminates it, then flushes", () => {
    const a = actor()
    Lifecycle.activate(a)
    Lifecycle.deactivate(a, true)
    assert.isTrue(Lifecycle.isClosed(a))
    Lifecycle.activate(a)
    assert.strictEqual(now(a)._tag, "Closing")
    Lifecycle.terminate(a)
    assert.isTrue(Lifecycle.isTerminated(a))
    assert.deepStrictEqual(now(a), { _tag: "Terminated", flushed: false })
    Lifecycle.deactivate(a, false)
    Lifecycle.flushed(a)
    assert.deepStrictEqual(now(a), { _tag: "Terminated", flushed: true })
  })
})
