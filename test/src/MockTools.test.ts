/**
 * Mock tools (issue 37): a test replaces a tool's handler without rebuilding the agent; the mock
 * is typed by the tool and looked up as each call starts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { drive } from "../../layers/testing/Drive.ts"
import { MockTools, mockTools } from "../../layers/testing/index.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Handoff, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

let realCalls = 0
const lookupOrder = Tool.make("lookup_order", {
  description: "Where an order is",
  parameters: Schema.Struct({ id: Schema.Number }),
  handler: ({ id }) => Effect.sync(() => (realCalls++, { id, status: "in the warehouse" }))
})
const cancelOrder = Tool.make("cancel_order", {
  description: "Cancel an order",
  parameters: Schema.Struct({ id: Schema.Number }),
  handler: ({ id }) => Effect.succeed(`order ${id} cancelled for real`)
})
const billing = Agent.make({
  name: "billing",
  instructions: "Billing.",
  tools: [Tool.make("refund", { description: "Refund", handler: () => Effect.succeed("refunded for real") })]
})
const support = Agent.make({
  name: "support",
  instructions: "Orders.",
  tools: [lookupOrder, cancelOrder, Tool.handoff("to_billing", () => billing)]
})

const model = ScriptedModel.layer([
  { when: { user: "where" }, reply: { toolCalls: [{ name: "lookup_order", arguments: { id: 42 } }] } },
  { when: { user: "both" }, reply: { toolCalls: [{ name: "lookup_order", arguments: { id: 7 } }, { name: "cancel_order", arguments: { id: 7 } }] } },
  { when: { user: "refund" }, reply: { toolCalls: [{ name: "to_billing" }] } },
  { when: { agent: "billing", toolOutput: "transfer" }, reply: { toolCalls: [{ name: "refund" }] } },
  { when: { toolOutput: /./ }, reply: (r) => ({ text: r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" | ") : "" }) }
])

const run = (input: string) =>
  Effect.gen(function*() {
    const session = yield* AgentSession.start({ agent: support })
    const result = yield* drive(session.run(input))
    assertEveryCallAnswered(yield* session.history)
    return result
  })

describe("MockTools", () => {
  it.effect("mock tools: the mock answers the call with the decoded parameters; the tool's handler is not run", () =>
    Effect.gen(function*() {
      realCalls = 0
      const seen: Array<number> = []
      const result = yield* run("where is order 42?").pipe(
        Effect.provide(mockTools(support, {
          lookup_order: ({ id }) => Effect.sync(() => (seen.push(id), { id, status: "shipped" }))
        }))
      )
      assert.deepStrictEqual(seen, [42])
      assert.strictEqual(realCalls, 0)
      result.expect.containsFunctionCallOutput({ name: "lookup_order", output: "{\"id\":42,\"status\":\"shipped\"}", isError: false })
    }).pipe(Effect.provide(model)))

  it.effect("mock tools: the same agent value without the layer runs its own handler (the agent is not rebuilt)", () =>
    Effect.gen(function*() {
      realCalls = 0
      yield* run("where is order 42?").pipe(Effect.provide(mockTools(support, { lookup_order: () => Effect.succeed({ id: 0, status: "x" }) })))
      const result = yield* run("where is order 42?")
      assert.strictEqual(realCalls, 1)
      result.expect.containsFunctionCallOutput({ name: "lookup_order", output: /in the warehouse/ })
    }).pipe(Effect.provide(model)))

  it.effect("mock tools: a tool the mock does not name keeps its handler, in the same batch", () =>
    Effect.gen(function*() {
      const result = yield* run("do both").pipe(
        Effect.provide(mockTools(support, { lookup_order: ({ id }) => Effect.succeed({ id, status: "mocked" }) }))
      )
      result.expect.containsFunctionCallOutput({ name: "lookup_order", output: /mocked/ })
      result.expect.containsFunctionCallOutput({ name: "cancel_order", output: "order 7 cancelled for real" })
    }).pipe(Effect.provide(model)))

  it.effect("mock tools: a mock that takes time runs in the call's fiber and can fail like a handler", () =>
    Effect.gen(function*() {
      const result = yield* run("where is order 42?").pipe(
        Effect.provide(mockTools(support, {
          lookup_order: () => Effect.sleep("2 seconds").pipe(Effect.andThen(Effect.fail(new Tool.ToolError({ message: "order system down" }))))
        }))
      )
      result.expect.containsFunctionCallOutput({ name: "lookup_order", output: "order system down", isError: true })
    }).pipe(Effect.provide(model)))

  it.effect("mock tools: layers for two agents nest; each agent's calls see its own mocks", () =>
    Effect.gen(function*() {
      const result = yield* run("I want a refund").pipe(
        Effect.provide(mockTools(billing, { refund: () => Effect.succeed("refund mocked") })),
        Effect.provide(mockTools(support, { to_billing: () => Effect.succeed(Handoff.to(billing, { message: "Mocked transfer." })) }))
      )
      result.expect.containsFunctionCallOutput({ name: "to_billing", output: "Mocked transfer.", status: "handoff" })
      result.expect.containsAgentHandoff({ to: "billing" })
      result.expect.containsFunctionCallOutput({ name: "refund", output: "refund mocked" })
    }).pipe(Effect.provide(model)))

  it("mock tools: a name the agent has no tool for is refused when the layer is made (and is a type error)", () => {
    assert.throws(
      // @ts-expect-error: support has no tool named lookup_ordr
      () => mockTools(support, { lookup_ordr: () => Effect.succeed("x") }),
      /agent "support" has no tool named "lookup_ordr" \(its tools: lookup_order, cancel_order, to_billing\)/
    )
    // An agent typed without its tools takes any name in the types, and is checked at run time.
    const annotated: Agent.Agent = support
    assert.throws(() => MockTools.layer(annotated, { nope: () => Effect.void }), /has no tool named "nope"/)
  })

  it("mock tools: a mock's parameters and result are the tool's (type checks)", () => {
    MockTools.layer(support, {
      lookup_order: ({ id }) => Effect.succeed({ id: id + 1, status: "typed" }),
      cancel_order: ({ id }) => Effect.succeed(`cancelled ${id.toFixed(0)}`)
    })
    // @ts-expect-error: lookup_order's parameters have no `name`
    MockTools.layer(support, { lookup_order: ({ name }) => Effect.succeed({ id: 1, status: name }) })
    // @ts-expect-error: lookup_order succeeds with { id, status }, not a number
    MockTools.layer(support, { lookup_order: () => Effect.succeed(42) })
  })
})
