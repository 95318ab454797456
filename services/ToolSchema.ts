/**
 * The JSON Schema of a tool's parameters as providers accept it. OpenAI (chat completions and
 * Realtime) and Gemini refuse a function whose `parameters` is not an object schema; effect's
 * JSON Schema of an empty `Schema.Struct({})` is `{"not":{"type":"null"}}` (any non-null value),
 * and an object schema may come without `properties`. Every layer sends parameters through here.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Tool as AiTool } from "effect/ai"

/**
 * A JSON Schema document.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonSchema = Record<string, unknown>

const EMPTY: JsonSchema = { type: "object", properties: {}, additionalProperties: false }

const isRecord = (value: unknown): value is JsonSchema => typeof value === "object" && value !== null && !Array.isArray(value)

/** `{"not":{"type":"null"}}`: what an empty struct becomes (anything but null). */
const isAnyButNull = (schema: JsonSchema) =>
  Object.keys(schema).length === 1 && isRecord(schema["not"]) && schema["not"]["type"] === "null" && Object.keys(schema["not"]).length === 1

/**
 * An object schema with `properties` for any parameters schema baton can produce; `undefined`
 * when the parameters are not an object at all (a union or a primitive at the top), which no
 * provider takes as a function's parameters.
 *
 * @since 0.1.0
 * @category utils
 */
export const normalize = (schema: unknown): JsonSchema | undefined => {
  if (!isRecord(schema) || Object.keys(schema).length === 0 || isAnyButNull(schema)) return EMPTY
  if (schema["type"] !== "object") return undefined
  return isRecord(schema["properties"]) ? schema : { ...schema, properties: {} }
}

/**
 * The provider-ready parameters of an `effect/ai` tool.
 *
 * @since 0.1.0
 * @category utils
 */
export const parametersOf = (tool: AiTool.Any): JsonSchema => {
  const schema = normalize(AiTool.getJsonSchema(tool))
  if (schema === undefined) {
    throw new Error(`tool "${tool.name}": its parameters must be an object schema (a Schema.Struct), got ${JSON.stringify(AiTool.getJsonSchema(tool))}`)
  }
  return schema
}
