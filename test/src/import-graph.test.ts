/**
 * No runtime import circle in src/: value imports form a graph without cycles. Type-only
 * imports may refer both ways (as between Effect's own modules); a value import that closes a
 * circle means a module's top level can run before another's it depends on.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const SRC = fileURLToPath(new URL("../../src", import.meta.url))

const files = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

/** The modules of src/ that `file` imports for their values (not only their types). */
const valueImports = (file: string): Array<string> => {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest)
  const out: Array<string> = []
  for (const statement of source.statements) {
    let specifier: ts.Expression | undefined
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause
      if (clause?.isTypeOnly) continue
      const named = clause?.namedBindings
      const onlyTypes = clause !== undefined && clause.name === undefined && named !== undefined && ts.isNamedImports(named) &&
        named.elements.every((element) => element.isTypeOnly)
      if (onlyTypes) continue
      specifier = statement.moduleSpecifier
    } else if (ts.isExportDeclaration(statement)) {
      if (statement.isTypeOnly) continue
      specifier = statement.moduleSpecifier
    }
    if (specifier && ts.isStringLiteral(specifier) && specifier.text.startsWith(".")) {
      const target = resolve(dirname(file), specifier.text)
      if (target.startsWith(SRC)) out.push(target)
    }
  }
  return out
}

/** Strongly connected components with more than one module (or a module importing itself). */
const cycles = (graph: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (v: string) => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const component: Array<string> = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      component.push(relative(SRC, w))
    } while (w !== v)
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component)
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return found
}

describe("src/ import graph", () => {
  it("has no runtime import circle (type-only imports may go both ways)", () => {
    const graph = new Map(files(SRC).map((file) => [file, valueImports(file)] as const))
    assert.isAbove(graph.size, 30)
    assert.deepStrictEqual(cycles(graph), [])
  })

  it("the runtime (src/internal) is imported for its values only by itself and the session's facade", () => {
    const INTERNAL = join(SRC, "internal")
    const reaching = files(SRC).filter((file) => !file.startsWith(INTERNAL)).flatMap((file) =>
      valueImports(file).some((target) => target.startsWith(INTERNAL)) ? [relative(SRC, file)] : []
    )
    assert.deepStrictEqual(reaching, ["AgentSession.ts"])
  })

  it("the check finds a circle when there is one", () => {
    const graph = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]])
    assert.deepStrictEqual(cycles(graph).map((c) => c.sort()), [["a", "b", "c"].map((n) => relative(SRC, n)).sort()])
  })
})
