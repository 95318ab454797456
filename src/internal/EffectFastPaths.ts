/**
 * Every place baton leans on how effect 4.1 represents or runs things, rather than on what its
 * API promises: the fast paths that keep a handoff's window short (bench/README.md). Each
 * function says what it assumes; test/src/internal/EffectFastPaths.test.ts pins each assumption,
 * so an effect upgrade that changes one breaks that test first, with a name saying which, and
 * the callers (Reply.ts, ToolBatch.ts, ToolCall.ts, Supervisor.ts, services/ModelParts.ts) need
 * not change.
 *
 * Two kinds of assumption: some only cost speed when they stop holding (a fast path not taken:
 * `doneExit`, `isVoid`, `tracingOff`, `wakeTakerNow`); the others decide correctness (a service
 * seen or not, a model that still works: `provideOnFiber`, `forkBodyWith`, `withAttached`,
 * `currentRef`).
 */
import { type Context, Effect, Exit, Fiber, Queue, Tracer } from "effect"

/**
 * `effect` as an `Exit` when it is one: already done, nothing to run.
 *
 * Assumes: an `Exit` is an `Effect` that yields its value or failure when run (so one may stand
 * for the other), and `Effect.succeed`, `Effect.fail`, `Effect.void` and `Effect.die` return
 * `Exit`s (so most tool handlers' results and decoded arguments are settled on the spot, with no
 * fiber). If the second stops holding, calls take the slower, forked path: still correct.
 */
export const doneExit = <A, E, R>(effect: Effect.Effect<A, E, R>): Exit.Exit<A, E> | undefined =>
  Exit.isExit(effect) ? (effect as Exit.Exit<A, E>) : undefined

/**
 * Whether `effect` is `Effect.void` itself: a handler with nothing to run returns it, and its
 * caller skips the interpreter step running it would cost (a streamed part, a text output that
 * writes at once).
 *
 * Assumes: `Effect.void` is one shared value (each read of it is the same object). If not, every
 * such effect is run: still correct, slower.
 */
export const isVoid = (effect: Effect.Effect<unknown, unknown, unknown>): boolean => effect === Effect.void

/**
 * Runs `body` with `context` as the fiber's services from this step on, and on the step it ends
 * (success, failure or interruption) restores the services the fiber had and runs `after`:
 * `Effect.provideContext` would cost a step of its own at each end. To be called on a step of
 * `fiber` (inside `Effect.withFiber`).
 *
 * Assumes: `fiber.setContext` replaces the services every later step of the fiber reads (service
 * lookups, references, what a fork inherits) at once, and nothing else of effect restores them
 * (the restore here is the only one). If effect copied the services per step, `body` would not
 * see `context`: the model call would lose its `ModelCall` info.
 */
export const provideOnFiber = <A, E, R, E2>(
  fiber: Fiber.Fiber<unknown, unknown>,
  context: Context.Context<never>,
  body: Effect.Effect<A, E, R>,
  after: (exit: Exit.Exit<A, E>) => Effect.Effect<void, E2>
): Effect.Effect<A, E | E2, R> => {
  const outer = fiber.context
  fiber.setContext(context)
  return Effect.onExit(body, (exit) => {
    fiber.setContext(outer)
    return after(exit)
  })
}

/**
 * `effect` as the whole body of a fiber about to be forked, with `f`'s services: set on the fiber
 * as it starts and never restored, since the fiber ends with the body (`Effect.updateContext`
 * takes two more steps to restore them). Only for a fork's outermost effect.
 *
 * Assumes what `provideOnFiber` does, and that a forked fiber's first step is the body's (the
 * services are set before the body reads any).
 */
export const forkBodyWith = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  f: (outer: Context.Context<never>) => Context.Context<never>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    fiber.setContext(f(fiber.context))
    return effect
  })

/**
 * Whether no tracing backend is installed on `fiber`: its tracer is effect's own `nativeTracer`,
 * whose spans nothing reads, so a span need not be built (about 5 µs of a handoff).
 *
 * Assumes: `Tracer.Tracer` is a reference whose default is `Tracer.nativeTracer` itself, and any
 * backend replaces it. If the default became another value, spans are built again: slower only.
 */
export const tracingOff = (fiber: Fiber.Fiber<unknown, unknown>): boolean => fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer

/**
 * A copy of `value` (a service's value, such as a `LanguageModel`) that also carries `extras`,
 * under keys of baton's own, read back with `attached`: a capability the value's maker offers
 * (a model's own part stream) without wrapping the service.
 *
 * Assumes: the value is an object whose own enumerable properties are all its state, with methods
 * that do not depend on its identity (`LanguageModel.make` builds it so), so a copy with the same
 * prototype behaves as the original. If effect made it a class with private state, the copy would
 * break (the test calls a copied `LanguageModel`).
 */
export const withAttached = <T extends object>(value: T, extras: Readonly<Record<symbol, unknown>>): T =>
  Object.assign(Object.create(Object.getPrototypeOf(value)), value, extras)

/** What `withAttached` put under `key` on `value`, if anything. */
export const attached = <A>(value: object, key: symbol): A | undefined => (value as Record<symbol, A | undefined>)[key]

/**
 * Has the fiber waiting in `Queue.take(queue)` (the supervisor's loop) take what was just offered
 * and run on inside this call, on the caller's step, instead of on the scheduler's next turn: a
 * batch handing the floor on is answered without waiting a turn. The order of messages does not
 * change.
 *
 * Assumes: `Queue.flushUnsafe` releases the queue's takers at once, and a fiber suspended in
 * `Queue.take` that is released then resumes synchronously, before `flushUnsafe` returns. If it
 * resumed on the next turn instead, the message is handled then: still correct, a handoff's
 * window a turn longer.
 */
export const wakeTakerNow = <A, E>(queue: Queue.Queue<A, E>): void => Queue.flushUnsafe(queue)

/**
 * The value of `ref` on the fiber running the caller's step, read without an effect (a tool call
 * is set up synchronously on its actor's step).
 *
 * Assumes: `Fiber.getCurrent()` is the fiber whose step is running while synchronous code runs
 * inside an effect (`Effect.sync`, a `map`), with the references that step sees. If it were
 * not set there, this gives the reference's default: a test's mock tool would not be used.
 */
export const currentRef = <A>(ref: Context.Reference<A>): A => {
  const fiber = Fiber.getCurrent()
  return fiber ? fiber.getRef(ref) : ref.defaultValue()
}
