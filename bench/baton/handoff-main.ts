/**
 * One round of the handoff benchmark in a process of its own (as the agents-js side runs), so
 * that the rounds of `npm run bench` alternate baton and agents-js in fresh processes and each
 * round starts as cold as the other side's. Prints the HandoffResult as JSON on stdout.
 * `EFFECT_WARMUP=<iterations>` first runs generic Effect work (bench/baton/effect-warmup.ts);
 * only the analysis in bench/README sets it.
 */
import { Effect } from "effect"
import { effectWarmup } from "./effect-warmup.ts"
import { benchHandoff } from "./handoff.ts"
import { envInt, printResultOf } from "./stats.ts"

const warmup = envInt("EFFECT_WARMUP", 0)
if (warmup > 0) await Effect.runPromise(effectWarmup(warmup))
await printResultOf(benchHandoff)
