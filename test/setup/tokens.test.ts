/**
 * Item 9 of "nothing lost": a work token released twice is a defect that fails tests. The
 * count of tokens stays at zero (a running session goes on); the suite's setup fails the test
 * that did it, with the stack of the release.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Diagnostics from "../../src/Diagnostics.ts"
import * as Work from "../../src/internal/Work.ts"
import { allowTokenErrors } from "./tokens.ts"

describe("work tokens", () => {
  it("a release below zero is counted with its stack, and the count stays at zero", () => {
    const work = Work.make()
    const before = Diagnostics.snapshot().tokenErrors
    Work.acquire(work)
    Work.release(work)
    assert.strictEqual(Diagnostics.snapshot().tokenErrors, before)
    Work.release(work)
    assert.strictEqual(Diagnostics.snapshot().tokenErrors, before + 1)
    assert.strictEqual(Work.count(work), 0)
    assert.include(Diagnostics.lastTokenErrorStack() ?? "", "Work.ts")
    // Without this, test/setup/tokens.ts fails this test (what it is for).
    allowTokenErrors(1)
  })
})
