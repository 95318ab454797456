/**
 * What the model reads for a tool handler's value. Every value a handler can return becomes
 * text or a clear error, never an exception inside a batch (rule 4: a call whose value could
 * not be rendered would get no output at all):
 *
 * - a string is kept as it is; `undefined` and `null` read "done";
 * - numbers, booleans and BigInts read as their decimal text (a BigInt inside an object as a
 *   string, which JSON can hold);
 * - objects are JSON: a cycle reads "[Circular]", a `Map` as an object of its entries, a `Set`
 *   as an array, a function or symbol inside an object is left out (as JSON does);
 * - a function or a symbol as the value itself, or a `toJSON`/getter that throws, is an error
 *   output saying what the handler returned, so the model (and the developer reading the
 *   transcript) can act on it;
 * - text longer than `maxChars` is cut, with a marker saying how much was left out.
 */

/** The most characters of one output the model gets (about 4,000 tokens). */
export const defaultMaxChars = 16_000

export interface Rendered {
  readonly text: string
  /** The value could not be turned into text: `text` says why. */
  readonly isError: boolean
}

/** Renders `value`, returned by the tool `name`, for the model. Never throws. */
export const render = (name: string, value: unknown, maxChars: number = defaultMaxChars): Rendered => {
  switch (typeof value) {
    case "string":
      return { text: cap(value, maxChars), isError: false }
    case "undefined":
      return { text: "done", isError: false }
    case "number":
    case "boolean":
    case "bigint":
      return { text: String(value), isError: false }
    case "function":
      return refused(name, "a function")
    case "symbol":
      return refused(name, "a symbol")
  }
  if (value === null) return { text: "done", isError: false }
  try {
    return { text: cap(JSON.stringify(value, replacer()) ?? "done", maxChars), isError: false }
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return { text: cap(`${name} returned a value that could not be turned into text (${reason}).`, maxChars), isError: true }
  }
}

const refused = (name: string, what: string): Rendered => ({
  text: `${name} returned ${what}, which cannot be turned into text for the model; return a string, number or plain object.`,
  isError: true
})

/** A JSON replacer that holds what `JSON.stringify` throws on or loses. */
const replacer = () => {
  // The objects on the path from the root to the value being written: a cycle points back into it.
  const path: Array<unknown> = []
  return function(this: unknown, _key: string, value: unknown): unknown {
    if (typeof value === "bigint") return value.toString()
    if (typeof value !== "object" || value === null) return value
    // `this` is the object holding `value`: drop what is no longer on the path.
    while (path.length > 0 && path[path.length - 1] !== this) path.pop()
    if (path.includes(value)) return "[Circular]"
    path.push(value)
    const out = value instanceof Map
      ? Object.fromEntries([...value].map(([k, v]) => [String(k), v]))
      : value instanceof Set
      ? [...value]
      : value instanceof Error
      ? { name: value.name, message: value.message }
      : value
    // A converted value's children are written with it as their holder.
    if (out !== value) path.push(out)
    return out
  }
}

const cap = (text: string, maxChars: number): string =>
  text.length <= maxChars ? text : `${text.slice(0, maxChars)}… [cut: ${text.length - maxChars} more characters]`
