/**
 * A service slot is one resource from admission to the session's end (issue 33, item 9): however
 * the upgrade or the session ends, interrupted included, the slot comes back exactly once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as Registry from "../../server/Registry.ts"

const steps = <S>(upgrade: Effect.Effect<S, string>, serve: (socket: S) => Effect.Effect<string> = () => Effect.succeed("served")) => ({
  refused: (why: "full" | "draining") => Effect.succeed(`refused: ${why}`),
  upgrade,
  serve
})

describe("Server slot", () => {
  it.effect("interrupted between admission and the upgrade, the slot count returns", () =>
    Effect.gen(function*() {
      const registry = yield* Registry.make(1)
      const upgrading = yield* Deferred.make<void>()
      const fiber = yield* Registry.session(registry, steps(Effect.andThen(Deferred.succeed(upgrading, undefined), Effect.never))).pipe(Effect.forkChild)
      yield* Deferred.await(upgrading)
      assert.strictEqual(registry.open(), 1)
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(registry.open(), 0)
      assert.strictEqual(yield* Registry.session(registry, steps(Effect.succeed("socket"))), "served")
    }))

  it.effect("a failed upgrade, a refused one and a finished session each leave the count where it was", () =>
    Effect.gen(function*() {
      const registry = yield* Registry.make(1)
      assert.strictEqual(yield* Registry.session(registry, steps(Effect.fail("no upgrade"))).pipe(Effect.flip), "no upgrade")
      assert.strictEqual(registry.open(), 0)
      const holding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const held = yield* Registry.session(registry, steps(Effect.succeed("socket"), () =>
        Effect.andThen(Deferred.succeed(holding, undefined), Deferred.await(release)).pipe(Effect.as("served")))).pipe(Effect.forkChild)
      yield* Deferred.await(holding)
      assert.strictEqual(yield* Registry.session(registry, steps(Effect.succeed("socket"))), "refused: full")
      assert.strictEqual(registry.open(), 1)
      yield* Deferred.succeed(release, undefined)
      assert.strictEqual(yield* Fiber.join(held), "served")
      assert.strictEqual(registry.open(), 0)
      assert.strictEqual(registry.total(), 2)
    }))
})
