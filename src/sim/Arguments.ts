/**
 * Arguments for a tool call, drawn from the JSON Schema the model sees (the tool's `definition`),
 * so the scripted model calls a user's tools as a real model would: mostly valid, now and then
 * not (rule 12: bad input gets an error output).
 */
import { Effect } from "effect"
import * as AiTool from "effect/ai/Tool"
import * as Tool from "../Tool.ts"
import type { Prng } from "./Prng.ts"

type Json = { readonly [key: string]: unknown }

const WORDS = ["Paris", "Tokyo", "42", "blue", "order-7", "", "yes", "Zoë", "a b c"]

const resolveRef = (schema: Json, root: Json): Json => {
  const ref = schema["$ref"]
  if (typeof ref !== "string" || !ref.startsWith("#/")) return schema
  let node: unknown = root
  for (const part of ref.slice(2).split("/")) node = (node as Json | undefined)?.[part]
  return typeof node === "object" && node !== null ? resolveRef(node as Json, root) : {}
}

/** A value the schema accepts (as far as its keywords say); depth-limited. */
export const valueOf = (rng: Prng, input: Json, root: Json = input, depth = 0): unknown => {
  const schema = resolveRef(input, root)
  if (Array.isArray(schema["enum"]) && schema["enum"].length > 0) return rng.pick(schema["enum"] as ReadonlyArray<unknown>)
  if ("const" in schema) return schema["const"]
  const union = (schema["anyOf"] ?? schema["oneOf"]) as ReadonlyArray<Json> | undefined
  if (Array.isArray(union) && union.length > 0) return valueOf(rng, rng.pick(union), root, depth + 1)
  if (Array.isArray(schema["allOf"]) && schema["allOf"].length > 0) return valueOf(rng, (schema["allOf"] as Array<Json>)[0]!, root, depth + 1)
  const type = Array.isArray(schema["type"]) ? rng.pick(schema["type"] as ReadonlyArray<string>) : schema["type"]
  switch (type) {
    case "object": {
      const properties = (schema["properties"] ?? {}) as Record<string, Json>
      const required = new Set((schema["required"] ?? []) as ReadonlyArray<string>)
      const out: Record<string, unknown> = {}
      for (const [key, property] of Object.entries(properties)) {
        if (required.has(key) || (depth < 3 && rng.chance(0.5))) out[key] = valueOf(rng, property, root, depth + 1)
      }
      return out
    }
    case "array": {
      const min = typeof schema["minItems"] === "number" ? schema["minItems"] : 0
      const max = Math.max(min, Math.min(typeof schema["maxItems"] === "number" ? schema["maxItems"] : 3, min + 3))
      const items = (schema["items"] ?? {}) as Json
      return depth > 4 ? [] : Array.from({ length: rng.int(min, max) }, () => valueOf(rng, items, root, depth + 1))
    }
    case "integer":
    case "number": {
      const min = typeof schema["minimum"] === "number" ? schema["minimum"] : -5
      const max = typeof schema["maximum"] === "number" ? schema["maximum"] : Math.max(min, 100)
      const n = rng.int(Math.ceil(min), Math.floor(max))
      return type === "number" && rng.chance(0.3) ? n + 0.5 : n
    }
    case "boolean":
      return rng.chance(0.5)
    case "null":
      return null
    case "string": {
      const word = rng.pick(WORDS)
      const min = typeof schema["minLength"] === "number" ? schema["minLength"] : 0
      return word.length >= min ? word : word.padEnd(min, "x")
    }
    default:
      return rng.pick(WORDS)
  }
}

/** Whether `args` (sent as JSON) decode with the tool's parameters. */
export const valid = (tool: Tool.Tool<unknown, unknown>, args: unknown): boolean =>
  Effect.runSync(Tool.decodeArguments(tool, typeof args === "string" ? args : JSON.stringify(args)).pipe(Effect.match({
    onFailure: () => false,
    onSuccess: () => true
  })))

/**
 * The arguments of one call: drawn from the schema (retried a few times until they decode), or,
 * now and then, bad ones (a wrong shape or text that is not JSON).
 */
export const argumentsFor = (rng: Prng, tool: Tool.Tool<unknown, unknown>): { readonly args: unknown; readonly bad: boolean } => {
  const roll = rng.next()
  if (roll < 0.04) return { args: "{not json", bad: true }
  if (roll < 0.1) {
    const wrong = { unexpected: [1, 2, 3] }
    return { args: wrong, bad: !valid(tool, wrong) }
  }
  const schema = AiTool.getJsonSchema(tool.definition) as Json
  let args = valueOf(rng, schema)
  for (let i = 0; i < 3 && !valid(tool, args); i++) args = valueOf(rng, schema)
  // A schema the walk above does not understand: the empty object, when the tool takes it.
  if (!valid(tool, args) && valid(tool, {})) args = {}
  return { args, bad: !valid(tool, args) }
}
