/**
 * One round of the handoff benchmark in a process of its own (as the agents-js side runs), so
 * that the rounds of `npm run bench` alternate baton and agents-js in fresh processes and each
 * round starts as cold as the other side's. Prints the HandoffResult as JSON on stdout.
 */
import { benchHandoff } from "./handoff.ts"
import { printResultOf } from "./stats.ts"

await printResultOf(benchHandoff)
