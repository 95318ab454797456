/**
 * Issue 33 item 7: an optional peer that is not installed is one line naming the `npm install`
 * that fixes it (a typed `MissingPeer`), never a stack trace; a module that is there but fails
 * while loading is not mistaken for a missing one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { importPeer, MissingPeer } from "../../layers/rtc/RtcNode.ts"

describe("importPeer", () => {
  it.effect("a package that is not installed fails with MissingPeer: what needs it, and the npm install", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        importPeer(() => import("@baton-voice/not-a-package-" + "anywhere"), "baton worker", ["@livekit/rtc-node", "@livekit/protocol"])
      )
      assert.instanceOf(error, MissingPeer)
      assert.strictEqual(
        error.message,
        "baton worker needs @baton-voice/not-a-package-anywhere, which is not installed: npm install @livekit/rtc-node @livekit/protocol"
      )
    }))

  it.effect("a package that loads returns its module", () =>
    Effect.gen(function*() {
      const path = yield* importPeer(() => import("node:path"), "a test", ["nothing"])
      assert.strictEqual(path.join("a", "b"), "a/b")
    }))

  it.effect("an error inside a package that is there stays a defect, not a missing peer", () =>
    Effect.gen(function*() {
      const broken = new TypeError("boom while loading")
      const exit = yield* Effect.exit(importPeer(() => Promise.reject(broken), "a test", ["nothing"]))
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
    }))
})
