/**
 * One round of the handoff benchmark in a process of its own (as the agents-js side runs), so
 * that the rounds of `npm run bench` alternate baton and agents-js in fresh processes and each
 * round starts as cold as the other side's. Prints the HandoffResult as JSON on stdout.
 */
import { Effect } from "effect"
import { benchHandoff } from "./handoff.ts"
import { gcNow } from "./stats.ts"

await gcNow()
const result = await Effect.runPromise(benchHandoff)
process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0))
