/**
 * Every tool baton can produce gets a parameters schema the providers accept: an object with
 * `properties` for OpenAI (chat completions and Realtime), and for Gemini an OpenAPI-subset
 * schema, with no `parameters` at all when the tool takes none.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { toFunctionDeclarations } from "../../layers/google/GeminiWire.ts"
import { toolsFromOptions } from "../../layers/openai/ChatWire.ts"
import * as ToolSchema from "../../services/ToolSchema.ts"
import { checkToolSchemas } from "../layers/openai/MockChatServer.ts"
import { Agent, Tool } from "../../src/index.ts"

const target = Agent.make({ name: "target", instructions: "t" })
const tools = [
  Tool.handoff("transfer_to_target", () => target),
  Tool.make("no_params", { description: "none", handler: () => Effect.void }),
  Tool.make("optional_fields", { description: "o", parameters: Schema.Struct({ city: Schema.String, units: Schema.optional(Schema.Literals(["c", "f"])) }), handler: () => Effect.void }),
  Tool.make("union_field", { description: "u", parameters: Schema.Struct({ id: Schema.Union([Schema.String, Schema.Number]) }), handler: () => Effect.void }),
  Tool.make("nested", {
    description: "n",
    parameters: Schema.Struct({ who: Schema.Struct({ name: Schema.String, age: Schema.Number }), tags: Schema.Array(Schema.String) }),
    handler: () => Effect.void
  }),
  Tool.make("described", {
    description: "d",
    parameters: Schema.Struct({ date: Schema.String.annotate({ description: "ISO date" }) }),
    handler: () => Effect.void
  })
]

/** OpenAI's rule for a function's parameters: a JSON Schema object with properties. */
const openAiAccepts = (parameters: unknown) => {
  const p = parameters as Record<string, unknown>
  return p["type"] === "object" && typeof p["properties"] === "object" && p["properties"] !== null
}

describe("ToolSchema", () => {
  it("an empty struct becomes an object with no properties, not {not: null}", () => {
    assert.deepStrictEqual(ToolSchema.normalize({ not: { type: "null" } }), { type: "object", properties: {}, additionalProperties: false })
    assert.deepStrictEqual(ToolSchema.normalize({ type: "object", additionalProperties: false }), { type: "object", additionalProperties: false, properties: {} })
    assert.isUndefined(ToolSchema.normalize({ anyOf: [{ type: "string" }, { type: "number" }] }))
  })

  it("every kind of tool goes to chat completions as an object schema with properties", () => {
    const wire = toolsFromOptions(tools.map((t) => t.definition))
    assert.strictEqual(wire.length, tools.length)
    for (const tool of wire) assert.isTrue(openAiAccepts(tool.function.parameters), `${tool.function.name}: ${JSON.stringify(tool.function.parameters)}`)
    const nested = wire.find((t) => t.function.name === "nested")!.function.parameters as any
    assert.deepStrictEqual(nested.required.sort(), ["tags", "who"])
    assert.strictEqual(nested.properties.tags.type, "array")
  })

  it("Gemini gets no parameters for a tool without any, and OBJECT schemas otherwise", () => {
    const declarations = toFunctionDeclarations(tools.map((t) => ({ name: t.name, description: t.description, parameters: ToolSchema.parametersOf(t.definition) })))
    const byName = Object.fromEntries(declarations.map((d) => [d.name, d as { parameters?: any }]))
    assert.isUndefined(byName["transfer_to_target"]!.parameters)
    assert.isUndefined(byName["no_params"]!.parameters)
    assert.strictEqual(byName["optional_fields"]!.parameters.type, "OBJECT")
    assert.deepStrictEqual(byName["optional_fields"]!.parameters.required, ["city"])
    assert.strictEqual(byName["nested"]!.parameters.properties.who.type, "OBJECT")
    for (const d of declarations) assert.notProperty(d.parameters ?? {}, "additionalProperties")
  })

  it("a tool whose parameters are not an object is refused when it is defined", () => {
    assert.throws(
      () => Tool.make("bad", { description: "b", parameters: Schema.Union([Schema.String, Schema.Number]) as any, handler: () => Effect.void }),
      /must be an object schema/
    )
  })
})

describe("the strict mocks refuse what the providers refuse", () => {
  it("chat completions: a non-object parameters schema gets OpenAI's 400 shape", () => {
    const refusal = checkToolSchemas({ tools: [{ type: "function", function: { name: "t", parameters: { not: { type: "null" } } } }] })
    assert.deepStrictEqual(refusal, {
      message: "Invalid schema for function 't': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'.",
      param: "tools[0].function.parameters"
    })
    const wire = toolsFromOptions(tools.map((t) => t.definition))
    assert.isUndefined(checkToolSchemas({ tools: wire }))
  })
})
