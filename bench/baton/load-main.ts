/**
 * The many-sessions load in a process of its own, so it can run under other V8 heap flags than
 * the bench's (bench/run.ts starts it with a smaller young generation). Prints the LoadResult
 * as JSON on stdout.
 */
import { Effect } from "effect"
import { benchLoad } from "./load.ts"
import { gcNow } from "./stats.ts"

await gcNow()
const result = await Effect.runPromise(benchLoad)
process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0))
