/**
 * The long session in a process of its own: run after the other sections in the bench's
 * process, its last turns met the collections of their leftovers (0.126 ms against 0.041 alone,
 * 2026-11-25). Prints the LongSessionResult as JSON on stdout.
 */
import { Effect } from "effect"
import { benchLongSession } from "./load.ts"
import { gcNow } from "./stats.ts"

await gcNow()
const result = await Effect.runPromise(benchLongSession)
process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0))
