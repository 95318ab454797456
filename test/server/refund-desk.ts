/**
 * The approval tests' service agent: a desk whose `refund` tool needs approval, the model that
 * calls it on "refund" and reads its output back, and the amounts actually refunded.
 */
import { Effect, Schema } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, Tool } from "../../src/index.ts"

export const refunds: Array<number> = []

export const desk = Agent.make({
  name: "desk",
  instructions: "You give refunds.",
  tools: [
    Tool.make("refund", {
      description: "Refunds an amount",
      parameters: Schema.Struct({ amount: Schema.Number }),
      needsApproval: true,
      handler: ({ amount }) => Effect.sync(() => refunds.push(amount)).pipe(Effect.as(`refunded ${amount}`))
    })
  ]
})

export const model = ScriptedModel.layer([
  { when: { user: "refund" }, reply: { toolCalls: [{ name: "refund", arguments: { amount: 20 } }] } },
  { when: { toolOutput: /./ }, reply: (r) => ({ text: `Result: ${r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join("") : ""}` }) }
])
