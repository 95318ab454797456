/**
 * A call's grace period and its token refresh (server/Call.ts), on the test clock: a call whose
 * client went away ends exactly `resumeSeconds` later unless a client attaches first; while a
 * client is attached it gets a fresh token every half of `resumeSeconds`, each good for twice it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { discard } from "../../services/AudioOutput.ts"
import { Resampler } from "../../services/Resampler.ts"
import * as SincResampler from "../../services/SincResampler.ts"
import * as Call from "../../server/Call.ts"
import { defaults } from "../../server/Config.ts"
import type { ConnectionContext } from "../../server/Connection.ts"
import * as Registry from "../../server/Registry.ts"
import * as Resumer from "../../server/Resumer.ts"
import * as Token from "../../server/Token.ts"
import { Agent } from "../../src/index.ts"

const secret = Redacted.make("k")
const agent = Agent.make({ name: "front", instructions: "You are the front desk." })

const openCall = (resumeSeconds: number) =>
  Effect.gen(function*() {
    const ctx: ConnectionContext = {
      agent,
      userdata: () => undefined,
      options: { ...defaults, resumeSeconds },
      registry: yield* Registry.make(10),
      resampler: yield* Resampler,
      realtimeInputRate: 24_000,
      resumer: Resumer.make(secret),
      resumeSecret: secret
    }
    return yield* Call.open(ctx, secret, true)
  }).pipe(Effect.provide(Layer.merge(SincResampler.layer, ScriptedModel.layer([{ when: { agent: "front" }, reply: { text: "Hi." } }]))))

const client = Effect.gen(function*() {
  const tokens: Array<Token.ResumeToken> = []
  const self: Call.Client = { audio: discard, event: () => Effect.void, token: (t) => Effect.sync(() => void tokens.push(t)), superseded: yield* Deferred.make<void>() }
  return { self, tokens }
})

describe("Call: grace and tokens (test clock)", () => {
  it.effect("a call whose client went away ends resumeSeconds later, not a moment before", () =>
    Effect.gen(function*() {
      const call = yield* openCall(60)
      const { self } = yield* client
      yield* call.attach(self)
      yield* call.detach(self)
      yield* TestClock.adjust("59999 millis")
      assert.isFalse(yield* Deferred.isDone(call.ended))
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* Deferred.await(call.ended), "no client resumed the session within 60 s")
    }).pipe(Effect.scoped))

  it.effect("a client attaching within the grace period stops it; the call waits again, in full, after the next cut", () =>
    Effect.gen(function*() {
      const call = yield* openCall(60)
      const first = yield* client
      const second = yield* client
      yield* call.attach(first.self)
      yield* call.detach(first.self)
      yield* TestClock.adjust("59 seconds")
      yield* call.attach(second.self)
      assert.isFalse(yield* Deferred.isDone(first.self.superseded), "it had gone: there is nothing to supersede")
      yield* TestClock.adjust("10 minutes")
      assert.isFalse(yield* Deferred.isDone(call.ended))
      // the earlier client going now changes nothing: it no longer holds the call
      yield* call.detach(first.self)
      yield* TestClock.adjust("10 minutes")
      assert.isFalse(yield* Deferred.isDone(call.ended))
      yield* call.detach(second.self)
      yield* TestClock.adjust("59 seconds")
      assert.isFalse(yield* Deferred.isDone(call.ended))
      yield* TestClock.adjust("1 second")
      assert.isTrue(yield* Deferred.isDone(call.ended))
    }).pipe(Effect.scoped))

  it.effect("a client attaching while another is attached supersedes it", () =>
    Effect.gen(function*() {
      const call = yield* openCall(60)
      const first = yield* client
      const second = yield* client
      yield* call.attach(first.self)
      yield* call.attach(second.self)
      assert.isTrue(yield* Deferred.isDone(first.self.superseded))
      assert.isTrue(call.holds(second.self))
      assert.isFalse(call.holds(first.self))
    }).pipe(Effect.scoped))

  it.effect("with resumeSeconds 0 a client going away ends the call at once", () =>
    Effect.gen(function*() {
      const call = yield* openCall(0)
      const { self } = yield* client
      yield* call.attach(self)
      yield* call.detach(self)
      assert.strictEqual(yield* Deferred.await(call.ended), "client left")
    }).pipe(Effect.scoped))

  it.effect("an attached client gets a fresh token every half of resumeSeconds, each good for twice resumeSeconds; none while away", () =>
    Effect.gen(function*() {
      const call = yield* openCall(60)
      const { self, tokens } = yield* client
      yield* call.attach(self)
      yield* TestClock.adjust("29 seconds")
      assert.strictEqual(tokens.length, 0)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(tokens.length, 1)
      assert.strictEqual(tokens[0]!.expiresAt, 30 + 120)
      assert.deepStrictEqual(Token.verifyResume(secret, tokens[0]!.token, 30_000), { _tag: "ok", sessionId: call.id })
      yield* TestClock.adjust("60 seconds")
      assert.strictEqual(tokens.length, 3)
      yield* call.detach(self)
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual(tokens.length, 3)
    }).pipe(Effect.scoped))
})
