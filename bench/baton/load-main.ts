/**
 * The many-sessions load in a process of its own, so it can run under other V8 heap flags than
 * the bench's (bench/run.ts starts it with a smaller young generation). Prints the LoadResult
 * as JSON on stdout.
 */
import { benchLoad } from "./load.ts"
import { printResultOf } from "./stats.ts"

await printResultOf(benchLoad)
