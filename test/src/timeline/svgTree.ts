/**
 * A strict little XML reader for the timeline's SVG in tests: elements with attributes,
 * children and text, and an error on any unbalanced or malformed tag (so a test also checks
 * the picture is a well-formed document). Not a general XML parser: no CDATA, no DTD.
 */
export interface Element {
  readonly name: string
  readonly attributes: Record<string, string>
  readonly children: Array<Element>
  text: string
}

const unescape = (text: string) =>
  text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, "\"").replace(/&amp;/g, "&")

const parseAttributes = (source: string): Record<string, string> => {
  const attributes: Record<string, string> = {}
  const rest = source.replace(/([a-zA-Z_:][-\w:.]*)="([^"]*)"/g, (_, key: string, value: string) => {
    if (key in attributes) throw new Error(`duplicate attribute ${key}`)
    attributes[key] = unescape(value)
    return ""
  })
  if (rest.trim() !== "") throw new Error(`malformed attributes: ${JSON.stringify(rest.trim())}`)
  return attributes
}

export const parse = (xml: string): Element => {
  const root: Element = { name: "#document", attributes: {}, children: [], text: "" }
  const stack: Array<Element> = [root]
  const tag = /<(\/?)([a-zA-Z][-\w:]*)((?:\s+[^>]*?)?)\s*(\/?)>|([^<]+)|(<)/g
  for (const match of xml.matchAll(tag)) {
    const [, close, name, attrs, selfClose, text, stray] = match
    const top = stack[stack.length - 1]!
    if (stray) throw new Error(`stray "<" at ${match.index}`)
    if (text !== undefined) {
      if (/[<>]/.test(text)) throw new Error(`unescaped text at ${match.index}`)
      top.text += unescape(text)
      continue
    }
    if (close) {
      if (top.name !== name) throw new Error(`</${name}> closes <${top.name}> at ${match.index}`)
      stack.pop()
      continue
    }
    const element: Element = { name: name!, attributes: parseAttributes(attrs ?? ""), children: [], text: "" }
    top.children.push(element)
    if (!selfClose) stack.push(element)
  }
  if (stack.length !== 1) throw new Error(`unclosed <${stack[stack.length - 1]!.name}>`)
  if (root.children.length !== 1) throw new Error("expected one root element")
  return root.children[0]!
}

/** Every element under `element` (depth first, document order) that matches. */
export const all = (element: Element, predicate: (e: Element) => boolean): Array<Element> => {
  const found: Array<Element> = []
  const walk = (e: Element) => {
    if (predicate(e)) found.push(e)
    e.children.forEach(walk)
  }
  walk(element)
  return found
}

/** Elements whose class list contains every class of `classes` ("bar tool"). */
export const byClass = (element: Element, classes: string) => {
  const wanted = classes.split(" ")
  return all(element, (e) => {
    const has = (e.attributes["class"] ?? "").split(" ")
    return wanted.every((c) => has.includes(c))
  })
}

/** The first `rect` child's x, and x + width. */
export const extent = (element: Element): { readonly x0: number; readonly x1: number } => {
  const rect = element.children.find((c) => c.name === "rect")
  if (!rect) throw new Error(`no rect in ${element.attributes["class"]}`)
  const x0 = Number(rect.attributes["x"])
  return { x0, x1: x0 + Number(rect.attributes["width"]) }
}

/** The text of every `text` element under `element`, joined. */
export const textOf = (element: Element) => all(element, (e) => e.name === "text").map((e) => e.text).join(" ")
