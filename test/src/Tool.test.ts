import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import { Tool as AiTool } from "effect/ai"
import { Agent, Tool } from "../../src/index.ts"

const order = Tool.make("order", {
  description: "Order an item",
  parameters: Schema.Struct({
    item: Schema.String.annotate({ description: "What to order" }),
    quantity: Schema.Int,
    note: Schema.optional(Schema.String)
  }),
  handler: ({ item, quantity }) => Effect.succeed(`${quantity} ${item}`)
})

describe("Tool", () => {
  it("gives the model the JSON Schema of its parameters", () => {
    const schema = AiTool.getJsonSchema(order.definition) as { properties: Record<string, { description?: string; type?: string }>; required: Array<string> }
    assert.deepStrictEqual(Object.keys(schema.properties), ["item", "quantity", "note"])
    assert.strictEqual(schema.properties["item"]!.description, "What to order")
    assert.strictEqual(schema.properties["quantity"]!.type, "integer")
    assert.deepStrictEqual(schema.required, ["item", "quantity"])
  })

  it.effect("decodes arguments with the codec the JSON Schema describes", () =>
    Effect.gen(function*() {
      const ok = yield* Tool.decodeArguments(order, "{\"item\":\"pear\",\"quantity\":2,\"note\":null}")
      assert.strictEqual(ok.item, "pear")
      assert.strictEqual(ok.quantity, 2)
      assert.isUndefined(ok.note)
      const bad = yield* Effect.exit(Tool.decodeArguments(order, "{\"item\":3,\"quantity\":1.5}"))
      assert.isTrue(Exit.isFailure(bad))
      const message = Exit.isFailure(bad) ? String(bad.cause) : ""
      assert.include(message, "item")
      assert.include(message, "quantity")
      const notJson = yield* Effect.flip(Tool.decodeArguments(order, "{\"item\":"))
      assert.include(notJson.message, "not valid JSON")
      assert.deepStrictEqual(yield* Tool.decodeArguments(Tool.make("noop", { description: "", handler: () => Effect.void }), ""), {})
    }))

  it.effect("a tool without parameters takes any object as {} and refuses anything else; a schema decodes the same on every call (its decoder is kept)", () =>
    Effect.gen(function*() {
      const noop = Tool.make("noop", { description: "", handler: () => Effect.void })
      assert.deepStrictEqual(yield* Tool.decodeArguments(noop, "{\"stray\":1}"), {})
      const array = yield* Effect.flip(Tool.decodeArguments(noop, "[1]"))
      assert.include(array.message, "Invalid arguments for noop")
      const text = yield* Effect.flip(Tool.decodeArguments(noop, "\"hi\""))
      assert.include(text.message, "Invalid arguments for noop")
      // the second call goes through the kept decoder and decides the same
      for (let i = 0; i < 2; i++) {
        assert.strictEqual((yield* Tool.decodeArguments(order, "{\"item\":\"fig\",\"quantity\":1}")).item, "fig")
        assert.isTrue(Exit.isFailure(yield* Effect.exit(Tool.decodeArguments(order, "{\"item\":\"fig\"}"))))
      }
    }))

  it("rejects tool names a model API would reject, and duplicate tools", () => {
    assert.throws(() => Tool.make("has space", { description: "", handler: () => Effect.void }), /must be/)
    assert.throws(() => Agent.make({ name: "x", instructions: "", tools: [order, order] }), /two tools named "order"/)
  })

  it("renders values for the model", () => {
    assert.strictEqual(Tool.render("text"), "text")
    assert.strictEqual(Tool.render({ a: 1 }), "{\"a\":1}")
    assert.strictEqual(Tool.render(undefined), "done")
  })
})
