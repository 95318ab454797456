/**
 * Issue 33 item 7: an optional peer that is not installed is one line naming the `npm install`
 * that fixes it (a typed `MissingPeer`), never a stack trace; a module that is there but fails
 * while loading is not mistaken for a missing one (a typed `PeerLoadError`, issue 38).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { importPeer, MissingPeer, PeerLoadError } from "../../layers/rtc/RtcNode.ts"

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

  it.effect("issue 38: an error inside a package that is there is a PeerLoadError (its first line and the reinstall), not a missing peer nor a defect", () =>
    Effect.gen(function*() {
      const broken = new TypeError("boom while loading\n    at somewhere (file.js:1:1)")
      const exit = yield* Effect.exit(importPeer(() => Promise.reject(broken), "a test", ["some-peer"]))
      assert.isTrue(Exit.isFailure(exit) && !Cause.hasDies(exit.cause))
      const error = yield* Effect.flip(importPeer(() => Promise.reject(broken), "a test", ["some-peer"]))
      assert.instanceOf(error, PeerLoadError)
      assert.strictEqual(error.message, "a test could not load: boom while loading; reinstall its packages: npm install some-peer")
    }))
})
