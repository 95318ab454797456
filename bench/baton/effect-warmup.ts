/**
 * Generic Effect work, none of it baton's: maps, flatMaps, finalizers, forks and scopes, as any
 * Effect program runs them. `EFFECT_WARMUP=<iterations>` runs it before a handoff round
 * (bench/baton/handoff-main.ts) to measure how much of baton's cold figure is V8 optimizing
 * Effect's own runtime rather than baton's code: a service that has served anything on Effect
 * has done this long before its first handoff. `npm run bench` never sets it.
 */
import { Effect } from "effect"

export const effectWarmup = (iterations: number): Effect.Effect<number> =>
  Effect.gen(function*() {
    let sum = 0
    for (let i = 0; i < iterations; i++) {
      sum += yield* Effect.sync(() => i).pipe(
        Effect.map((x) => x + 1),
        Effect.flatMap((x) => Effect.succeed(x)),
        Effect.onExit(() => Effect.void)
      )
      yield* Effect.forkChild(Effect.succeed(1), { startImmediately: true })
      yield* Effect.scoped(Effect.addFinalizer(() => Effect.void))
    }
    return sum
  })
