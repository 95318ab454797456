/**
 * Rule 12: bad input is an answer, not a crash. The model gets an error output it can act on,
 * the session goes on, nothing in history is lost.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

class InventoryDown extends Schema.TaggedError<InventoryDown>()("InventoryDown", { message: Schema.String }) {}

const agent = Agent.make({
  name: "shop",
  instructions: "You run a shop.",
  tools: [
    Tool.make("order", {
      description: "Order an item",
      parameters: Schema.Struct({ item: Schema.String, quantity: Schema.Int.check(Schema.isGreaterThan(0)) }),
      handler: ({ item, quantity }) => Effect.succeed(`ordered ${quantity} x ${item}`)
    }),
    Tool.make("check_stock", {
      description: "Check stock",
      handler: () => Effect.fail(new InventoryDown({ message: "inventory service unavailable" }))
    }),
    Tool.make("explode", {
      description: "A tool with a bug",
      handler: () => {
        throw new Error("bug in the tool")
      }
    }),
    Tool.make("die", { description: "A tool that dies", handler: () => Effect.die("unexpected") })
  ]
})

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "bad args" }, reply: { toolCalls: [{ name: "order", arguments: { item: "apples", quantity: -2 } }] } },
  { when: { user: "broken json" }, reply: { toolCalls: [{ name: "order", arguments: "{\"item\": \"apples\", quant" }] } },
  { when: { user: "unknown tool" }, reply: { toolCalls: [{ name: "refund_everything", arguments: {} }] } },
  { when: { user: "failing tools" }, reply: { toolCalls: [{ name: "check_stock" }, { name: "explode" }, { name: "die" }] } },
  { when: { user: "explode alone" }, reply: { toolCalls: [{ name: "explode" }] } },
  { when: { user: "check stock alone" }, reply: { toolCalls: [{ name: "check_stock" }] } },
  { when: { user: "model error" }, reply: { text: "Let me", error: "upstream overloaded" } },
  { when: { user: "good order" }, reply: { toolCalls: [{ name: "order", arguments: { item: "pears", quantity: 3 } }] } },
  { when: { toolOutput: "Invalid arguments" }, reply: { text: "The quantity must be positive." } },
  { when: { toolOutput: "not valid JSON" }, reply: { text: "Let me try that again." } },
  { when: { toolOutput: "Unknown tool" }, reply: { text: "I can't do refunds." } },
  { when: { toolOutput: "unavailable" }, reply: { text: "Some systems are down." } },
  { when: { toolOutput: "explode failed unexpectedly" }, reply: { text: "That tool is broken." } },
  { when: { toolOutput: "ordered 3 x pears" }, reply: { text: "Three pears ordered." } }
]

describe("rule 12: bad input is an answer, not a crash", () => {
  it.effect("rule 12: tool arguments that fail their Schema get an error output the model acts on", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent })
      const result = yield* session.run("bad args")
      const output = result.expect.containsFunctionCallOutput({ name: "order", isError: true })
      assert.include(output.output, "Invalid arguments for order")
      assert.include(output.output, "quantity")
      result.expect.containsMessage({ role: "assistant", content: "The quantity must be positive." })
      // The model saw the error as the call's output.
      const followUp = model.requests.at(-1)!
      assert.isTrue(followUp.last.kind === "tool" && followUp.last.outputs[0]!.isError)
      const broken = yield* session.run("broken json")
      broken.expect.containsFunctionCallOutput({ name: "order", isError: true, output: "not valid JSON" })
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("rule 12: an unknown tool name is answered with the tools that exist", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent })
      const result = yield* session.run("unknown tool")
      const output = result.expect.containsFunctionCallOutput({ name: "refund_everything", isError: true })
      assert.include(output.output, "Unknown tool \"refund_everything\"")
      assert.include(output.output, "order, check_stock, explode, die")
      result.expect.containsMessage({ content: "I can't do refunds." })
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("rule 12: a tool that fails, throws or dies gives an error output and an error event", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent })
      const result = yield* session.run("failing tools")
      result.expect.containsFunctionCallOutput({ name: "check_stock", isError: true, output: "InventoryDown: inventory service unavailable" })
      result.expect.containsFunctionCallOutput({ name: "explode", isError: true, output: "explode failed unexpectedly." })
      result.expect.containsFunctionCallOutput({ name: "die", isError: true, output: "die failed unexpectedly." })
      const errors = result.sessionEvents.filter((e) => e.type === "error")
      assert.strictEqual(errors.length, 3)
      assert.isTrue(errors.every((e) => e.type === "error" && e.source === "tool" && e.recoverable))
      assert.include(errors.map((e) => (e.type === "error" ? e.message : "")).join("\n"), "bug in the tool")
      result.expect.containsMessage({ content: "Some systems are down." })
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  // A lone call whose handler is done as it returns settles without a fiber of its own: a throw
  // or a failure there is the same answer as in a batch.
  it.effect("rule 12: a lone tool call that throws or fails as it is called gets the same error output and event", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent })
      const thrown = yield* session.run("explode alone")
      thrown.expect.containsFunctionCallOutput({ name: "explode", isError: true, output: "explode failed unexpectedly." })
      thrown.expect.containsMessage({ content: "That tool is broken." })
      const thrownErrors = thrown.sessionEvents.filter((e) => e.type === "error")
      assert.strictEqual(thrownErrors.length, 1)
      assert.include(thrownErrors[0]!.type === "error" ? thrownErrors[0]!.message : "", "bug in the tool")
      const failed = yield* session.run("check stock alone")
      failed.expect.containsFunctionCallOutput({ name: "check_stock", isError: true, output: "InventoryDown: inventory service unavailable" })
      failed.expect.containsMessage({ content: "Some systems are down." })
      assert.deepStrictEqual(failed.sessionEvents.filter((e) => e.type === "error").map((e) => e.type === "error" && e.source), ["tool"])
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("rule 12: a model error ends the reply, keeps what was said, and the session goes on", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent })
      yield* session.run("bad args")
      const failed = yield* session.run("model error")
      const error = failed.sessionEvents.find((e) => e.type === "error")
      assert.isTrue(error?.type === "error" && error.source === "model" && error.message.includes("upstream overloaded"))
      failed.expect.containsMessage({ role: "assistant", content: "Let me" })
      const after = yield* session.run("good order")
      after.expect.containsMessage({ content: "Three pears ordered." })
      const history = yield* session.history
      // Nothing was lost: every turn is still there, in order.
      const users = history.items.flatMap((i) => (i._tag === "Message" && i.role === "user" ? [i.text] : []))
      assert.deepStrictEqual(users, ["bad args", "model error", "good order"])
      assertEveryCallAnswered(history)
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))
})
