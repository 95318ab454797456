/**
 * What baton assumes of effect's internals (src/internal/EffectFastPaths.ts), one test per
 * assumption: after an effect upgrade, a failure here names the fast path that no longer holds,
 * before any rule test fails for a reason that is hard to trace.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Queue, Stream, Tracer } from "effect"
import { LanguageModel } from "effect/ai"
import * as FastPaths from "../../../src/internal/EffectFastPaths.ts"

const Mood = Context.Reference<string>("test/Mood", { defaultValue: () => "calm" })

class Greeting extends Context.Service<Greeting, string>()("test/Greeting") {}

const greeting = Effect.serviceOption(Greeting).pipe(Effect.map((option) => option._tag === "Some" ? option.value : "none"))

describe("effect fast paths", () => {
  it.effect("succeed, fail, void and die are Exits, and an Exit run as an effect yields its outcome", () =>
    Effect.gen(function*() {
      const ok = FastPaths.doneExit(Effect.succeed(1))
      assert.isTrue(ok !== undefined && Exit.isSuccess(ok) && ok.value === 1)
      const failed = FastPaths.doneExit(Effect.fail("no"))
      assert.isTrue(failed !== undefined && Exit.isFailure(failed))
      assert.isDefined(FastPaths.doneExit(Effect.void))
      assert.isDefined(FastPaths.doneExit(Effect.die("boom")))
      // Standing for the effect: running the Exit gives the same outcome.
      assert.strictEqual(yield* ok!, 1)
      assert.deepStrictEqual(yield* Effect.exit(failed!), Exit.fail("no"))
    }))

  it("an effect with work to run is not taken for done", () => {
    assert.isUndefined(FastPaths.doneExit(Effect.sync(() => 1)))
    assert.isUndefined(FastPaths.doneExit(Effect.map(Effect.succeed(1), (n) => n + 1)))
    assert.isUndefined(FastPaths.doneExit(Effect.suspend(() => Effect.succeed(1))))
  })

  it("Effect.void is one shared value, and nothing else is taken for it", () => {
    assert.isTrue(FastPaths.isVoid(Effect.void))
    assert.isFalse(FastPaths.isVoid(Effect.succeed(undefined as void).pipe(Effect.map(() => undefined))))
    assert.isFalse(FastPaths.isVoid(Effect.sync(() => {})))
  })

  it.effect("provideOnFiber: the body sees the services from its first step; the fiber has its own back on every ending", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const withGreeting = (body: Effect.Effect<void, string>) =>
        Effect.withFiber((fiber) =>
          FastPaths.provideOnFiber(fiber, Context.add(fiber.context, Greeting, "hello"), body, () =>
            Effect.map(greeting, (outside) => {
              // `after` runs once the services are restored.
              seen.push(`after:${outside}`)
            }))
        )
      const body = Effect.flatMap(greeting, (inside) => Effect.sync(() => void seen.push(`in:${inside}`)))
      yield* withGreeting(Effect.andThen(Effect.yieldNow, body))
      seen.push(`out:${yield* greeting}`)
      // A failure and an interruption restore them too.
      yield* Effect.exit(withGreeting(Effect.andThen(body, Effect.fail("no"))))
      seen.push(`out:${yield* greeting}`)
      const fiber = yield* Effect.forkChild(withGreeting(Effect.andThen(body, Effect.never)))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(seen, ["in:hello", "after:none", "out:none", "in:hello", "after:none", "out:none", "in:hello", "after:none"])
    }))

  it.effect("provideOnFiber: a fiber forked by the body inherits the services", () =>
    Effect.gen(function*() {
      const child = yield* Effect.withFiber((fiber) =>
        FastPaths.provideOnFiber(fiber, Context.add(fiber.context, Greeting, "hello"), Effect.flatMap(Effect.forkChild(greeting), Fiber.join), () => Effect.void)
      )
      assert.strictEqual(child, "hello")
    }))

  it.effect("forkBodyWith: a forked body sees its services from its first step", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(FastPaths.forkBodyWith(greeting, (outer) => Context.add(outer, Greeting, "forked")), { startImmediately: true })
      assert.strictEqual(yield* Fiber.join(fiber), "forked")
      // The forking fiber's own services are untouched.
      assert.strictEqual(yield* greeting, "none")
    }))

  it.effect("with no tracer installed the fiber's tracer is effect's native one; an installed tracer replaces it", () =>
    Effect.gen(function*() {
      assert.isTrue(yield* Effect.withFiber((fiber) => Effect.succeed(FastPaths.tracingOff(fiber))))
      const recording = Tracer.make({ span: (options) => Tracer.nativeTracer.span(options) })
      const traced = yield* Effect.withFiber((fiber) => Effect.succeed(FastPaths.tracingOff(fiber))).pipe(Effect.withTracer(recording))
      assert.isFalse(traced)
    }))

  it.effect("a LanguageModel copied with attached values keeps working and carries them; the original is untouched", () =>
    Effect.gen(function*() {
      const key = Symbol.for("test/attached")
      const made = yield* LanguageModel.make({
        streamText: () => Stream.fromIterable([{ type: "text-delta", id: "t", delta: "hi" } as const]),
        generateText: () => Effect.succeed([{ type: "text", text: "hello" }])
      })
      const copy = FastPaths.withAttached(made, { [key]: "extra" })
      assert.strictEqual(FastPaths.attached<string>(copy, key), "extra")
      assert.isUndefined(FastPaths.attached(made, key))
      assert.strictEqual(Object.getPrototypeOf(copy), Object.getPrototypeOf(made))
      const response = yield* copy.generateText({ prompt: "hi" })
      assert.strictEqual(response.text, "hello")
    }))
  it.effect("a taker woken by wakeTakerNow has taken the message before the call returns; without it, only on a later turn", () =>
    Effect.gen(function*() {
      const queue = yield* Queue.unbounded<number>()
      const taken: Array<number> = []
      const taker = yield* Effect.forkChild(Effect.forever(Effect.map(Queue.take(queue), (n) => void taken.push(n))))
      yield* Effect.yieldNow
      Queue.offerUnsafe(queue, 1)
      FastPaths.wakeTakerNow(queue)
      assert.deepStrictEqual(taken, [1])
      // The contrast that makes it worth having: a plain offer is taken on a later turn.
      Queue.offerUnsafe(queue, 2)
      assert.deepStrictEqual(taken, [1])
      for (let turn = 0; turn < 10 && taken.length < 2; turn++) yield* Effect.yieldNow
      assert.deepStrictEqual(taken, [1, 2])
      yield* Fiber.interrupt(taker)
    }))

  it.effect("currentRef reads the reference the running step sees, not its default", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* Effect.sync(() => FastPaths.currentRef(Mood)), "calm")
      const provided = yield* Effect.sync(() => FastPaths.currentRef(Mood)).pipe(Effect.provideService(Mood, "cheerful"))
      assert.strictEqual(provided, "cheerful")
      // Outside any fiber: the default.
      assert.strictEqual(FastPaths.currentRef(Mood), "calm")
    }))
})
