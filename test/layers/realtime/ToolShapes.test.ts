/**
 * Issue 12, part 1: every kind of tool baton can produce reaches each realtime provider in a form
 * the provider accepts, checked against the mocks (which validate tool schemas by the providers'
 * own rules and refuse a bad one with the provider's error): no parameters, optional fields,
 * unions, nested structs, arrays, arrays of structs, string and number enums, nullable fields and descriptions, at
 * connect and in a later update (a handoff to an agent with other tools).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Schema } from "effect"
import { GeminiLive } from "../../../layers/google/GeminiLive.ts"
import { OpenAiRealtime } from "../../../layers/openai/OpenAiRealtime.ts"
import type { RealtimeTool } from "../../../services/RealtimeModel.ts"
import * as ToolSchema from "../../../services/ToolSchema.ts"
import { ChatContext } from "../../../src/ChatContext.ts"
import { Agent, Tool } from "../../../src/index.ts"
import * as GeminiLiveMock from "../../mocks/gemini-live/index.ts"
import { schemaFault } from "../../mocks/gemini-live/setup.ts"
import * as OpenAIRealtimeMock from "../../mocks/openai-realtime/index.ts"

const target = Agent.make({ name: "target", instructions: "t" })
const noop = () => Effect.void

/** One tool of every shape. */
const tools = [
  Tool.handoff("transfer_to_target", () => target),
  Tool.make("no_params", { description: "none", handler: noop }),
  Tool.make("optional_fields", {
    description: "optional",
    parameters: Schema.Struct({ city: Schema.String, units: Schema.optional(Schema.Literals(["c", "f"])) }),
    handler: noop
  }),
  Tool.make("union_field", { description: "union", parameters: Schema.Struct({ id: Schema.Union([Schema.String, Schema.Number]) }), handler: noop }),
  Tool.make("nested", {
    description: "nested",
    parameters: Schema.Struct({ who: Schema.Struct({ name: Schema.String, age: Schema.Number }), tags: Schema.Array(Schema.String) }),
    handler: noop
  }),
  Tool.make("array_of_structs", {
    description: "lines",
    parameters: Schema.Struct({ lines: Schema.Array(Schema.Struct({ sku: Schema.String, quantity: Schema.Int })) }),
    handler: noop
  }),
  Tool.make("enum_field", { description: "enum", parameters: Schema.Struct({ size: Schema.Literals(["small", "medium", "large"]) }), handler: noop }),
  Tool.make("number_enum", { description: "rating", parameters: Schema.Struct({ stars: Schema.Literals([1, 2, 3]) }), handler: noop }),
  Tool.make("nullable_field", { description: "nullable", parameters: Schema.Struct({ note: Schema.NullOr(Schema.String), flag: Schema.Boolean }), handler: noop }),
  Tool.make("described", {
    description: "described",
    parameters: Schema.Struct({ date: Schema.String.annotate({ description: "ISO date" }) }),
    handler: noop
  })
]

/** What a realtime provider gets for each tool (as the realtime path builds it). */
const realtimeTools: ReadonlyArray<RealtimeTool> = tools.map((tool) => ({
  name: tool.name,
  description: tool.description,
  parameters: ToolSchema.parametersOf(tool.definition)
}))
const names = tools.map((t) => t.name)
const [firstHalf, secondHalf] = [realtimeTools.slice(0, 4), realtimeTools.slice(4)]

describe("every tool shape through the realtime mocks", () => {
  it.live("OpenAI Realtime accepts every tool at connect and in a session update", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ apiKey: "sk-test" })
      const model = OpenAiRealtime.make({ url: mock.url, apiKey: Redacted.make("sk-test") })
      const connection = yield* model.connect({ instructions: "i", tools: firstHalf, chatContext: ChatContext.empty })
      const server = yield* mock.awaitConnection(0)
      yield* (yield* connection.updateSession({ tools: realtimeTools })).await
      expect(server.session().tools.map((t) => t.name)).toEqual(names)
      expect(server.clientEvents().filter((e) => e.type === "session.update")).toHaveLength(2)
    }))

  it.live("OpenAI Realtime: the mock refuses a non-object schema as OpenAI does (the check is not vacuous)", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ apiKey: "sk-test" })
      const model = OpenAiRealtime.make({ url: mock.url, apiKey: Redacted.make("sk-test") })
      const connection = yield* model.connect({ instructions: "i", tools: firstHalf, chatContext: ChatContext.empty })
      const bad = { name: "bad", description: "b", parameters: { not: { type: "null" } } }
      const exit = yield* Effect.exit(Effect.flatMap(connection.updateSession({ tools: [bad] }), (ack) => ack.await))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain(`Invalid schema for function 'bad'`)
    }))

  it.live("Gemini Live accepts every tool in its setup (its schema subset, no parameters for a tool without any)", () =>
    Effect.gen(function*() {
      const mock = yield* GeminiLiveMock.make({ apiKey: "AIza-test" })
      const model = GeminiLive.make({ url: mock.url, apiKey: Redacted.make("AIza-test") })
      yield* model.connect({ instructions: "i", tools: [...firstHalf, ...secondHalf], chatContext: ChatContext.empty })
      const server = yield* mock.awaitConnection(0)
      const setup = server.clientMessages()[0]!.setup as { tools: Array<{ functionDeclarations: Array<{ name: string }> }> }
      expect(setup.tools[0]!.functionDeclarations.map((d) => d.name)).toEqual(names)
      // Accepted: connect waits for setupComplete, which a refused setup never gets (1007 instead).
      expect(server.setup()?.tools.map((d) => d.name)).toEqual(names)
      // Gemini takes only string enums: a number enum is said in the description.
      const stars = (server.setup()?.tools.find((d) => d.name === "number_enum") as any).parameters.properties.stars
      expect(stars).toEqual({ type: "NUMBER", description: "One of: 1, 2, 3." })
    }))

  it("Gemini Live: the mock refuses what Gemini refuses (unknown schema fields, an empty OBJECT, non-string enums)", () => {
    const at = "setup.tools[0].function_declarations[0].parameters"
    expect(schemaFault({ type: "OBJECT", properties: { x: { type: "STRING", const: "y" } } }, at)).toContain(`Unknown name "const"`)
    expect(schemaFault({ type: "OBJECT", properties: { x: { type: "OBJECT", properties: {} } } }, at)).toContain("should be non-empty for OBJECT type")
    expect(schemaFault({ type: "OBJECT", properties: { n: { type: "NUMBER", enum: [1, 2] } } }, at)).toContain("enum values must be strings")
    expect(schemaFault({ type: "OBJECT", properties: { x: { type: "STRING" } }, additionalProperties: false }, at)).toContain(`Unknown name "additionalProperties"`)
    expect(schemaFault({ type: "OBJECT", properties: { x: { type: "ARRAY", items: { type: "STRING" } } }, required: ["x"] }, at)).toBeUndefined()
  })
})
