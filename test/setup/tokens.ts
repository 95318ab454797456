/**
 * Every test fails when a work token was released more often than it was taken while it ran
 * (src/internal/Work.ts): in production a double release is counted and the count kept at zero
 * so a session goes on; in the suite it is a defect of baton's, reported with the stack of the
 * release that went below zero.
 */
import { afterEach, beforeEach } from "vitest"
import * as Diagnostics from "../../src/Diagnostics.ts"

let before = 0
let allowed = 0

/** For the test of this check itself: `n` double releases are expected. */
export const allowTokenErrors = (n: number) => {
  allowed += n
}

beforeEach(() => {
  before = Diagnostics.snapshot().tokenErrors
  allowed = 0
})

afterEach(() => {
  const errors = Diagnostics.snapshot().tokenErrors - before
  if (errors !== allowed) {
    throw new Error(`${errors} work token(s) released more often than taken during this test:\n${Diagnostics.lastTokenErrorStack() ?? ""}`)
  }
})
