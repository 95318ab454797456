/**
 * The long session in a process of its own: run after the other sections in the bench's
 * process, its last turns met the collections of their leftovers (0.126 ms against 0.041 alone,
 * 2026-11-25). Prints the LongSessionResult as JSON on stdout.
 */
import { benchLongSession } from "./load.ts"
import { printResultOf } from "./stats.ts"

await printResultOf(benchLongSession)
